"""keeppeekctl: exit codes (0 ok, 1 failure, 2 usage), config check with FILE:LINE,
config show with secrets redacted, reload (and a refused reload of a broken file),
version, and a control socket that survives garbage."""
import json
import os
import signal
import socket
import subprocess
import time

from kp import KEEPPEEKCTL, WORKERS, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run

[web]
listen = 127.0.0.1:{port}

[camera "porch"]
url = rtsp://viewer:hunter2@127.0.0.1:1/stream
record = continuous

[camera "garage"]
url = baichuan://admin:${{KP_IT_SECRET}}@127.0.0.1:2/?channel=0
"""


def ctl(*args):
    env = dict(os.environ, KP_IT_SECRET="s3cr3t-value")
    r = subprocess.run([KEEPPEEKCTL, *args], capture_output=True, text=True, timeout=30, env=env)
    return r.returncode, r.stdout, r.stderr


def test(make):
    kp = make(config=CONFIG, env={"KP_IT_SECRET": "s3cr3t-value"})
    st = kp.wait_running()
    pids = {w: st[w]["pid"] for w in WORKERS}

    bad = os.path.join(kp.dir, "bad.conf")
    with open(bad, "w") as f:
        f.write("[web]\nlisten = 127.0.0.1:1\nx = 1\n")
    rc, out, err = ctl("config", "check", bad)
    check(rc == 1, f"config check of a file with an unknown key exits 1 ({rc})")
    check(f"{bad}:3: unknown key 'x' in [web]" in err, f"and names FILE:LINE: {err.strip()}")
    rc, out, err = ctl("config", "check", kp.config_path)
    check(rc == 0 and "ok" in out, f"config check of a good file exits 0: {out.strip()}")
    rc, out, err = ctl("config", "check", os.path.join(kp.dir, "missing.conf"))
    check(rc == 1 and "cannot open" in err, "config check of a missing file exits 1")

    check(ctl()[0] == 2, "no command: usage, exit 2")
    check(ctl("frobnicate")[0] == 2, "unknown command: exit 2")
    check(ctl("-s", kp.sock, "restart")[0] == 2, "restart without a worker: exit 2")
    check(ctl("config")[0] == 2, "config without a subcommand: exit 2")
    rc, out, err = ctl("-s", os.path.join(kp.dir, "nope.sock"), "status")
    check(rc == 1 and "cannot connect" in err, f"unreachable daemon: exit 1 ({err.strip()})")

    rc, out, err = kp.ctl("status")
    lines = out.strip().splitlines()
    check(rc == 0 and lines[0].split()[:3] == ["WORKER", "PID", "STATE"] and len(lines) == 7,
          "status prints a table with the four workers, the transcoder and tierd")
    check(lines[5].split()[:3] == ["transcoder", "0", "stopped"], f"the transcoder is stopped: {lines[5]}")
    check(lines[6].split()[:3] == ["tierd", "0", "stopped"], f"tierd is stopped without [tier]: {lines[6]}")
    rc, out, err = kp.ctl("tier", "status")
    check(rc == 0 and out.startswith("tiering: off (no [tier] endpoint") and "catalog: 0 recordings" in out,
          f"tier status without [tier]: {out.strip()}{err.strip()}")
    rc, out, err = kp.ctl("tier", "status", "--json")
    check(rc == 0 and json.loads(out).get("enabled") is False, f"tier status --json: {out.strip()}{err.strip()}")
    rc, out, err = kp.ctl("tier", "bogus")
    check(rc == 2 and "usage" in err, f"tier with an unknown verb: usage, exit 2 ({rc})")
    rc, out, err = kp.ctl("version")
    check(rc == 0 and "keeppeekctl 0.1.0" in out and "keeppeekd 0.1.0" in out, f"version: {out.strip()}")

    rc, out, err = kp.ctl("config", "show")
    check(rc == 0 and "[camera \"porch\"]" in out, "config show prints the running configuration")
    check("hunter2" not in out and "s3cr3t-value" not in out, "config show reveals no secret")
    check("rtsp://viewer:***@127.0.0.1:1/stream" in out and "${KP_IT_SECRET}" in out, "secrets are redacted")
    check("hunter2" not in kp.log_text() and "s3cr3t-value" not in kp.log_text(), "the log reveals no secret")

    rc, out, err = kp.ctl("reload")
    check(rc == 0 and "generation 2" in out, f"reload: {out.strip()}")
    check(wait_for(lambda: "reload to generation 2 complete" in kp.log_text(), 5.0), "every worker acknowledged")
    # A reload asked for while one is in progress is queued, not refused: recorderd is
    # stopped so that it cannot answer generation 3 before the second reload arrives.
    rec = kp.status()["recorderd"]["pid"]
    os.kill(rec, signal.SIGSTOP)
    try:
        rc1, out1, err1 = kp.ctl("reload")
        rc2, out2, err2 = kp.ctl("reload")
    finally:
        os.kill(rec, signal.SIGCONT)
    check(rc1 == 0 and "generation 3 sent" in out1, f"a reload while recorderd is stopped: {out1.strip()}{err1.strip()}")
    check(rc2 == 0 and "reload queued: it runs when generation 3 completes" in out2,
          f"a second reload is queued behind it: {out2.strip()}{err2.strip()}")
    check(wait_for(lambda: "reload to generation 4 complete" in kp.log_text(), 5.0),
          "the queued reload runs once the first completes")
    with open(kp.config_path) as f:
        good = f.read()
    with open(kp.config_path, "a") as f:
        f.write("[rtc]\nmax_transcodes = 3\n")
    rc, out, err = kp.ctl("reload")
    check(rc == 0 and "[rtc] takes effect when rtcd restarts: keeppeekctl restart rtcd" in out,
          f"a reload that changes [rtc] says when it takes effect: {out.strip()}{err.strip()}")
    with open(kp.config_path, "w") as f:
        f.write(good)
    check(wait_for(lambda: "reload to generation 5 complete" in kp.log_text(), 5.0), "that reload completes")
    with open(kp.config_path, "a") as f:
        f.write("[bogus]\nkey = 1\n")
    kp.proc.send_signal(signal.SIGHUP)
    check(wait_for(lambda: "reload refused" in kp.log_text(), 5.0), "SIGHUP with a broken file: reload refused")
    rc, out, err = kp.ctl("reload")
    check(rc == 1 and "unknown section [bogus]" in err, f"keeppeekctl reload shows why: {err.strip()[:120]}")
    st = kp.status()
    check(all(st[w]["pid"] == pids[w] and st[w]["state"] == "running" for w in WORKERS),
          "workers keep running on the old configuration")

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(kp.sock)
    s.sendall(b"\xff\xff\xff\xffgarbage")
    time.sleep(0.2)
    s.close()
    check(wait_for(lambda: "control client: closing: envelope length exceeds" in kp.log_text(), 3.0),
          "garbage on the control socket is logged with its reason")
    check(kp.ctl("status")[0] == 0, "the control socket still answers")


run(test)
