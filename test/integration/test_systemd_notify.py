"""keeppeekd speaks sd_notify(3) on $NOTIFY_SOCKET, as under Type=notify.

The test binds the datagram socket a service manager would (an abstract name, then a
path) and starts the real keeppeekd with NOTIFY_SOCKET naming it. READY=1 is the first
message, and the moment it arrives `keeppeekctl status` already answers with webd and
recorderd (the first durable commit's path) running and linked to each other, and /healthz
answers; ingestd and rtcd start after them (keeppeekd(8), START). A reload through keeppeekctl (what ExecReload runs)
is bracketed by RELOADING=1 (with MONOTONIC_USEC) and READY=1; a reload of a broken file
exits 1 with the errors and sends nothing. SIGTERM sends STOPPING=1. The workers do not
inherit NOTIFY_SOCKET. No worker restarts.

As root, keeppeekd is also started without CAP_KILL (setpriv --bounding-set -kill): a
`keeppeekctl restart` then fails with exit 1 naming CAP_KILL, keeppeekd logs it, and the
worker is left running, not restarted."""
import os
import shutil
import socket
import stat
import tempfile
import time

import kp
from kp import WORKERS, check, run

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def recv(sock, timeout):
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        return None


def fields(msg):
    return dict(l.split("=", 1) for l in msg.splitlines() if "=" in l)


FIRST = ("webd", "recorderd")


def commit_path_up(st):
    return st is not None and all(
        st[w]["state"] == "running" and all(l["state"] == "up" for l in st[w]["links"] if l["peer"] in FIRST)
        for w in FIRST)


def notify_run(make, sock, address):
    k = make(config=CONFIG, env={"NOTIFY_SOCKET": address})
    msg = recv(sock, 30.0)
    st = k.status()  # at once, before anything else
    check(msg is not None and fields(msg).get("READY") == "1", f"{address}: the first message is READY=1: {msg!r}")
    check(commit_path_up(st), f"{address}: when READY=1 arrives, keeppeekctl status shows webd and recorderd "
          f"running and linked: {[(w, st[w]['state'], [l['state'] for l in st[w]['links']]) for w in WORKERS] if st else st}")
    status, _, _ = k.http("GET", "/healthz")
    check(status in (200, 503), f"{address}: at READY=1 webd answers /healthz ({status}; 503 while ingestd or rtcd start)")
    check("STATUS" in fields(msg), f"{address}: READY=1 comes with a STATUS line: {msg!r}")
    k.wait_running(timeout=30)
    st = k.status()
    for w in WORKERS:
        with open(f"/proc/{st[w]['pid']}/environ", "rb") as f:
            env = f.read().split(b"\0")
        check(not any(e.startswith(b"NOTIFY_SOCKET=") for e in env), f"{w} does not inherit NOTIFY_SOCKET")
    return k, st


def test(make):
    # Abstract socket (what systemd uses since v250 is a path; both must work).
    a = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"kp-notify-{os.getpid()}-{time.monotonic_ns()}"
    a.bind("\0" + name)
    k, st = notify_run(make, a, "@" + name)
    pids = {w: st[w]["pid"] for w in WORKERS}

    rc, out, err = k.ctl("reload")
    check(rc == 0 and "generation 2" in out, f"keeppeekctl reload: {out.strip()}{err.strip()}")
    m1, m2 = recv(a, 10.0), recv(a, 10.0)
    f1 = fields(m1 or "")
    check(f1.get("RELOADING") == "1" and f1.get("MONOTONIC_USEC", "").isdigit(),
          f"a reload starts with RELOADING=1 and MONOTONIC_USEC: {m1!r}")
    check(m2 is not None and fields(m2).get("READY") == "1", f"and ends with READY=1: {m2!r}")
    check("reload to generation 2 complete" in k.log_text(), "READY=1 after every worker acknowledged the reload")

    with open(k.config_path) as f:
        good = f.read()
    with open(k.config_path, "a") as f:
        f.write("[bogus]\nkey = 1\n")
    rc, out, err = k.ctl("reload")
    check(rc == 1 and "unknown section [bogus]" in err, f"reload of a broken file exits 1 with why: {err.strip()[:100]}")
    check(recv(a, 1.0) is None, "a refused reload sends nothing")
    with open(k.config_path, "w") as f:
        f.write(good)

    st = k.status()
    check(all(st[w]["restarts"] == 0 and st[w]["pid"] == pids[w] for w in WORKERS),
          f"no worker restarted: {[(w, st[w]['restarts']) for w in WORKERS]}")
    check(k.stop() is not None, "SIGTERM stops everything")
    m = recv(a, 5.0)
    check(m is not None and fields(m).get("STOPPING") == "1", f"SIGTERM sends STOPPING=1: {m!r}")
    a.close()

    # A socket path, as systemd gives (/run/systemd/notify).
    d = tempfile.mkdtemp(prefix="kp-notify-")
    try:
        path = os.path.join(d, "notify")
        p = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        p.bind(path)
        k, st = notify_run(make, p, path)
        check(all(st[w]["restarts"] == 0 for w in WORKERS), "no worker restarted")
        k.stop()
        m = recv(p, 5.0)
        check(m is not None and fields(m).get("STOPPING") == "1", f"path socket: STOPPING=1: {m!r}")
        p.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)

    # Without CAP_KILL (what CapabilityBoundingSet must keep).
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        print("skip the CAP_KILL part: needs root and setpriv(1)")
        return
    d = tempfile.mkdtemp(prefix="kp-nokill-")
    os.chmod(d, 0o755)
    wrapper = os.path.join(d, "keeppeekd")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec {setpriv} --bounding-set -kill -- {kp.KEEPPEEKD} \"$@\"\n")
    os.chmod(wrapper, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    real = kp.KEEPPEEKD
    kp.KEEPPEEKD = wrapper
    try:
        k = make(config=CONFIG)
    finally:
        kp.KEEPPEEKD = real
    try:
        st = k.wait_running()
        with open(f"/proc/{k.proc.pid}/status") as f:
            capbnd = int(next(l for l in f if l.startswith("CapBnd:")).split()[1], 16)
        check(not capbnd & (1 << 5), f"keeppeekd runs without CAP_KILL (CapBnd {capbnd:x})")
        rc, out, err = k.ctl("restart", "webd")
        check(rc == 1 and "CAP_KILL" in err, f"restart without CAP_KILL exits 1 and names it: {err.strip()}")
        log = k.log_text()
        check("webd" in log and "lacks CAP_KILL" in log and "Operation not permitted" in log,
              "keeppeekd's log says it cannot signal webd and why")
        time.sleep(1.0)
        st2 = k.status()
        check(all(st2[w]["restarts"] == 0 and st2[w]["pid"] == st[w]["pid"] and st2[w]["state"] == "running"
                  for w in WORKERS), "no worker restarted or stopped; webd keeps running")
        check(k.stop() is not None, "keeppeekd still stops (Shutdown over each channel needs no signal)")
    finally:
        shutil.rmtree(d, ignore_errors=True)


run(test)
