#!/usr/bin/env python3
"""tier-store: tiering's upload throughput and playback's ranged read latency with tierd's
S3 client against a real Ceph RADOS Gateway, each against local disk in the same run
(issue 22, decision 0027).

    python3 perf/tier-store/run.py --build build [--quick] [--runs 10] [--warmup 2]
        [--reads 50] [--long-runs 3] [--dir /tmp]

Makes recordings with recorderd's own fMP4 writer (perf/fmp4-writer's program, the
1920x1080 H.264 fixture looped: a 1-minute file and a 10-minute one, the recorder's
default rollover), starts a one-node Ceph cluster with radosgw on loopback
(test/integration/ceph_rgw.py), and runs BUILD/perf/tier-store-bench (perf/tier-store/
bench.c, linked with tierd's S3 library) twice: the 1-minute file uploaded as one PUT and
as multipart with 8 and 16 MiB parts, the 10-minute file (past one PUT's 64 MiB) as
multipart only, and the 1-minute file again with radosgw's tcp_nodelay=1; each against writing + fsync'ing the same bytes to a local file, every
object read back whole and compared; then ranged reads (the init segment, 64 KiB, 256 KiB
and 2 MiB at random offsets) with Range GETs against pread of a local copy after
posix_fadvise(DONTNEED); last, a ranged GET with the OSD stopped (SIGSTOP: a stalled OSD
holds the request without an error), ended by the client's own timeout, with its defaults
and with a 3 s one, then the same GET once the OSD runs again. Prints nearest-rank p50/p95, writes BUILD/perf/tier-store.
{json,md} with the machine, its load average sampled every second and whole-machine CPU
over the run. Exit status 1 when a check fails (a byte differing, a count short, the
local cache not dropped). Method: docs/perf/METHODOLOGY.md."""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

FPS = 25


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def make_recording(writer, fixture, seconds, path, scratch):
    """recorderd's writer (fmp4-writer-bench's own path) on the looped fixture."""
    lavf = os.path.join(scratch, "lavf-discard.mp4")
    r = subprocess.run([writer, "--input", fixture, "--frames", str(seconds * FPS), "--runs", "1", "--warmup", "0",
                        "--out-own", path, "--out-lavf", lavf], capture_output=True, text=True)
    if os.path.exists(lavf):
        os.unlink(lavf)
    if r.returncode != 0:
        raise SystemExit(f"tier-store: {writer} failed making {path}: {r.stderr.strip()[-500:]}")
    p = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                        "stream=codec_name,width,height,nb_read_packets", "-of", "json", path],
                       capture_output=True, text=True)
    info = json.loads(p.stdout)["streams"][0] if p.returncode == 0 and p.stdout.strip() else {}
    return {"path": path, "seconds": seconds, "bytes": os.path.getsize(path), "ffprobe_errors": p.stderr.strip(),
            "codec": info.get("codec_name"), "width": info.get("width"), "height": info.get("height"),
            "packets": int(info.get("nb_read_packets", 0))}


def run_bench(bench, rgw, args, label):
    env = dict(os.environ, KP_S3_ENDPOINT=rgw.endpoint, KP_S3_BUCKET=rgw.bucket, KP_S3_ACCESS_KEY=rgw.access_key,
               KP_S3_SECRET=rgw.secret)
    daemons = {n: p.pid for n, p in rgw.procs.items()}
    cpu0 = {n: proc_cpu_s(pid) for n, pid in daemons.items()}
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run([bench] + args, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu1 = {n: proc_cpu_s(pid) for n, pid in daemons.items()}
    if r.returncode != 0:
        return None, f"{label}: tier-store-bench exited {r.returncode}: {r.stderr.strip()[-1500:]}"
    doc = json.loads(r.stdout)
    doc["wall_s"] = round(wall, 1)
    doc["cpu_s"] = {"bench": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 2),
                    **{n: round(cpu1[n] - cpu0[n], 2) for n in daemons
                       if cpu0.get(n) is not None and cpu1.get(n) is not None}}
    doc["args"] = args
    return doc, None


def rgw_nodelay(rgw):
    """radosgw started again with beast's tcp_nodelay=1 (off by default: a small answer's
    body then waits on Nagle for the client's delayed ACK)."""
    with open(rgw.conf) as f:
        text = f.read()
    line = next(x for x in text.splitlines() if x.startswith("rgw_frontends = "))
    with open(rgw.conf, "w") as f:
        f.write(text.replace(line, line + " tcp_nodelay=1"))
    rgw.kill("rgw", signal.SIGTERM)
    rgw.start("rgw")


def stalled_reads(rgw, probe, key, local_path, scratch, failures):
    """A ranged GET (256 KiB, as playback reads a fragment) with the OSD stopped (SIGSTOP):
    a stalled OSD holds the request without an error, so what ends it is the client's own
    timeout. Once with the client's defaults (the low-speed floor: under 1 KiB/s for 10 s),
    once with a 3 s whole-request timeout; then SIGCONT and the same GET must succeed with
    the file's bytes."""
    env = dict(os.environ, KP_S3_ENDPOINT=rgw.endpoint, KP_S3_BUCKET=rgw.bucket, KP_S3_ACCESS_KEY=rgw.access_key,
               KP_S3_SECRET=rgw.secret)
    off, n = 1 << 20, 256 << 10
    got = os.path.join(scratch, "stalled-get.bin")
    with open(local_path, "rb") as f:
        f.seek(off)
        want = f.read(n)
    out = []
    osd = rgw.procs["osd"]
    for label, extra in (("client defaults", {}), ("KP_S3_TIMEOUT_MS=3000", {"KP_S3_TIMEOUT_MS": "3000"})):
        os.kill(osd.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            r = subprocess.run([probe, "get", key, str(off), str(n), got], capture_output=True, text=True,
                               env=dict(env, **extra), timeout=180)
            took = time.monotonic() - t0
        finally:
            os.kill(osd.pid, signal.SIGCONT)
        line = (r.stdout.strip().splitlines() or [""])[-1]
        out.append({"settings": label, "seconds": round(took, 2), "result": line})
        if r.returncode == 0 or "ETIMEDOUT" not in line:
            failures.append(f"stalled OSD, {label}: expected ETIMEDOUT, got rc {r.returncode}: {line}")
    t0 = time.monotonic()
    r = subprocess.run([probe, "get", key, str(off), str(n), got], capture_output=True, text=True, env=env,
                       timeout=180)
    took = time.monotonic() - t0
    same = r.returncode == 0 and open(got, "rb").read() == want
    out.append({"settings": "after SIGCONT", "seconds": round(took, 2),
                "result": (r.stdout.strip().splitlines() or [""])[-1], "bytes_equal": same})
    if not same:
        failures.append(f"after the stalled OSD ran again, the GET failed or differed: {r.stdout.strip()[-200:]}")
    return out


def mb_s(nbytes, ms):
    return nbytes / 1e6 / (ms / 1000.0) if ms > 0 else None


def analyse(doc, rec, failures, label):
    """Statistics of one bench run, and the checks that it did the work."""
    size = doc["file_bytes"]
    if size != rec["bytes"]:
        failures.append(f"{label}: the bench read {size} bytes, the file has {rec['bytes']}")
    modes = []
    for u in doc["uploads"]:
        if u["mode"] not in modes:
            modes.append(u["mode"])
    rounds = doc["runs"] + doc["warmup"]
    if len(doc["uploads"]) != rounds * len(modes):
        failures.append(f"{label}: {len(doc['uploads'])} uploads, expected {rounds * len(modes)}")
    up = {}
    for m in modes:
        rows = [u for u in doc["uploads"] if u["mode"] == m and not u["warmup"]]
        ms = [u["upload_ms"] for u in rows]
        gms = [u["get_ms"] for u in rows]
        cpu_per_mb = [u["upload_cpu_ms"] / (size / 1e6) for u in rows]
        up[m] = {"part_bytes": rows[0]["part"] if rows else 0, "upload_ms": pc.summary(ms), "get_ms": pc.summary(gms),
                 "upload_mb_s_at_p50": mb_s(size, pc.nearest_rank(ms, 50)),
                 "upload_mb_s_at_p95": mb_s(size, pc.nearest_rank(ms, 95)),
                 "get_mb_s_at_p50": mb_s(size, pc.nearest_rank(gms, 50)),
                 "get_mb_s_at_p95": mb_s(size, pc.nearest_rank(gms, 95)),
                 "upload_cpu_ms_per_mb": pc.summary(cpu_per_mb),
                 "get_cpu_ms": pc.summary([u["get_cpu_ms"] for u in rows])}
        if len(rows) != doc["runs"]:
            failures.append(f"{label}/{m}: {len(rows)} measured uploads, expected {doc['runs']}")
    reads = {}
    resident = 0
    for rd in doc["reads"]:
        k = "init" if rd["kind"] == "init" else f"{rd['bytes'] // 1024} KiB"
        e = reads.setdefault(k, {"bytes": rd["bytes"], "s3": [], "local": []})
        e["s3"].append(rd["s3_ms"])
        e["local"].append(rd["local_ms"])
        resident += rd["resident_pages"]
    read_stats = {k: {"bytes": e["bytes"], "n": len(e["s3"]), "s3_ms": pc.summary(e["s3"]),
                      "local_ms": pc.summary(e["local"])} for k, e in reads.items()}
    if resident:
        failures.append(f"{label}: {resident} pages of the local copy were still cached after DONTNEED")
    expected = (doc["runs"] + doc["warmup"]) * len(modes) * size + 2 * sum(rd["bytes"] for rd in doc["reads"])
    if doc["bytes_compared"] != expected or doc["mismatches"] != 0:
        failures.append(f"{label}: compared {doc['bytes_compared']} bytes, expected {expected}, "
                        f"mismatches {doc['mismatches']}")
    return {"file": rec, "modes": up, "reads": read_stats, "resident_pages_after_dontneed": resident,
            "objects": doc["objects"], "bytes_compared": doc["bytes_compared"], "wall_s": doc["wall_s"],
            "cpu_s": doc["cpu_s"], "args": doc["args"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (fixtures, programs, reports)")
    ap.add_argument("--source", default=SRC, help="source tree")
    ap.add_argument("--bin", help="tier-store-bench (default BUILD/perf/tier-store-bench)")
    ap.add_argument("--writer", help="fmp4-writer-bench (default BUILD/perf/fmp4-writer-bench)")
    ap.add_argument("--probe", help="tier-s3-probe (default BUILD/tierd/tier-s3-probe)")
    ap.add_argument("--no-stall", dest="stall", action="store_false",
                    help="skip the ranged GETs with the OSD stopped (SIGSTOP)")
    ap.add_argument("--runs", type=int, default=15, help="measured uploads per mode, 1-minute file")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reads", type=int, default=50, help="ranged reads per size (and of the init segment)")
    ap.add_argument("--long-runs", type=int, default=3, help="measured uploads per mode, 10-minute file (0: skip)")
    ap.add_argument("--no-nodelay-set", dest="nodelay_set", action="store_false",
                    help="skip the last set: the 1-minute file again with radosgw's beast tcp_nodelay=1")
    ap.add_argument("--quick", action="store_true", help="3 runs, 1 warm-up, 15 reads, no 10-minute file")
    ap.add_argument("--dir", default="/tmp", help="where the local files and the Ceph cluster go (a disk, not tmpfs)")
    ap.add_argument("--camera-mbit", type=float, default=2.58,
                    help="one camera's recorded Mbit/s (main + sub), to say how many cameras one upload stream "
                         "keeps up with (default: ingest-record at N = 64, 165.3 Mbit/s / 64)")
    ap.add_argument("--wait-quiet", type=float, default=60.0,
                    help="before starting, wait at most this long for the machine to be idle")
    ap.add_argument("--max-other", type=float, default=0.5, help="busy cores that count as idle")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.warmup, a.reads, a.long_runs = 3, 1, 15, 0
    build = os.path.abspath(a.build)
    bench = a.bin or os.path.join(build, "perf", "tier-store-bench")
    writer = a.writer or os.path.join(build, "perf", "fmp4-writer-bench")
    probe = a.probe or os.path.join(build, "tierd", "tier-s3-probe")
    fixture = os.path.join(build, "test", "fixtures", "main.h264")
    for p in (bench, writer, fixture, probe):
        if not os.path.exists(p):
            raise SystemExit(f"tier-store: {p} missing: run `ninja -C {a.build}` first")
    sys.path.insert(0, os.path.join(a.source, "test", "integration"))
    import ceph_rgw  # noqa: E402
    missing = ceph_rgw.missing()
    if missing:
        raise SystemExit(f"tier-store: Ceph programs missing: {', '.join(missing)} (scripts/install-deps)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: stopping the Ceph daemons"))

    failures = []
    report = {"benchmark": "tier-store", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "dir_fs": pc.fs_type(a.dir), "nice": os.nice(0),
              "params": {"runs": a.runs, "warmup": a.warmup, "reads": a.reads, "long_runs": a.long_runs,
                         "camera_mbit": a.camera_mbit}}
    cores, waited = pc.wait_quiet(a.wait_quiet, a.max_other)
    report["quiet_check"] = {"busy_cores": cores, "waited_s": waited, "quiet": cores <= a.max_other}
    report["load_before"] = pc.loadavg()
    window = pc.Window()
    with tempfile.TemporaryDirectory(prefix="kp-tier-store-", dir=a.dir) as d:
        local = os.path.join(d, "local")
        os.makedirs(local)
        recs = [make_recording(writer, fixture, 60, os.path.join(d, "rec-60s.mp4"), d)]
        if a.long_runs:
            recs.append(make_recording(writer, fixture, 600, os.path.join(d, "rec-600s.mp4"), d))
        for rec in recs:
            if rec["ffprobe_errors"] or rec["packets"] != rec["seconds"] * FPS:
                failures.append(f"{rec['path']}: ffprobe: {rec['packets']} packets, {rec['ffprobe_errors'][:200]}")
        base = os.path.join(d, "ceph")
        os.makedirs(base)
        t0 = time.monotonic()
        with ceph_rgw.CephRgw(base, bucket="tier-store") as rgw:
            report["ceph_up_s"] = round(time.monotonic() - t0, 1)
            ver = subprocess.run(["ceph", "--version"], capture_output=True, text=True).stdout.strip()
            report["ceph"] = ver
            print(f"tier-store: Ceph up in {report['ceph_up_s']} s ({ver})", flush=True)
            report["sets"] = []
            plans = [("1 min", recs[0], ["--runs", str(a.runs), "--warmup", str(a.warmup)], False)]
            if a.long_runs:
                plans.append(("10 min", recs[1], ["--no-put", "--runs", str(a.long_runs), "--warmup", "1"], False))
            if a.nodelay_set:
                plans.append(("1 min, radosgw tcp_nodelay=1", recs[0],
                              ["--runs", str(a.runs), "--warmup", str(a.warmup)], True))
            for i, (label, rec, extra, nodelay) in enumerate(plans):
                if nodelay:
                    rgw_nodelay(rgw)
                args = ["--file", rec["path"], "--local-dir", local, "--prefix", f"cam1/main/set{i}",
                        "--reads", str(a.reads)] + extra
                print(f"tier-store: {label} file, {rec['bytes']:,} bytes: {' '.join(extra)}", flush=True)
                doc, err = run_bench(bench, rgw, args, label)
                if err:
                    failures.append(err)
                    print(rgw.log_tail("rgw", 1500), file=sys.stderr)
                    break
                s = analyse(doc, rec, failures, label)
                s["label"] = label
                report["sets"].append(s)
            if a.stall and report["sets"]:
                print("tier-store: ranged GETs with the OSD stopped", flush=True)
                report["stalled_osd"] = stalled_reads(rgw, probe, "cam1/main/set0/r000-put.mp4", recs[0]["path"],
                                                      d, failures)
    window.finish(report)
    report["failures"] = failures
    md = markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(build, "perf"), "tier-store", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


def markdown(rep):
    f = pc.fmt
    ld = rep["load_during"]
    lines = [f"# tier-store ({rep['label']})", "",
             f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}. {rep.get('ceph', '')}, "
             f"one mon + one bluestore OSD (8 GiB sparse file) + radosgw on loopback, data on {rep['dir_fs']}; "
             f"nice {rep['nice']}.",
             f"Load average (1 min): {f(rep['load_before'][0])} before, {f(rep['load_after'][0])} after, "
             f"p50 {f(ld.get('p50'))} / max {f(ld.get('max'))} sampled every second over {f(rep['window_s'], 0)} s; "
             f"whole machine busy {f(rep['machine_busy_cores'])} cores of {rep['machine']['nproc']} "
             f"(steal {f(rep['steal_cores'])}), of them this run with its Ceph daemons {f(rep.get('own_cores'))} "
             f"and **other work {f(rep.get('other_cores'))} cores**. Quiet check before: {f(rep['quiet_check']['busy_cores'])} busy "
             f"cores after {f(rep['quiet_check']['waited_s'], 0)} s of waiting"
             f"{'' if rep['quiet_check']['quiet'] else ' (not quiet)'}. Ceph up in {f(rep.get('ceph_up_s'), 1)} s.", ""]
    def cams(mbs):
        return mbs * 8 / rep["params"]["camera_mbit"] if mbs else None

    for s in rep.get("sets", []):
        rec = s["file"]
        mbit = rec["bytes"] * 8 / 1e6 / rec["seconds"]
        lines += [f"## {s['label']} recording: {rec['bytes']:,} bytes ({rec['width']}x{rec['height']} "
                  f"{rec['codec']}, {rec['packets']:,} frames, {f(mbit)} Mbit/s)", "",
                  "Upload (local = write + fsync of a new file) and read-back of the whole object "
                  "(local = pread after DONTNEED); MB/s = 10^6 bytes/s at the p50 / p95 time.", "",
                  f"Cameras kept up with = upload MB/s / one camera's {f(rep['params']['camera_mbit'])} Mbit/s "
                  "(main + sub); client CPU = the benchmark process's CPU time per MB uploaded (SHA-256, MD5, "
                  "libcurl), the store's not included.", "",
                  "| mode | upload ms p50 / p95 | upload MB/s at p50 / p95 | cameras kept up with at p50 / p95 "
                  "| client CPU ms per MB p50 / p95 | whole read ms p50 / p95 | whole read MB/s at p50 / p95 |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for m, u in s["modes"].items():
            lines.append(f"| {m} | {f(u['upload_ms']['p50'], 1)} / {f(u['upload_ms']['p95'], 1)} "
                         f"| {f(u['upload_mb_s_at_p50'], 1)} / {f(u['upload_mb_s_at_p95'], 1)} "
                         f"| {f(cams(u['upload_mb_s_at_p50']), 0)} / {f(cams(u['upload_mb_s_at_p95']), 0)} "
                         f"| {f(u['upload_cpu_ms_per_mb']['p50'], 1)} / {f(u['upload_cpu_ms_per_mb']['p95'], 1)} "
                         f"| {f(u['get_ms']['p50'], 1)} / {f(u['get_ms']['p95'], 1)} "
                         f"| {f(u['get_mb_s_at_p50'], 1)} / {f(u['get_mb_s_at_p95'], 1)} |")
        lines += ["", "Ranged reads (Range GET of a random object among those uploaded, against pread of a "
                  "local copy after posix_fadvise(DONTNEED)):", "",
                  "| read | n | store ms p50 / p95 | local ms p50 / p95 | store / local at p50 |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for k, e in s["reads"].items():
            ratio = e["s3_ms"]["p50"] / e["local_ms"]["p50"] if e["local_ms"]["p50"] else None
            lines.append(f"| {k} ({e['bytes']:,} B) | {e['n']} | {f(e['s3_ms']['p50'])} / {f(e['s3_ms']['p95'])} "
                         f"| {f(e['local_ms']['p50'])} / {f(e['local_ms']['p95'])} | {f(ratio, 1)}x |")
        cpu = ", ".join(f"{k} {f(v)}" for k, v in s["cpu_s"].items())
        lines += ["", f"{s['objects']} objects; {s['bytes_compared']:,} bytes compared with the file, none "
                  f"differing; local pages still cached after DONTNEED: {s['resident_pages_after_dontneed']}; "
                  f"{f(s['wall_s'], 1)} s; CPU s: {cpu}.", ""]
    if rep.get("stalled_osd"):
        lines += ["## A stalled OSD (SIGSTOP) under a ranged GET of 256 KiB", "",
                  "| client settings | ended after s | result |", "| --- | ---: | --- |"]
        for x in rep["stalled_osd"]:
            lines.append(f"| {x['settings']} | {f(x['seconds'])} | {x['result']}"
                         f"{'' if 'bytes_equal' not in x else (', bytes equal' if x['bytes_equal'] else ', DIFFER')} |")
        lines.append("")
    if rep["failures"]:
        lines += ["## Failures", ""] + [f"* {x}" for x in rep["failures"]] + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
