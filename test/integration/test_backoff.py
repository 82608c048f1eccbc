"""A worker that dies at once on every start is retried with growing backoff, not in a
tight loop, the others keep running, and status says so."""
import os
import time

from kp import BUILD, WORKERS, check, run, wait_for


def test(make):
    import tempfile
    libexec = tempfile.mkdtemp(prefix="kp-libexec-")
    for w in WORKERS:
        path = os.path.join(libexec, f"keeppeek-{w}")
        if w == "rtcd":
            with open(path, "w") as f:
                f.write("#!/bin/sh\necho 'keeppeek-rtcd: failing on purpose' >&2\nexit 1\n")
            os.chmod(path, 0o755)
        else:
            os.symlink(os.path.join(BUILD, w, f"keeppeek-{w}"), path)
    kp = make(args=["--libexec-dir", libexec])
    kp.expect_restarts("rtcd")
    # rtcd starts once webd and recorderd run (proc_def.first): count from its first failure.
    first = wait_for(lambda: (s := kp.status()) and s["rtcd"]["restarts"] >= 1 and s, 30, 0.02)
    check(first, "rtcd was started and failed")
    time.sleep(4.0)
    st = kp.status()
    r = st["rtcd"]
    n = r["restarts"] - first["rtcd"]["restarts"]
    check(2 <= n <= 7, f"rtcd retried a handful of times in 4 s, not in a tight loop ({n})")
    check(r["consecutive_failures"] >= 3, f"status counts consecutive failures ({r['consecutive_failures']})")
    check(r["state"] in ("backoff", "starting"), f"rtcd state is {r['state']}")
    check(r["last_exit"] == "exited with status 1", f"rtcd last exit: {r['last_exit']}")
    for w in ("ingestd", "recorderd", "webd"):
        check(st[w]["state"] == "running" and st[w]["restarts"] == 0, f"{w} keeps running")
    waits = []
    for _ in range(40):
        s = kp.status()["rtcd"]
        if s["state"] == "backoff":
            waits.append(s["backoff_ms"])
        time.sleep(0.1)
    check(max(waits) > 1000, f"the backoff has grown past 1 s ({max(waits)} ms)")
    rc, out, _ = kp.ctl("status")
    check(rc == 0 and "backoff(" in out, "keeppeekctl status shows the backoff")
    log = kp.log_text()
    check("rtcd: restarting in" in log, "the log says when rtcd will be retried")

    # A worker program that is not there at all: keeppeekd keeps retrying (it once
    # aborted on the second failed spawn) and the other workers run on.
    os.unlink(os.path.join(libexec, "keeppeek-rtcd"))
    kp2 = make(args=["--libexec-dir", libexec])
    kp2.expect_restarts("rtcd")
    # Until rtcd failed to start twice and the others run (sanitized workers start
    # slower: wait_for stretches with KP_TEST_TIME_SCALE).
    wait_for(lambda: (s := kp2.status()) and s["rtcd"]["consecutive_failures"] >= 2 and
             all(s[w]["state"] == "running" for w in ("ingestd", "recorderd", "webd")), 30, 0.1)
    check(kp2.proc.poll() is None, f"keeppeekd still runs after repeated failed starts (exit {kp2.proc.poll()})")
    st = kp2.status()
    check(st and "cannot start" in st["rtcd"]["last_exit"] and st["rtcd"]["consecutive_failures"] >= 2,
          f"status says rtcd cannot be started ({st and st['rtcd']})")
    for w in ("ingestd", "recorderd", "webd"):
        check(st[w]["state"] == "running" and st[w]["restarts"] == 0, f"{w} keeps running beside it")


run(test)
