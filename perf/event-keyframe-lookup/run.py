#!/usr/bin/env python3
"""event-keyframe-lookup: event id + stream -> the exact encoded keyframe bytes, on a
catalog of >= 1 GiB (127 cameras x main+sub x 30 days with recordings, fragments,
keyframes, events, search terms and event->keyframe links) built by recorderd's own
catalog code, every recording a hard link to a per-camera copy of one of two committed
real recordings (fixtures/sub-h264.mp4, fixtures/sub-h265.mp4, written by recorderd).
The program is built by `ninja -C build` (perf/meson.build); --bin names another.

    python3 perf/event-keyframe-lookup/run.py --build build [--quick] [--keep]
    (or ninja -C build perf-event-keyframe-lookup)

ffprobe gives each fixture's keyframe samples (position, size, SHA-256 of the sample,
checked here against the file's bytes); the C program (bench.c, built by perf/meson.build
as event-keyframe-lookup-bench) builds the catalog under BUILD/perf/event-keyframe-lookup-work,
runs 10,000 exact checks, then measures resolve and read at concurrency 1, 8 and 32.
Writes BUILD/perf/event-keyframe-lookup.{json,md}; removes the catalog afterwards unless
--keep. Exit status 1 on any wrong byte, failed lookup, or a catalog under 1 GiB (not
with --quick). Method: docs/perf/METHODOLOGY.md."""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

NAME = "event-keyframe-lookup"
GIB = 1 << 30
CODECS = {"h264": 1, "hevc": 2}


def keyframes(path):
    """(codec, duration_ms, [(pts_ms, pos, size)]) of a fixture, from ffprobe, each sample
    checked against the file's bytes by its SHA-256."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_data_hash", "sha256",
                          "-show_packets", "-show_entries", "stream=codec_name:format=duration", "-of", "json",
                          path], capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    data = open(path, "rb").read()
    kfs = []
    for p in j["packets"]:
        if "K" not in p["flags"]:
            continue
        pos, size = int(p["pos"]), int(p["size"])
        want = p["data_hash"].split(":", 1)[1]
        if hashlib.sha256(data[pos:pos + size]).hexdigest() != want:
            raise SystemExit(f"{path}: ffprobe's keyframe at {pos} is not the file's bytes there")
        kfs.append((round(float(p["pts_time"]) * 1000), pos, size))
    return CODECS[j["streams"][0]["codec_name"]], round(float(j["format"]["duration"]) * 1000), kfs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--bin", help="event-keyframe-lookup-bench (default BUILD/perf/event-keyframe-lookup-bench)")
    ap.add_argument("--events", type=int, default=160, help="events per camera and day")
    ap.add_argument("--window", type=float, default=5.0, help="measured seconds per mode and concurrency")
    ap.add_argument("--checks", type=int, default=10000)
    ap.add_argument("--wait-quiet", type=float, default=30.0,
                    help="before each window, wait at most this long for a quiet second")
    ap.add_argument("--max-busy", type=float, default=0.5, help="cores busy that count as quiet")
    ap.add_argument("--max-other", type=float, default=0.25,
                    help="a window in which other processes used more cores than this is rerun")
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="20 events per camera-day, 2 s windows, no size floor")
    ap.add_argument("--keep", action="store_true", help="keep the catalog and recordings")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    if a.quick:
        a.events, a.window = 20, 2.0
    build = os.path.abspath(a.build)
    binary = a.bin or os.path.join(build, "perf", "event-keyframe-lookup-bench")
    outdir = os.path.join(build, "perf")
    work = os.path.join(outdir, NAME + "-work")
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    free = shutil.disk_usage(work).free
    if free < 3 * GIB:
        raise SystemExit(f"{work}: only {free / GIB:.1f} GiB free; the catalog takes about 1.3 GiB, keep 3 free")

    table = os.path.join(work, "fixtures.txt")
    fixtures = {}
    with open(table, "w") as t:
        for name in ("sub-h264.mp4", "sub-h265.mp4"):
            path = os.path.join(HERE, "fixtures", name)
            codec, dur, kfs = keyframes(path)
            fixtures[name] = {"codec": codec, "bytes": os.path.getsize(path), "duration_ms": dur,
                              "keyframes": [{"pts_ms": k[0], "pos": k[1], "size": k[2]} for k in kfs]}
            t.write(f"F {codec} {path} {dur} {len(kfs)}\n")
            for k in kfs:
                t.write(f"K {k[0]} {k[1]} {k[2]}\n")

    report = {"benchmark": NAME, "label": a.label, "machine": pc.machine(), "revision": pc.git_revision(a.source),
              "data_fs": pc.fs_type(work), "fixtures": fixtures, "window_s": a.window}
    load0, cpu0, t0 = pc.loadavg(), pc.cpu_jiffies(), time.monotonic()
    r = subprocess.run([binary, os.path.join(work, "data"), table, str(a.events), str(a.window), str(a.checks),
                        str(a.wait_quiet), str(a.max_busy), str(a.max_other), str(a.retries)],
                       capture_output=True, text=True)
    t1, cpu1, load1 = time.monotonic(), pc.cpu_jiffies(), pc.loadavg()
    hz = os.sysconf("SC_CLK_TCK")
    report.update({"load_before": load0, "load_after": load1, "elapsed_s": round(t1 - t0, 1),
                   "machine_busy_cpu_s": round((cpu1[0] - cpu0[0]) / hz, 1),
                   "steal_cpu_s": round((cpu1[1] - cpu0[1]) / hz, 1), "exit": r.returncode})
    failures = []
    try:
        res = json.loads(r.stdout)
    except json.JSONDecodeError:
        res = {}
        failures.append(f"bench exited {r.returncode}: " + " / ".join(r.stderr.strip().splitlines()[-2:]))
    report.update(res)
    if res:
        db = os.path.join(work, "data", "catalog", "data.mdb")
        report["catalog_file_bytes"] = os.path.getsize(db)
        if r.returncode != 0:
            failures.append(f"bench exited {r.returncode}: " + " / ".join(r.stderr.strip().splitlines()[-2:]))
        c = res["checks"]
        if c["wrong"] or c["errors"] or c["n"] != a.checks:
            failures.append(f"checks: {c['wrong']} wrong, {c['errors']} errors of {c['n']}: {c['first_failure']}")
        for p in res["phases"]:
            p["other_cpu_s"] = round(max(0.0, p["machine_busy_cpu_s"] - p["bench_cpu_s"]), 2)
            p["other_cores"] = round(p["other_cpu_s"] / p["seconds"], 2)
            p["contended"] = p["other_cores"] > a.max_other
            if p["errors"] or p["wrong"]:
                failures.append(f"{p['mode']} x{p['concurrency']}: {p['errors']} errors, {p['wrong']} wrong")
        if len(res["phases"]) != 6 and not failures:
            failures.append(f"{len(res['phases'])} of 6 phases measured")
        if res["catalog_bytes"] < GIB and not a.quick:
            failures.append(f"catalog is {res['catalog_bytes']:,} bytes, under 1 GiB")
    report["failures"] = failures
    if not a.keep:
        shutil.rmtree(work)

    md = [f"# {NAME}", "", pc.machine_md(report["machine"]) + f"; revision {report['revision']}", ""]
    if res:
        md += [f"Catalog: {res['cameras']} cameras, {res['streams']} streams, {res['days']} days, "
               f"{res['recordings']:,} recordings (hard links), {res['fragments']:,} fragments, "
               f"{res['events']:,} events; {res['catalog_bytes']:,} bytes in use "
               f"({res['catalog_bytes'] / GIB:.2f} GiB), built in {res['build_s']} s on {report['data_fs']}.",
               "", f"Checks: {res['checks']['n']:,} random events, {res['checks']['wrong']} wrong, "
               f"{res['checks']['errors']} errors, {res['checks']['bytes_compared']:,} bytes compared.", "",
               "| mode | conc | ops | ops/s | MiB/s | mean µs | p50 | p90 | p95 | p99 | p99.9 | max | errors "
               "| CPU µs/op | other cores | kept attempt |", "|" + " --- |" * 16]
        for p in res["phases"]:
            md.append(f"| {p['mode']} | {p['concurrency']} | {p['ops']:,} | {pc.fmt(p['ops_per_s'], 0)} | "
                      f"{pc.fmt(p['mib_per_s'])} | {pc.fmt(p['mean_us'])} | {pc.fmt(p['p50_us'])} | "
                      f"{pc.fmt(p['p90_us'])} | {pc.fmt(p['p95_us'])} | {pc.fmt(p['p99_us'])} | "
                      f"{pc.fmt(p['p999_us'])} | {pc.fmt(p['max_us'])} | {p['errors'] + p['wrong']} | "
                      f"{pc.fmt(p['cpu_us_per_op'])} | {p['other_cores']}{' (contended)' if p['contended'] else ''} | "
                      f"{p['attempt']} of {p['attempts']} |")
    md += ["", f"Latencies in µs, nearest rank; MiB/s counts the keyframe bytes located (resolve) or read "
           f"(read). Window {a.window} s per row after a 1 s warm-up; a row whose window had other processes "
           f"above {a.max_other} cores was rerun (at most {a.retries} times), the least contended attempt kept. "
           f"1-minute load average before {load0[0]}, after {load1[0]}.", "",
           "Failures: " + ("; ".join(failures) if failures else "none"), ""]
    jpath, mpath = pc.write_reports(outdir, NAME, report, "\n".join(md))
    print("\n".join(md))
    print(f"reports: {jpath} {mpath}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
