"""A malformed IPC frame (bad length, undecodable envelope, over the ceiling, wrong
sender) closes that link with a log line naming the reason; the supervisor re-links it;
no worker restarts. Garbage on a worker's supervisor channel gets that worker restarted
alone. The bytes are written into the real link with pidfd_getfd(2)."""
import os
import re
import struct
import time

from kp import WORKERS, check, run, steal_fd, wait_for


def link_gen(st, worker, peer):
    for l in st[worker]["links"]:
        if l["peer"] == peer:
            return l["generation"], l["state"]
    return None, None


def ingestd_end(kp, pid, generation):
    pat = re.compile(rf"keeppeek-ingestd\[{pid}\]: info: link to recorderd installed \(generation {generation}, fd (\d+)\)")
    m = wait_for(lambda: pat.search(kp.log_text()), 5.0)
    return int(m.group(1))


CASES = [
    ("bad length", struct.pack("<I", 0xFFFFFFF0), "envelope length exceeds the schema maximum"),
    ("undecodable", struct.pack("<I", 5) + bytes([0x82, 0x01, 0x20, 0x08, 0x01]), "envelope does not decode"),
    ("over the ceiling", struct.pack("<I", 9) + bytes([0x08, 0x80, 0x80, 0x80, 0x09, 0x7a, 0x02, 0x08, 0x02]),
     "raw tail exceeds the link ceiling"),
    ("wrong sender", struct.pack("<I", 3) + bytes([0x9a, 0x01, 0x00]), "message kind not accepted from this sender"),
    ("empty frame", struct.pack("<I", 0), "empty frame"),
]


def test(make):
    kp = make()
    st = kp.wait_running()
    pids = {w: st[w]["pid"] for w in WORKERS}
    for name, data, reason in CASES:
        gen, _ = link_gen(st, "recorderd", "ingestd")
        fd = steal_fd(pids["ingestd"], ingestd_end(kp, pids["ingestd"], gen))
        os.write(fd, data)
        os.close(fd)
        line = f"keeppeek-recorderd[{pids['recorderd']}]: warning: link to ingestd (generation {gen}) closed: {reason}"
        check(wait_for(lambda: line in kp.log_text(), 5.0), f"{name}: recorderd logs '{reason}'")

        def relinked():
            s = kp.status()
            g, state = link_gen(s, "recorderd", "ingestd")
            g2, state2 = link_gen(s, "ingestd", "recorderd")
            return s if g and g > gen and state == "up" and state2 == "up" else None
        st = wait_for(relinked, 5.0, 0.05)
        check(st is not None, f"{name}: the supervisor re-linked ingestd<->recorderd (generation > {gen})")
        check(all(st[w]["pid"] == pids[w] and st[w]["restarts"] == 0 for w in WORKERS),
              f"{name}: no worker restarted")
    check("relinking" in kp.log_text() or "re-linking" in kp.log_text(), "the supervisor logs each re-link")

    # An end that spoils every new link at once (a worker taken over): each re-link waits
    # longer, 100 ms, then 200, then 400 (KP_LINK_RELINK_MIN_MS doubling), instead of
    # keeppeekd handing over new generations as fast as they are lost.
    # The link lives past KP_LINK_STABLE_MS (1 s) first: its loss is re-linked at once.
    time.sleep(1.5)
    gen, _ = link_gen(kp.status(), "recorderd", "ingestd")
    before = len(kp.log_text())
    bad = struct.pack("<I", 0)
    for k in range(4):
        fd = steal_fd(pids["ingestd"], ingestd_end(kp, pids["ingestd"], gen))
        os.write(fd, bad)
        os.close(fd)
        gen += 1
    check(re.search(rf"\(generation {gen - 4}\) lost: [^\n]*; re-linking\n", kp.log_text()[before:]),
          "the loss of a link that lived past a second is re-linked at once")
    for delay in (100, 200, 400):
        pat = re.compile(rf"lost within \d+ ms of its making \(\d+ in a row\): re-linking in {delay} ms")
        check(wait_for(lambda: pat.search(kp.log_text()[before:]), 5.0),
              f"a link spoiled again at once is re-made after {delay} ms")
    st = wait_for(lambda: (lambda s: s if link_gen(s, "recorderd", "ingestd") == (gen, "up") else None)(kp.status()),
                  10.0, 0.05)
    check(st is not None, f"then it is up again, generation {gen}: one per loss, no more")
    check(all(st[w]["pid"] == pids[w] and st[w]["restarts"] == 0 for w in WORKERS), "no worker restarted")

    # Garbage on a worker's own channel (fd 3) reaches the supervisor.
    kp.expect_restarts("webd")  # garbage on its supervisor channel: restarted on purpose
    fd = steal_fd(pids["webd"], 3)
    os.write(fd, struct.pack("<I", 5) + bytes([0x82, 0x01, 0x20, 0x08, 0x01]))
    os.close(fd)
    line = f"webd (pid {pids['webd']}): channel closed: envelope does not decode"
    check(wait_for(lambda: line in kp.log_text(), 5.0), "supervisor logs the bad frame from webd's channel")
    st = wait_for(lambda: (lambda s: s if s and s["webd"]["pid"] != pids["webd"] and s["webd"]["state"] == "running"
                           else None)(kp.status()), 5.0)
    check(st is not None, "webd was restarted with a fresh channel")
    check(all(st[w]["pid"] == pids[w] for w in WORKERS if w != "webd"), "the other workers kept their pids")
    kp.wait_running()


run(test)
