"""Each worker its own uid where the package made one: with users NAME, NAME-ingestd,
NAME-webd, NAME-rtcd, NAME-transcoder and NAME-tierd present ([keeppeek] user = NAME),
recorderd runs as NAME (it owns data_dir) and every other worker as its own user, in its
own group, on every thread, the transcoder too once started (keeppeekctl restart starts it
when it is not running) and tierd, started because [tier] names a store (one that never
answers: tierd connects only when it has a recording to copy); every thread of every
worker has no_new_privs and a seccomp filter; the control socket belongs to NAME's group. Without them (every other test) all
workers share the configured user. The users are made for this test and removed after."""
import os
import pwd
import subprocess
import sys
import uuid

from kp import ON_DEMAND, WORKERS, check, proc_status, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
user = %s
[web]
listen = 127.0.0.1:{port}
[tier]
endpoint = http://127.0.0.1:9
bucket = keeppeek
access_key = AK
secret = ${{KP_TEST_TIER_SECRET}}
"""


def test(make):
    base = "kpt" + uuid.uuid4().hex[:6]
    names = [base] + [f"{base}-{w}" for w in ("ingestd", "webd", "rtcd", "transcoder", "tierd")]
    made = []
    try:
        for n in names:
            r = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                                "/usr/sbin/nologin", n], capture_output=True, text=True)
            check(r.returncode == 0, f"useradd {n} ({r.stderr.strip()})")
            made.append(n)
        kp = make(config=CONFIG % base, env={"KP_TEST_TIER_SECRET": "not-a-real-secret"})
        st = kp.wait_running()
        want = {"recorderd": base, "ingestd": f"{base}-ingestd", "webd": f"{base}-webd", "rtcd": f"{base}-rtcd",
                "transcoder": f"{base}-transcoder", "tierd": f"{base}-tierd"}
        check(st["transcoder"]["pid"] == 0 and st["transcoder"]["state"] == "stopped",
              f"no transcoder runs while rtcd has no job ({st['transcoder']})")
        rc, out, err = kp.ctl("restart", "transcoder")
        check(rc == 0 and "starting transcoder" in out, f"keeppeekctl restart starts the transcoder ({out}{err})")
        st = wait_for(lambda: (s := kp.status())["transcoder"]["state"] == "running" and
                      s["tierd"]["state"] == "running" and s, 10, 0.05)
        check(st, "the transcoder and tierd run")
        uids = {}
        for w in WORKERS + ON_DEMAND:
            pid = st[w]["pid"]
            u = pwd.getpwnam(want[w])
            for t in os.listdir(f"/proc/{pid}/task"):
                s = proc_status(f"{pid}/task/{t}")
                check(s["Uid"].split() == [str(u.pw_uid)] * 4 and s["Gid"].split() == [str(u.pw_gid)] * 4,
                      f"{w} thread {t} runs as {want[w]} ({s['Uid']} / {s['Gid']})")
                check(s["NoNewPrivs"] == "1" and s["Seccomp"] == "2",
                      f"{w} thread {t} is confined (NoNewPrivs {s['NoNewPrivs']}, Seccomp {s['Seccomp']})")
            uids[w] = u.pw_uid
        check(len(set(uids.values())) == 6, f"six workers, six uids ({uids})")
        check(os.stat(os.path.join(kp.dir, "data")).st_uid == pwd.getpwnam(base).pw_uid,
              "data_dir belongs to recorderd's user")
        sock = os.stat(kp.sock)
        check(sock.st_gid == pwd.getpwnam(base).pw_gid and sock.st_mode & 0o777 == 0o660,
              f"the control socket is group {base}, 0660")
        kp.stop()
    finally:
        for n in reversed(made):
            subprocess.run(["userdel", n], capture_output=True)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root to create users")
        sys.exit(77)
    run(test)
