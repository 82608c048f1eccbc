#!/usr/bin/env python3
"""server-start profile: where one start of keeppeekd through the first durable commit
spends its time (issue 16), from `strace -f -ttt` of the start, the runner's POST loop of
run.py (an envelope-only event on a new connection every 1 ms until acknowledged).

strace stops only at the syscalls named below (--seccomp-bpf), each a milestone:
keeppeekd's execve and its clone of each worker, the worker's execve, its first prctl
(PR_SET_PDEATHSIG: main() has begun, so execve -> prctl is the dynamic linker and
constructors), its seccomp/landlock calls (early filter, confinement), keeppeekd's
socketpair of the recorderd<->webd link, webd's first accepted connection and
recorderd's fdatasync/fsync/msync of the commit. strace's own stops lengthen what it
times; the figures here are a breakdown, run.py's are the measurement.

Reports: BUILD/perf/server-start-profile.{json,md}.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "external-analysis"))
sys.path.insert(0, HERE)
import perfcommon as pc  # noqa: E402
import evbench as eb  # noqa: E402
import run as ss  # noqa: E402  (server-start's runner: its launch and POST loop)

SYSCALLS = ("execve,clone,clone3,vfork,prctl,seccomp,landlock_create_ruleset,landlock_restrict_self,"
            "socketpair,accept4,fdatasync,fsync,msync,exit_group")
LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")

STEPS = [  # (key, description)
    ("keeppeekd_exec", "runner fork -> keeppeekd execve"),
    ("keeppeekd_main", "keeppeekd execve -> its first worker clone (linking, config, listen, dirs, auth)"),
    ("spawn_to_exec", "worker clone -> worker execve (slowest of webd, recorderd)"),
    ("link_load", "worker execve -> main() (dynamic linking; slowest)"),
    ("main_to_confined", "main() -> confined (early seccomp, config, Landlock, seccomp; slowest)"),
    ("confined_to_link", "last worker confined -> keeppeekd makes the recorderd<->webd link"),
    ("link_to_accept", "link made -> webd's first accepted connection"),
    ("accept_to_sync", "first accept -> recorderd's first fdatasync/fsync"),
    ("sync_to_ack", "recorderd's first sync -> runner has the acknowledgement"),
]


def parse(path, t0, t_ack):
    ev = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                ev.append((int(m.group(1)), float(m.group(2)), m.group(3)))
    names = {}
    for pid, t, call in ev:
        m = re.search(r"CLONE_THREAD.*= (\d+)$", call)
        if m and pid in names:  # a worker's thread: named after its process
            names[int(m.group(1))] = names[pid]
        elif call.startswith("execve(") and "keeppeek-" in call:
            names[pid] = re.search(r'keeppeek-(\w+)', call).group(1)
        elif call.startswith("execve(") and "keeppeekd" in call:
            names[pid] = "keeppeekd"
    sup = [p for p, n in names.items() if n == "keeppeekd"]
    mark = {}
    for pid, t, call in ev:
        n = names.get(pid, "?")
        key = None
        if call.startswith("execve("):
            key = f"{n}.exec"
        elif call.startswith("prctl(PR_SET_PDEATHSIG"):
            key = f"{n}.main"
        elif call.startswith("seccomp(") or call.startswith("prctl(PR_SET_SECCOMP"):
            key = f"{n}.seccomp"
        elif call.startswith("landlock_create_ruleset(") and "LANDLOCK_CREATE_RULESET_VERSION" not in call:
            key = f"{n}.landlock"
        elif call.startswith("landlock_restrict_self"):
            key = f"{n}.restricted"
        elif call.startswith(("clone(", "clone3(", "vfork(")) and n == "keeppeekd":
            key = "keeppeekd.clone"
        elif call.startswith("socketpair(") and n == "keeppeekd":
            key = "keeppeekd.socketpair"
        elif call.startswith("accept4(") and n == "webd" and not re.search(r"= -1", call):
            key = "webd.accept"
        elif call.startswith(("fdatasync(", "fsync(", "msync(")) and n == "recorderd":
            key = "recorderd.sync"
        if key:
            mark.setdefault(key, []).append(t)
    # keeppeekd's socketpairs: one per worker spawned (its channel) then one per link. The
    # recorderd<->webd link is the first made after both of them were confined.
    out = {"marks": {k: [round((x - t0) * 1000, 2) for x in v] for k, v in mark.items()}}

    def f(k, i=0):
        v = mark.get(k, [])
        return v[i] if len(v) > i else None

    def last(k):
        v = mark.get(k, [])
        return v[-1] if v else None
    first_clone = f("keeppeekd.clone")
    w = ("webd", "recorderd")
    execs = [f(f"{x}.exec") for x in w]
    mains = [f(f"{x}.main") for x in w]
    confined = [last(f"{x}.seccomp") for x in w]
    if None in execs + mains + confined or not sup:
        out["error"] = "milestones missing"
        return out
    t_conf = max(confined)
    sp = [x for x in mark.get("keeppeekd.socketpair", []) if x >= t_conf]
    t_link = sp[0] if sp else None
    t_acc = f("webd.accept")
    syncs = [x for x in mark.get("recorderd.sync", []) if t_acc and x >= t_acc]
    t_sync = syncs[0] if syncs else None
    d = {
        "keeppeekd_exec": f("keeppeekd.exec") - t0,
        "keeppeekd_main": first_clone - f("keeppeekd.exec"),
        "spawn_to_exec": max(execs) - first_clone,
        "link_load": max(m - e for m, e in zip(mains, execs)),
        "main_to_confined": max(c - m for c, m in zip(confined, mains)),
        "confined_to_link": (t_link - t_conf) if t_link else None,
        "link_to_accept": (t_acc - t_link) if t_acc and t_link else None,
        "accept_to_sync": (t_sync - t_acc) if t_sync and t_acc else None,
        "sync_to_ack": (t_ack - t_sync) if t_sync else None,
        "total": t_ack - t_0 if (t_0 := t0) else None,
    }
    for x in w:
        d[f"{x}_link_load"] = f(f"{x}.main") - f(f"{x}.exec")
        d[f"{x}_main_to_confined"] = last(f"{x}.seccomp") - f(f"{x}.main")
        ll = f(f"{x}.landlock")
        d[f"{x}_confine_landlock_to_seccomp"] = (last(f"{x}.seccomp") - ll) if ll else None
    out["steps_ms"] = {k: (round(v * 1000, 2) if v is not None else None) for k, v in d.items()}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--keeppeekd", help="keeppeekd of another build (its own workers), e.g. the baseline's; "
                    "the test cameras stay --build's")
    ap.add_argument("--all-syscalls", action="store_true",
                    help="trace every syscall (slower; to read one start, not for the figures)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    os.environ["KP_BUILD_ROOT"] = a.build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402
    report = {"benchmark": "server-start-profile", "machine": pc.machine(), "revision": pc.git_revision(a.source),
              "build": a.build, "keeppeekd": a.keeppeekd, "starts": [], "failures": [], "load_before": pc.loadavg()}
    work = tempfile.mkdtemp(prefix="kp-perf-prof-")
    wrapper = os.path.join(work, "keeppeekd-strace")
    with open(wrapper, "w") as fw:
        trace = "" if a.all_syscalls else f"--seccomp-bpf -e trace={SYSCALLS}"
        fw.write(f'#!/bin/sh\nexec strace -f -ttt {trace} -o "$KP_STRACE_OUT" '
                 f'{a.keeppeekd or os.path.join(a.build, "supervisor", "keeppeekd")} "$@"\n')
    os.chmod(wrapper, 0o755)
    cams = [kp.TestCamera(work, "cam264", "h264", "baichuan", "aes"),
            kp.TestCamera(work, "cam265", "h265", "baichuan", "aes")]
    k = kp.Keeppeek(config=eb.camera_config(cams))
    try:
        k.wait_running(timeout=30)
        token = eb.api_token(k)
        for i in range(a.starts):
            k.stop()
            out = os.path.join(work, f"trace-{i + 1}")
            os.environ["KP_STRACE_OUT"] = out
            tw = time.time()
            t0 = ss.launch(k, wrapper, False, "")
            t1, _, outcomes = ss.post_until_commit(k.port, token, f"prof-{i + 1}", 30.0)
            if t1 is None:
                report["failures"].append(f"start {i + 1}: no commit: {outcomes}")
                break
            t_ack = tw + (t1 - t0)
            k.wait_running(timeout=30)
            time.sleep(0.3)
            r = parse(out, tw, t_ack)
            r["trace"] = out
            r["ms_runner"] = round((t1 - t0) * 1000, 2)
            r["failed_attempts"] = outcomes
            report["starts"].append(r)
    finally:
        k.cleanup()
        for c in cams:
            c.kill()
    report["load_after"] = pc.loadavg()
    keys = [s for s, _ in STEPS] + ["webd_link_load", "recorderd_link_load", "webd_main_to_confined",
                                     "recorderd_main_to_confined", "webd_confine_landlock_to_seccomp",
                                     "recorderd_confine_landlock_to_seccomp"]
    report["summary"] = {k2: pc.summary([s["steps_ms"][k2] for s in report["starts"]
                                         if s.get("steps_ms", {}).get(k2) is not None]) for k2 in keys}
    report["summary"]["total_runner"] = pc.summary([s["ms_runner"] for s in report["starts"]])
    md = ["# server-start profile (strace)", "",
          f"{report['revision']}; load average before {report['load_before']} after {report['load_after']}", "",
          "| step | p50 ms | p95 ms | max ms |", "| --- | ---: | ---: | ---: |"]
    desc = dict(STEPS)
    for k2, v in report["summary"].items():
        md.append(f"| {desc.get(k2, k2)} | {pc.fmt(v.get('p50'))} | {pc.fmt(v.get('p95'))} | {pc.fmt(v.get('max'))} |")
    md += ["", "Result: " + ("PASS" if not report["failures"] else "FAIL: " + "; ".join(report["failures"]))]
    md = "\n".join(md)
    name = "server-start-profile" + ("-other" if a.keeppeekd else "")
    jpath, mpath = pc.write_reports(os.path.join(a.build, "perf"), name, report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
