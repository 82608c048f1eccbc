#!/usr/bin/env python3
"""ingest-record: N simulated cameras x main+sub recorded by the real keeppeekd.

    python3 perf/ingest-record/run.py --build build [--quick] [--cameras 1,8,32,64]

For each N: starts N keeppeek-test-camera processes (Baichuan over TCP, AES; main
1920x1080 + sub 640x360 fixtures from BUILD/test/fixtures, H.264 and H.265 alternating
by default; with --replay one process per codec holding its N/2 cameras in replay mode,
the same bytes on the wire for a fraction of the CPU, decision 0026) and the real keeppeekd from the build tree recording all of them; waits until
every stream is streaming, lets it run for the warm-up (default 10 s, excluded), then
measures a fixed window (default 60 s; --quick: 20 s after 5 s): CPU seconds of each
process from /proc/PID/stat utime+stime deltas over the window (keeppeekd, ingestd,
recorderd, webd, rtcd; the test cameras are the baseline, the cost of producing the
streams, measured in the same run), RSS of each process sampled every 500 ms (nearest-rank
p50/p95), and counter deltas over the whole window (frames and bytes sent, received,
recorded, fragments and bytes written). Then it pauses the cameras and checks that the
work was done: every stream's recorded frames >= sent - 1, no gaps, rejections, drops,
reconnects or worker restarts; after keeppeekd stops, every file under
data_dir/recordings passes `ffprobe -v error` and holds exactly the frames recorderd
received, and the catalog holds every fragment written. Reports:
BUILD/perf/ingest-record.{json,md}. Exit status 1 when a check fails. Method:
docs/perf/METHODOLOGY.md."""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
KP_PROCS = ["keeppeekd", "ingestd", "recorderd", "webd", "rtcd"]

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def cpu_ticks(pid):
    """utime + stime of every thread of pid (clock ticks), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (FileNotFoundError, ProcessLookupError):
        return None


class Sampler(threading.Thread):
    """RSS of every pid every `period` seconds, on absolute deadlines (no drift)."""

    def __init__(self, pids, period=0.5):
        super().__init__(daemon=True)
        self.pids, self.period = pids, period
        self.samples = {name: [] for name in pids}
        self.stop_ev = threading.Event()
        self.late = 0

    def run(self):
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            for name, pid in self.pids.items():
                v = rss_bytes(pid)
                if v is not None:
                    self.samples[name].append(v)
            nxt += self.period
            d = nxt - time.monotonic()
            if d < 0:
                self.late += 1
                nxt = time.monotonic()
                continue
            self.stop_ev.wait(d)


def mib(summary):
    return {k: (v if k == "n" else round(v / 1048576, 2)) for k, v in summary.items()}


def flat_streams(cams_json):
    out = {}
    for cname, c in cams_json.items():
        for s in c["streams"]:
            out[(cname, s["name"])] = s
    return out


STREAM_COUNTERS = ["frames", "bytes", "recorded_frames", "recorded_bytes", "recorded_gaps", "send_rejected",
                   "reconnects"]
REC_COUNTERS = ["fragments", "bytes_written", "frames_dropped"]


def stream_counters(s):
    d = {k: s[k] for k in STREAM_COUNTERS}
    d.update({"rec_" + k: s["recording"][k] for k in REC_COUNTERS})
    return d


def probe_file(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                        "stream=codec_name,width,height,nb_read_packets", "-of", "json", path],
                       capture_output=True, text=True)
    info = {}
    if r.returncode == 0:
        st = json.loads(r.stdout).get("streams", [])
        info = st[0] if len(st) == 1 else {}
    return r.returncode, r.stderr.strip(), info


def catalog_entries(data_dir, db):
    r = subprocess.run(["mdb_stat", "-s", db, os.path.join(data_dir, "catalog")], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.strip().startswith("Entries:"):
            return int(line.split(":")[1])
    return None


HEALTH_PERIOD_S = 2.0  # KP_HEALTH_INTERVAL_MS: how often keeppeekctl's counters are refreshed
ALIGN_S = 0.4  # the CPU window starts and ends this long after a counter refresh


def total_frames(cams_json):
    return sum(s["frames"] for c in (cams_json or {}).values() for s in c["streams"])


def wait_update(kp, k, timeout=6.0, step=0.05):
    """Polls keeppeekctl until ingestd's counters change (they reach the supervisor with
    each health reply, every 2 s); returns (monotonic time it was seen, the cameras)."""
    base = total_frames(kp.cameras(k))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        c = kp.cameras(k)
        t = time.monotonic()
        if total_frames(c) != base:
            return t, c
        time.sleep(step)
    return None, None


def run_one(kp, n, args, fixtures_codecs):
    """One measured run with n cameras. Returns (result dict, list of failures)."""
    failures = []
    work = tempfile.mkdtemp(prefix=f"kp-perf-ir{n}-")
    cams, groups, k = [], [], None
    res = {"cameras": n, "codecs": {}, "encryption": args.encryption}
    try:
        res["quiet_check"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(args.wait_quiet, args.max_other)))
        res["camera_mode"] = "replay" if args.replay else "live"
        for i in range(n):
            codec = fixtures_codecs[i % len(fixtures_codecs)]
            res["codecs"][codec] = res["codecs"].get(codec, 0) + 1
        if args.replay:
            # One process per codec, its cameras in replay mode (keeppeek-test-camera --cameras N --replay).
            for j, codec in enumerate(fixtures_codecs):
                names = [f"cam{i:02d}" for i in range(j, n, len(fixtures_codecs))]
                if names:
                    groups.append(kp.TestCameraGroup(work, f"cams-{codec}", len(names), codec, args.encryption,
                                                     names=names))
                    cams += groups[-1].cameras
            cams.sort(key=lambda c: c.name)
        else:
            for i in range(n):
                codec = fixtures_codecs[i % len(fixtures_codecs)]
                cams.append(kp.TestCamera(work, f"cam{i:02d}", codec, "baichuan", args.encryption))
        config = CONFIG
        for c in cams:
            config += f'[camera "{c.name}"]\nurl = {c.url()}\n'
        k = kp.Keeppeek(config=config)
        res["data_fs"] = pc.fs_type(k.dir)
        st = k.wait_running(timeout=30)

        def all_streaming():
            c = kp.cameras(k)
            ok = c and len(c) == n and all(s["state"] == "streaming" for cc in c.values() for s in cc["streams"])
            return c if ok else None
        t_up = time.monotonic()
        if not kp.wait_for(all_streaming, 10.0 + n, 0.2):
            failures.append(f"N={n}: not every stream streaming within {10 + n} s: {kp.cameras(k)}")
            return res, failures
        res["streaming_after_s"] = round(time.monotonic() - t_up, 2)
        pids = {"keeppeekd": k.proc.pid}
        pids.update({w: st[w]["pid"] for w in kp.WORKERS})
        # The processes producing the streams: one per camera, or one per codec in replay mode.
        cam_pids = {g.name: g.proc.pid for g in groups} if groups else {c.name: c.proc.pid for c in cams}
        time.sleep(args.warmup)

        # Window start. keeppeekctl's counters are refreshed every 2 s, so the window is
        # aligned with a refresh: poll (before the window) until one arrives, read the
        # cameras' stats, start the CPU window just after; the end is read just after the
        # refresh `window` seconds later (window is a multiple of 2 s), so that no
        # keeppeekctl call falls inside the window and the counters cover the same 60 s.
        res["load_before"] = pc.loadavg()
        status0 = k.status()
        ta, _ = wait_update(kp, k)
        tu, cams0 = wait_update(kp, k)
        if tu is None:
            failures.append(f"N={n}: keeppeekctl's counters did not change for 6 s")
            return res, failures
        res["counter_refresh_s"] = round(tu - ta, 3)
        c0 = flat_streams(cams0)
        sampler = Sampler({**pids, **{"cam:" + name: pid for name, pid in cam_pids.items()}}, 0.5)
        time.sleep(max(0.0, tu + ALIGN_S - time.monotonic()))
        s0 = {c.name: c.stats() for c in cams}  # the cameras' counters cover the CPU window
        mach0 = pc.cpu_jiffies()
        self0 = os.times()
        cpu0 = {name: cpu_ticks(pid) for name, pid in {**pids, **cam_pids}.items()}
        t0 = time.monotonic()
        sampler.start()
        time.sleep(max(0.0, t0 + args.window - time.monotonic()))
        t1 = time.monotonic()
        cpu1 = {name: cpu_ticks(pid) for name, pid in {**pids, **cam_pids}.items()}
        self1 = os.times()
        mach1 = pc.cpu_jiffies()
        sampler.stop_ev.set()
        sampler.join()
        s1 = {c.name: c.stats() for c in cams}
        c1 = flat_streams(kp.cameras(k))
        # Whether the end read saw the refresh expected at tu + window: the next one must
        # still be ahead (a change within the next 2 s rather than immediately).
        tn, _ = wait_update(kp, k)
        res["end_read_next_refresh_s"] = round(tn - t1, 3) if tn else None
        status1 = k.status()
        res["load_after"] = pc.loadavg()
        window = t1 - t0
        res["window_s"] = round(window, 3)
        cam_hours = n * window / 3600.0

        # CPU per process and the baseline.
        procs = {}
        for name in KP_PROCS:
            a, b = cpu0.get(name), cpu1.get(name)
            if a is None or b is None:
                failures.append(f"N={n}: {name} (pid {pids.get(name)}) vanished during the window")
                continue
            cpu = (b - a) / HZ
            rss = sampler.samples[name]
            procs[name] = {"pid": pids[name], "cpu_s": round(cpu, 3),
                           "cpu_s_per_camera_hour": round(cpu / cam_hours, 2),
                           "cpu_pct_of_one_core": round(100 * cpu / window, 2),
                           "rss_mib": mib(pc.summary(rss))}
        kp_cpu = sum(p["cpu_s"] for p in procs.values())
        procs["keeppeek_total"] = {"cpu_s": round(kp_cpu, 3),
                                   "cpu_s_per_camera_hour": round(kp_cpu / cam_hours, 2),
                                   "cpu_pct_of_one_core": round(100 * kp_cpu / window, 2)}
        cam_cpu = 0.0
        for name in cam_pids:
            a, b = cpu0.get(name), cpu1.get(name)
            if a is None or b is None:
                failures.append(f"N={n}: test camera {name} vanished during the window")
                continue
            cam_cpu += (b - a) / HZ
        sums = [sum(v) for v in zip(*[sampler.samples["cam:" + nm] for nm in cam_pids])]
        per_cam = [v for nm in cam_pids for v in sampler.samples["cam:" + nm]]
        procs["test_cameras_baseline"] = {
            "processes": len(cam_pids), "mode": res["camera_mode"], "cpu_s": round(cam_cpu, 3),
            "cpu_s_per_camera_hour": round(cam_cpu / cam_hours, 2),
            "cpu_pct_of_one_core": round(100 * cam_cpu / window, 2),
            "rss_mib_sum": mib(pc.summary(sums)), "rss_mib_each": mib(pc.summary(per_cam))}
        res["processes"] = procs
        res["rss_samples_late"] = sampler.late
        busy = (mach1[0] - mach0[0]) / HZ
        driver = (self1.user + self1.system) - (self0.user + self0.system)
        res["machine"] = {"busy_cpu_s": round(busy, 2), "capacity_cpu_s": round(window * os.cpu_count(), 2),
                          "steal_cpu_s": round((mach1[1] - mach0[1]) / HZ, 2),
                          "driver_cpu_s": round(driver, 3),
                          "other_cpu_s": round(max(0.0, busy - kp_cpu - cam_cpu - driver), 2)}
        res["contended"] = res["machine"]["other_cpu_s"] > args.max_other * window

        # Counter deltas over the whole window.
        streams = {}
        tot = {}
        for key, s in c1.items():
            if key not in c0:
                failures.append(f"N={n}: stream {key} appeared during the window")
                continue
            a, b = stream_counters(c0[key]), stream_counters(s)
            d = {ck: b[ck] - a[ck] for ck in b}
            cam_stats0 = s0[key[0]]["baichuan"][key[1]]
            cam_stats1 = s1[key[0]]["baichuan"][key[1]]
            d["camera_frames_sent"] = cam_stats1["frames_sent"] - cam_stats0["frames_sent"]
            d["camera_bytes_sent"] = cam_stats1["bytes_sent"] - cam_stats0["bytes_sent"]
            streams[f"{key[0]}/{key[1]}"] = d
            for ck, v in d.items():
                tot[ck] = tot.get(ck, 0) + v
        res["window_counters"] = tot
        res["window_counters_per_stream"] = streams
        res["bytes_written_per_byte_received"] = round(tot["rec_bytes_written"] / tot["bytes"], 4) \
            if tot.get("bytes") else None
        # Mb/s received, for scale.
        res["received_mbit_s"] = round(tot.get("bytes", 0) * 8 / window / 1e6, 2)
        for w in kp.WORKERS:
            if status1[w]["pid"] != status0[w]["pid"] or status1[w]["restarts"] != status0[w]["restarts"]:
                failures.append(f"N={n}: {w} restarted during the window ({status0[w]} -> {status1[w]})")

        # The work was really done: pause the cameras, compare what was sent with what arrived.
        for pid in cam_pids.values():
            os.kill(pid, signal.SIGUSR1)
        time.sleep(0.5)
        sent = {c.name: c.stats()["baichuan"] for c in cams}

        def settled():
            cc = flat_streams(kp.cameras(k))
            ok = all(cc[(nm, s)]["recorded_frames"] >= sent[nm][s]["frames_sent"] - 1
                     for nm in sent for s in ("main", "sub"))
            return cc if ok else None
        kp.wait_for(settled, 15.0, 0.2)

        def complete():  # the last frame may still be on its way; give it a moment
            cc = flat_streams(kp.cameras(k))
            ok = all(cc[(nm, s)]["recorded_frames"] >= sent[nm][s]["frames_sent"] for nm in sent
                     for s in ("main", "sub"))
            return cc if ok else None
        final = kp.wait_for(complete, 3.0, 0.2) or flat_streams(kp.cameras(k))
        checks = {}
        for (nm, s), row in sorted(final.items()):
            want = sent[nm][s]["frames_sent"]
            got = row["recorded_frames"]
            checks[f"{nm}/{s}"] = {"sent": want, "received": row["frames"], "recorded": got,
                                   "gaps": row["recorded_gaps"], "send_rejected": row["send_rejected"],
                                   "frames_dropped": row["recording"]["frames_dropped"],
                                   "reconnects": row["reconnects"], "fragments": row["recording"]["fragments"]}
            if got < want - 1 or got > want:
                failures.append(f"N={n}: {nm}/{s}: recorderd received {got} of {want} frames sent")
            for f in ("recorded_gaps", "send_rejected", "reconnects"):
                if row[f]:
                    failures.append(f"N={n}: {nm}/{s}: {f} = {row[f]}")
            if row["recording"]["frames_dropped"]:
                failures.append(f"N={n}: {nm}/{s}: recorderd dropped {row['recording']['frames_dropped']} frames")
        settled_fragments = sum(v["fragments"] for v in checks.values())
        t_stop = time.monotonic()
        stopped = k.stop()
        res["stop_s"] = round(time.monotonic() - t_stop, 2)
        if stopped is None:
            failures.append(f"N={n}: keeppeekd did not stop cleanly")

        # Files: ffprobe clean, and exactly the frames recorderd received.
        files = sorted(glob.glob(os.path.join(k.data, "recordings", "*", "*", "*.mp4")))
        packets = {}
        bad = []
        for f in files:
            rc, err, info = probe_file(f)
            rel = os.path.relpath(f, os.path.join(k.data, "recordings"))
            if rc != 0 or err:
                bad.append(f"{rel}: rc {rc}: {err[:200]}")
            cam_stream = "/".join(rel.split("/")[:2])
            packets[cam_stream] = packets.get(cam_stream, 0) + int(info.get("nb_read_packets", 0))
        for msg in bad:
            failures.append(f"N={n}: ffprobe -v error: {msg}")
        for key, v in checks.items():
            v["packets_in_files"] = packets.get(key, 0)
            # recorderd writes what it holds when it stops; a frame still in flight when the
            # counters were read may land too, but never more than the camera sent.
            if not v["recorded"] - v["frames_dropped"] <= v["packets_in_files"] <= v["sent"]:
                failures.append(f"N={n}: {key}: files hold {v['packets_in_files']} frames, recorderd received "
                                f"{v['recorded']}, the camera sent {v['sent']}")
        frag_rows = catalog_entries(k.data, "fragments")
        res["files"] = {"count": len(files), "bytes": sum(os.path.getsize(f) for f in files),
                        "ffprobe_failures": len(bad), "catalog_fragments": frag_rows,
                        "fragments_written_before_stop": settled_fragments}
        if frag_rows is None or frag_rows < settled_fragments:
            failures.append(f"N={n}: the catalog holds {frag_rows} fragments, {settled_fragments} were written")
        res["checks"] = checks
        res["frames_sent_total"] = sum(v["sent"] for v in checks.values())
        res["frames_recorded_total"] = sum(v["recorded"] for v in checks.values())
        res["packets_in_files_total"] = sum(v["packets_in_files"] for v in checks.values())
    except AssertionError as e:
        failures.append(f"N={n}: {e}")
    finally:
        for c in groups or cams:
            c.kill()
        if k is not None:
            if failures and args.keep:
                print(f"N={n}: keeping {k.dir} and {work}", file=sys.stderr)
                k.stop()
            else:
                k.cleanup()
        if not (failures and args.keep):
            shutil.rmtree(work, ignore_errors=True)
    return res, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)), help="source tree")
    ap.add_argument("--cameras", default="1,8,32,64", help="comma-separated N values (default 1,8,32,64)")
    ap.add_argument("--window", type=float, help="measured seconds (default 60, --quick 20)")
    ap.add_argument("--warmup", type=float, help="excluded seconds (default 10, --quick 5)")
    ap.add_argument("--quick", action="store_true", help="20 s window after 5 s warm-up (CI)")
    ap.add_argument("--codec", choices=["mixed", "h264", "h265"], default="mixed",
                    help="mixed: cameras alternate H.264 and H.265 (default)")
    ap.add_argument("--encryption", default="aes", choices=["none", "bc", "aes", "full-aes"])
    ap.add_argument("--replay", action="store_true",
                    help="the cameras in replay mode, N of them in one process per codec (test camera --replay)")
    ap.add_argument("--max-other", type=float, default=0.25,
                    help="other processes' average CPU (cores) above which a run is marked contended")
    ap.add_argument("--retries", type=int, default=2, help="reruns of a contended N")
    ap.add_argument("--wait-quiet", type=float, default=180.0,
                    help="before each run, wait at most this long for the machine to be idle (--max-other)")
    ap.add_argument("--keep", action="store_true", help="keep the data directories of a failed run")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    a.window = a.window or (20.0 if a.quick else 60.0)
    a.warmup = a.warmup if a.warmup is not None else (5.0 if a.quick else 10.0)
    # A whole number of counter refresh periods (see run_one).
    a.window = max(HEALTH_PERIOD_S, round(a.window / HEALTH_PERIOD_S) * HEALTH_PERIOD_S)
    build = os.path.abspath(a.build)
    os.environ["KP_BUILD_ROOT"] = build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402  (test/integration/kp.py: starts the real programs from the build tree)
    codecs = ["h264", "h265"] if a.codec == "mixed" else [a.codec]
    report = {"benchmark": "ingest-record", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "build": build, "window_s": a.window, "warmup_s": a.warmup,
              "rss_period_s": 0.5, "codec": a.codec, "runs": [], "failures": []}
    for n in [int(x) for x in a.cameras.split(",")]:
        for attempt in range(a.retries + 1):
            print(f"N={n}: attempt {attempt + 1}, load average {pc.loadavg()}", flush=True)
            res, fails = run_one(kp, n, a, codecs)
            res["attempt"] = attempt + 1
            if fails or not res.get("contended") or attempt == a.retries:
                break
            print(f"N={n}: other processes used {res['machine']['other_cpu_s']} CPU s in the window; rerunning",
                  flush=True)
        report["runs"].append(res)
        report["failures"] += fails
        if fails:
            print("\n".join("FAIL: " + f for f in fails), file=sys.stderr, flush=True)
    md = markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(build, "perf"), "ingest-record", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


def markdown(rep):
    out = [f"# ingest-record ({rep['label']})", "",
           f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}.",
           f"Window {rep['window_s']:g} s after {rep['warmup_s']:g} s warm-up; codecs {rep['codec']}; RSS sampled "
           f"every {rep['rss_period_s']} s; nearest-rank percentiles; CPU from /proc/PID/stat deltas over the "
           "window. A camera = one main 1920x1080 + one sub 640x360 stream over Baichuan TCP.", "",
           "## CPU seconds per camera-hour", "",
           "| N | keeppeekd | ingestd | recorderd | webd | rtcd | KeepPeek total | test cameras (baseline) | "
           "load before/after | other CPU s | steal s |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for r in rep["runs"]:
        p = r.get("processes")
        if not p:
            out.append(f"| {r['cameras']} | run failed | | | | | | | | | |")
            continue
        cells = [pc.fmt(p.get(nm, {}).get("cpu_s_per_camera_hour")) for nm in KP_PROCS]
        out.append(f"| {r['cameras']} | " + " | ".join(cells) +
                   f" | **{pc.fmt(p['keeppeek_total']['cpu_s_per_camera_hour'])}** | "
                   f"{pc.fmt(p['test_cameras_baseline']['cpu_s_per_camera_hour'])} | "
                   f"{r['load_before'][0]:.2f} / {r['load_after'][0]:.2f} | {r['machine']['other_cpu_s']}"
                   f"{' (contended)' if r['contended'] else ''} | {r['machine'].get('steal_cpu_s', '-')} |")
    out += ["", "## Ingest + record, % of one core (issue 16 target: <= 25 % at N = 64)", "",
            "| N | ingestd | recorderd | ingest + record | KeepPeek total | test cameras (baseline) | "
            "camera processes (mode) |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rep["runs"]:
        p = r.get("processes")
        if p:
            i, c = p["ingestd"]["cpu_pct_of_one_core"], p["recorderd"]["cpu_pct_of_one_core"]
            out.append(f"| {r['cameras']} | {pc.fmt(i)} | {pc.fmt(c)} | **{pc.fmt(i + c)}** | "
                       f"{pc.fmt(p['keeppeek_total']['cpu_pct_of_one_core'])} | "
                       f"{pc.fmt(p['test_cameras_baseline']['cpu_pct_of_one_core'])} | "
                       f"{p['test_cameras_baseline']['processes']} ({p['test_cameras_baseline']['mode']}) |")
    out += ["", "## RSS p50 / p95 (MiB)", "",
            "| N | keeppeekd | ingestd | recorderd | webd | rtcd | test camera process (each) | samples/process |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rep["runs"]:
        p = r.get("processes")
        if not p:
            continue
        cells = [f"{pc.fmt(p[nm]['rss_mib']['p50'])} / {pc.fmt(p[nm]['rss_mib']['p95'])}" if nm in p else "-"
                 for nm in KP_PROCS]
        cam = p["test_cameras_baseline"]["rss_mib_each"]
        out.append(f"| {r['cameras']} | " + " | ".join(cells) +
                   f" | {pc.fmt(cam['p50'])} / {pc.fmt(cam['p95'])} | {p['recorderd']['rss_mib']['n']} |")
    out += ["", "## Counters over the window (all streams)", "",
            "| N | Mbit/s in | frames sent (camera) | frames received (ingestd) | frames recorded | "
            "bytes received | bytes written | written/received | fragments written |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rep["runs"]:
        t = r.get("window_counters")
        if not t:
            continue
        out.append(f"| {r['cameras']} | {r['received_mbit_s']} | {t['camera_frames_sent']:,} | {t['frames']:,} | "
                   f"{t['recorded_frames']:,} | {t['bytes']:,} | {t['rec_bytes_written']:,} | "
                   f"{r['bytes_written_per_byte_received']} | {t['rec_fragments']:,} |")
    out += ["", "## Checks (after pausing the cameras and stopping keeppeekd)", "",
            "| N | frames sent | frames recorded | frames in files | files (ffprobe failures) | catalog fragments | "
            "bytes on disk |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rep["runs"]:
        f = r.get("files")
        if not f:
            continue
        out.append(f"| {r['cameras']} | {r['frames_sent_total']:,} | {r['frames_recorded_total']:,} | "
                   f"{r['packets_in_files_total']:,} | {f['count']} ({f['ffprobe_failures']}) | "
                   f"{f['catalog_fragments']:,} | {f['bytes']:,} |")
    out.append("")
    out.append("Result: " + ("all checks passed." if not rep["failures"] else
                             "FAILED:\n\n" + "\n".join("* " + x for x in rep["failures"])))
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
