"""kill -9 of any one worker: a new pid for it in `running` after the first backoff step
(KP_BACKOFF_INITIAL_MS, no "restarting in" warning; how long it takes to be running is
perf/'s to measure, not this test's), restarts incremented, the other three pids unchanged and links re-made; `keeppeekctl restart`
does the same on request."""
import os
import signal
import time

from kp import WORKERS, check, run, wait_for


def test(make):
    kp = make()
    kp.expect_restarts(*WORKERS)
    st = kp.wait_running()
    for victim in WORKERS:
        before = {w: st[w]["pid"] for w in WORKERS}
        before_restarts = {w: st[w]["restarts"] for w in WORKERS}
        restarts = st[victim]["restarts"]
        t0 = time.monotonic()
        os.kill(before[victim], signal.SIGKILL)

        def back():
            s = kp.status()
            v = s and s[victim]
            return s if v and v["state"] == "running" and v["pid"] not in (0, before[victim]) else None
        st = wait_for(back, 10.0, 0.01)
        elapsed = time.monotonic() - t0
        check(st is not None, f"{victim} is back after kill -9 ({elapsed:.3f} s)")
        check(f"{victim}: restarting in" not in kp.log_text(),
              f"{victim} was restarted after the first backoff step, not a longer one")
        check(st[victim]["restarts"] == restarts + 1, f"{victim} restarts went {restarts} -> {st[victim]['restarts']}")
        check(st[victim]["last_exit"].startswith("killed by signal 9"), f"{victim} last exit: {st[victim]['last_exit']}")
        for w in WORKERS:
            if w != victim:
                check(st[w]["pid"] == before[w], f"{w} kept pid {before[w]}")
                check(st[w]["restarts"] == before_restarts[w], f"{w} was not restarted")
        st = kp.wait_running()
    before = {w: st[w]["pid"] for w in WORKERS}
    rc, out, err = kp.ctl("restart", "webd")
    check(rc == 0 and "restarting webd" in out, f"keeppeekctl restart webd: {rc} {out} {err}")
    st = wait_for(lambda: (lambda s: s if s and s["webd"]["pid"] not in (0, before["webd"])
                           and s["webd"]["state"] == "running" else None)(kp.status()), 3.0)
    check(st is not None, "webd has a new pid after keeppeekctl restart")
    check(all(st[w]["pid"] == before[w] for w in WORKERS if w != "webd"), "the others kept their pids")
    rc, out, err = kp.ctl("restart", "nosuch")
    check(rc == 2 and "unknown worker" in err, f"restart of an unknown worker is a usage error ({rc})")


run(test)
