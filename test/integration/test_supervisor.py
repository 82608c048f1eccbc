"""keeppeekd starts four confined workers with distinct pids (and, in demo mode, two
simulated cameras), and SIGTERM leaves no KeepPeek process behind within 5 s."""
import os
import pwd
import signal
import tempfile

from kp import ON_DEMAND, WORKERS, alive, check, proc_status, run, wait_for


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def test(make):
    leak = tempfile.NamedTemporaryFile(prefix="kp-inherited-")
    os.set_inheritable(leak.fileno(), True)  # a descriptor the launching shell left open
    kp = make(pass_fds=(leak.fileno(),))
    st = kp.wait_running()
    pids = [st[w]["pid"] for w in WORKERS]
    check(sorted(st) == sorted(WORKERS + ON_DEMAND), f"status lists the four workers and the transcoder: {sorted(st)}")
    check(st["transcoder"]["state"] == "stopped" and st["transcoder"]["pid"] == 0,
          f"the transcoder does not run while nobody needs it: {st['transcoder']}")
    check(len(set(pids)) == 4 and all(p > 0 for p in pids), f"four distinct pids: {pids}")
    for w in WORKERS:
        s = proc_status(st[w]["pid"])
        uids = s["Uid"].split()
        if os.geteuid() == 0:
            check(all(u != "0" for u in uids), f"{w} runs with a non-zero uid: {s['Uid']}")
        check(s["NoNewPrivs"] == "1", f"{w} has NoNewPrivs 1")
        check(s["Seccomp"] == "2", f"{w} has Seccomp 2 (filter)")
        tasks = os.listdir(f"/proc/{st[w]['pid']}/task")
        bad = [(t, ts.get("NoNewPrivs"), ts.get("Seccomp"), ts.get("Uid")) for t in tasks
               if (ts := proc_status(f"{st[w]['pid']}/task/{t}")) and
               (ts.get("NoNewPrivs") != "1" or ts.get("Seccomp") != "2" or ts.get("Uid") != s["Uid"])]
        check(not bad, f"{w}: every one of its {len(tasks)} threads is confined like it (unconfined: {bad})")
        check(st[w]["rss_bytes"] > 0, f"{w} reports its RSS ({st[w]['rss_bytes']} bytes)")
        check(all(l["state"] == "up" for l in st[w]["links"] if l["peer"] not in ON_DEMAND),
              f"{w}: every peer link is up (the transcoder's only while it runs)")
        fds = {os.readlink(f"/proc/{st[w]['pid']}/fd/{fd}") for fd in os.listdir(f"/proc/{st[w]['pid']}/fd")}
        check(leak.name not in fds, f"{w} did not inherit keeppeekd's stray descriptor")
    mode = os.stat(kp.sock).st_mode & 0o777
    dedicated = os.geteuid() != 0 or user_exists("keeppeek")
    want = 0o660 if dedicated else 0o600  # the nobody fallback's nogroup is shared: root only
    check(mode == want, f"control socket mode is {oct(want)} ({oct(mode)})")
    kids = kp.descendants()
    check(len(kids) >= 6, f"keeppeekd has its four workers and the two demo cameras below it ({len(kids)})")
    cams = [p for p in kids if "keeppeek-test-camera" in open(f"/proc/{p}/cmdline").read()]
    check(len(cams) == 2, f"two demo cameras run ({cams})")
    elapsed = kp.stop()
    check(elapsed is not None and elapsed < 5.0, f"SIGTERM: every KeepPeek process gone within 5 s ({elapsed})")
    check(kp.proc.returncode == 0, f"keeppeekd exits 0 after SIGTERM ({kp.proc.returncode})")

    # kill -9 of keeppeekd: its workers and demo cameras do not outlive it.
    kp2 = make()
    kp2.wait_running()
    kids = kp2.descendants()
    os.kill(kp2.proc.pid, signal.SIGKILL)
    kp2.proc.wait()
    gone = wait_for(lambda: not any(alive(p) for p in kids), 5)
    check(gone, f"after kill -9 of keeppeekd nothing it started runs on ({[p for p in kids if alive(p)]})")


run(test)
