#!/usr/bin/env python3
"""server-start sched: where the wall time of a start goes between running and waiting
for a CPU (issue 16). For each start (keeppeekd of --build, and of --base-build when
given, interleaved) `perf sched record -a -k CLOCK_MONOTONIC` runs from before the
launch to the acknowledgement of run.py's POST loop (an envelope-only event on a new
connection every 1 ms until acknowledged, i.e. until its durable commit); `perf sched
timehist` then gives every task's run slices and their scheduling delay (runnable, not
running). Summed over the window from the launch to the acknowledgement, per start:

* KeepPeek run: CPU ms of keeppeekd and its workers (and keeppeekd's children before
  their exec), summed over them; KeepPeek sch delay: ms they were runnable and waited
  for a CPU, summed the same way (several wait at once);
* runner run: the POST loop's own CPU ms; others run: CPU ms of every other task
  (other engineers' builds and tests, the two test cameras), against a capacity of 2 x
  the window on 2 CPUs;
* keeppeekd's own minor page faults and CPU ms (/proc/PID/stat, schedstat) at the acknowledgement:
  a fork makes the parent's pages copy-on-write, and its next writes fault.

perf's own tracing lengthens what it measures; run.py's figures are the measurement.
Reports: BUILD/perf/server-start-sched.{json,md}.
"""
import argparse
import os
import re
import signal
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

LINE = re.compile(r"^\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def classify(comm, pid, runner_pid, kp_pids):
    if comm.startswith("keeppeek-test"):  # the two test cameras, streaming throughout
        return "others"
    if comm.startswith("keeppeek") or pid in kp_pids:
        return "keeppeek"
    if pid == runner_pid:
        return "runner"
    if comm.startswith("perf") or comm.startswith("<idle>") or comm.startswith("swapper"):
        return None
    return "others"


def account(path, t0, t1, runner_pid):
    out = subprocess.run(["perf", "sched", "timehist", "-i", path], capture_output=True, text=True).stdout
    tot = {"keeppeek_run": 0.0, "keeppeek_delay": 0.0, "runner_run": 0.0, "others_run": 0.0}
    kp_pids = set()
    rows = []
    first = None
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t, comm = float(m.group(1)), m.group(3).strip()
        pid = int(m.group(5) or m.group(4))
        delay, run = float(m.group(7)), float(m.group(8))
        rows.append((t, comm, pid, delay, run))
        first = t if first is None else first
        if comm.startswith("keeppeek") and not comm.startswith("keeppeek-test"):
            kp_pids.add(pid)
    for t, comm, pid, delay, run in rows:
        start = t - run / 1000.0
        lo, hi = max(start, t0), min(t, t1)
        if hi <= lo:
            continue
        cls = classify(comm, pid, runner_pid, kp_pids)
        if cls is None:
            continue
        tot[cls + "_run"] += (hi - lo) * 1000.0
        if cls == "keeppeek" and start >= t0:
            tot["keeppeek_delay"] += delay
    if first is None or first > t0:
        return None  # perf's record began after the launch: the window is not covered
    return {k: round(v, 2) for k, v in tot.items()}


def proc_stat(pid):
    """(minor faults, CPU ms) of pid: /proc/PID/stat minflt, /proc/PID/schedstat (ns)."""
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    with open(f"/proc/{pid}/schedstat") as f:
        ns = int(f.read().split()[0])
    return int(v[7]), round(ns / 1e6, 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--base-build", help="the baseline's build tree (its keeppeekd and workers)")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    os.environ["KP_BUILD_ROOT"] = a.build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402
    variants = [("new", os.path.join(a.build, "supervisor", "keeppeekd"))]
    if a.base_build:
        variants.insert(0, ("base", os.path.join(os.path.abspath(a.base_build), "supervisor", "keeppeekd")))
    report = {"benchmark": "server-start-sched", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "build": a.build, "base_build": a.base_build,
              "starts": {v: [] for v, _ in variants}, "failures": [], "load_before": pc.loadavg()}
    work = tempfile.mkdtemp(prefix="kp-perf-sched-")
    cams = [kp.TestCamera(work, "cam264", "h264", "baichuan", "aes"),
            kp.TestCamera(work, "cam265", "h265", "baichuan", "aes")]
    k = kp.Keeppeek(config=eb.camera_config(cams))
    try:
        k.wait_running(timeout=30)
        token = eb.api_token(k)
        for i in range(a.starts):
            for name, exe in variants:
                k.stop()
                data = os.path.join(work, f"sched-{name}-{i + 1}.data")
                rec = subprocess.Popen(["perf", "sched", "record", "-a", "-k", "CLOCK_MONOTONIC", "-o", data],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.5)  # perf's own start, longer on a busy machine (checked in account())
                t0 = ss.launch(k, exe, False, "")
                t1, _, outcomes = ss.post_until_commit(k.port, token, f"sched-{name}-{i + 1}", 30.0)
                faults, cpu = proc_stat(k.proc.pid)
                time.sleep(0.05)
                rec.send_signal(signal.SIGINT)
                rec.wait()
                if t1 is None:
                    report["failures"].append(f"{name} start {i + 1}: no commit: {outcomes}")
                    return 1
                r = account(data, t0, t1, os.getpid())
                if r is None or not r["keeppeek_run"]:
                    report["failures"].append(f"{name} start {i + 1}: perf's record does not cover the start")
                    k.wait_running(timeout=30)
                    continue
                r["ms"] = round((t1 - t0) * 1000.0, 2)
                r["keeppeekd_minflt"], r["keeppeekd_cpu_ms"] = faults, cpu
                report["starts"][name].append(r)
                os.unlink(data)
                k.wait_running(timeout=30)
    finally:
        k.cleanup()
        for c in cams:
            c.kill()
    report["load_after"] = pc.loadavg()
    keys = ["ms", "keeppeek_run", "keeppeek_delay", "runner_run", "others_run", "keeppeekd_minflt",
            "keeppeekd_cpu_ms"]
    report["summary"] = {v: {kk: pc.summary([s[kk] for s in st]) for kk in keys} for v, st in report["starts"].items()}
    md = [f"# server-start sched ({a.label})", "",
          f"{report['revision']}; load average before {report['load_before']} after {report['load_after']}; "
          f"{a.starts} starts per variant, interleaved, under `perf sched record -a`", "",
          "| variant | start → commit ms p50 / p95 | KeepPeek run ms p50 / p95 | KeepPeek waiting for a CPU ms "
          "p50 / p95 | runner run ms p50 / p95 | other tasks' CPU ms p50 / p95 | keeppeekd minor faults "
          "p50 / p95 | keeppeekd CPU ms p50 / p95 |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for v, sm in report["summary"].items():
        md.append(f"| {v} | " + " | ".join(f"{pc.fmt(sm[kk]['p50'])} / {pc.fmt(sm[kk]['p95'])}" for kk in keys) + " |")
    md += ["", "Per start (sorted by start → commit):", "",
           "| variant | ms | KeepPeek run | KeepPeek waiting | runner run | others run |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for v, st in report["starts"].items():
        for s in sorted(st, key=lambda x: x["ms"]):
            md.append(f"| {v} | {s['ms']} | {s['keeppeek_run']} | {s['keeppeek_delay']} | {s['runner_run']} | "
                      f"{s['others_run']} |")
    md = "\n".join(md) + "\n"
    jpath, mpath = pc.write_reports(os.path.join(a.build, "perf"), "server-start-sched", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
