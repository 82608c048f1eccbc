"""keeppeekd starts four confined workers with distinct pids (and, in demo mode, two
simulated cameras), and SIGTERM leaves no KeepPeek process behind within 5 s."""
import os

from kp import WORKERS, check, proc_status, run


def test(make):
    kp = make()
    st = kp.wait_running()
    pids = [st[w]["pid"] for w in WORKERS]
    check(sorted(st) == sorted(WORKERS), f"status lists the four workers: {sorted(st)}")
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
        check(all(l["state"] == "up" for l in st[w]["links"]), f"{w}: every peer link is up")
    mode = os.stat(kp.sock).st_mode & 0o777
    check(mode == 0o660, f"control socket mode is 0660 ({oct(mode)})")
    kids = kp.descendants()
    check(len(kids) >= 6, f"keeppeekd has its four workers and the two demo cameras below it ({len(kids)})")
    elapsed = kp.stop()
    check(elapsed is not None and elapsed < 5.0, f"SIGTERM: every KeepPeek process gone within 5 s ({elapsed})")
    check(kp.proc.returncode == 0, f"keeppeekd exits 0 after SIGTERM ({kp.proc.returncode})")


run(test)
