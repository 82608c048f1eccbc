"""The control socket's ceiling (KP_CONTROL_MAX_CLIENTS, 16 keeppeekctl connections at
once), one past it: with 16 connections held open the 17th is closed at once, keeppeekctl
says so and exits 1, keeppeek_control_refused_total{reason="busy"} counts it, and the 16
still get answers; one closed makes room again. No worker restarted."""
import socket
import subprocess
import time

from kp import KEEPPEEKCTL, check, metric, run, wait_for

MAX_CLIENTS = 16  # common/kp_limits.h KP_CONTROL_MAX_CLIENTS

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run

[web]
listen = 127.0.0.1:{port}
"""


def ctl_status(kp):
    return subprocess.run([KEEPPEEKCTL, "-s", kp.sock, "status"], capture_output=True, text=True, timeout=30)


def closed_at_once(s, timeout=5.0):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test(make):
    kp = make(config=CONFIG)
    kp.wait_running()
    token = kp.token()
    check(metric(kp, token, 'keeppeek_control_refused_total{reason="busy"}') == 0, "nothing refused at start")

    held = []
    for _ in range(MAX_CLIENTS):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(kp.sock)
        held.append(s)
    # keeppeekd accepts them in its loop: wait until the last one holds a slot (a 17th
    # is then refused, which the metric shows).
    time.sleep(0.5)
    extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    extra.connect(kp.sock)
    check(closed_at_once(extra), "the 17th connection is closed at once")
    extra.close()
    check(wait_for(lambda: metric(kp, token, 'keeppeek_control_refused_total{reason="busy"}') == 1, 5.0, 0.1),
          "keeppeek_control_refused_total{reason=\"busy\"} counts it")

    r = ctl_status(kp)
    print(f"keeppeekctl with 16 held: exit {r.returncode}, {r.stderr.strip()!r}")
    check(r.returncode == 1 and r.stderr.strip() != "", "keeppeekctl, one past the ceiling, fails with a message")
    check(wait_for(lambda: metric(kp, token, 'keeppeek_control_refused_total{reason="busy"}') == 2, 5.0, 0.1),
          "and is counted")
    check("control socket: refusing a client: 16 already connected" in kp.log_text(), "keeppeekd logs the refusal")
    for s in held:
        check(not closed_at_once(s, 0.05), "the 16 held connections stay open")

    held.pop().close()
    check(wait_for(lambda: ctl_status(kp).returncode == 0, 5.0, 0.1), "one closed makes room: keeppeekctl status works")
    for s in held:
        s.close()
    check(wait_for(lambda: ctl_status(kp).returncode == 0, 5.0, 0.1), "all closed: keeppeekctl status works")
    bad = kp.unexpected_restarts()
    check(not bad, f"no worker restarted ({bad})")


run(test)
