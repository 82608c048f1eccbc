#!/usr/bin/env python3
"""fmp4-writer: recorderd's own fMP4 writer against libavformat's mp4 muxer, on the
1920x1080 H.264 and H.265 fixtures looped to 3,000 frames.

    python3 perf/fmp4-writer/run.py --build build [--runs 15] [--warmup 3] [--frames 3000]

Compiles perf/fmp4-writer/bench.c with common/fmp4_write.c, h26x.c and h26x_config.c
(the project's flags: -std=gnu11 -O2 -g -Werror ...) into BUILD/perf/cc/, runs it per
fixture, prints nearest-rank p50/p95 of wall and CPU time per 1,000 frames, checks both
outputs (ffprobe -v error clean, every frame present, the right codec and size, our
sample bytes exactly the length-prefixed access units) and writes
BUILD/perf/fmp4-writer.{json,md}. Exit status 1 when a check fails. Method:
docs/perf/METHODOLOGY.md."""
import argparse
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

FLAGS = ["-std=gnu11", "-O2", "-g", "-D_GNU_SOURCE", "-D_FILE_OFFSET_BITS=64", "-Wall", "-Wextra", "-Werror",
         "-Wshadow", "-Wstrict-prototypes", "-Wno-missing-field-initializers"]


def compile_bench(src, outdir):
    os.makedirs(outdir, exist_ok=True)
    exe = os.path.join(outdir, "fmp4-writer-bench")
    libs = subprocess.run(["pkg-config", "--cflags", "--libs", "libavformat", "libavcodec", "libavutil"],
                          capture_output=True, text=True, check=True).stdout.split()
    cmd = ["cc", *FLAGS, "-iquote", os.path.join(src, "common"), os.path.join(HERE, "bench.c"),
           *[os.path.join(src, "common", f) for f in ("fmp4_write.c", "h26x.c", "h26x_config.c")], *libs, "-o", exe]
    subprocess.run(cmd, check=True)
    return exe, " ".join(cmd)


def probe(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                        "stream=codec_name,codec_tag_string,width,height,nb_read_packets", "-of", "json", path],
                       capture_output=True, text=True)
    info = {}
    if r.returncode == 0:
        streams = json.loads(r.stdout).get("streams", [])
        info = streams[0] if len(streams) == 1 else {"streams": len(streams)}
    return r.returncode, r.stderr.strip(), info


def framemd5(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy",
                        "-f", "framemd5", "-"], capture_output=True, text=True)
    rows = [l.split(",") for l in r.stdout.splitlines() if l and not l.startswith("#")]
    return r.returncode, r.stderr.strip(), [[c.strip() for c in row] for row in rows]


def per_kframes(runs, key, frames):
    return [r[key] * 1000.0 / frames for r in runs]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (fixtures, reports)")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)), help="source tree")
    ap.add_argument("--bin", help="use this fmp4-writer-bench instead of compiling one")
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--avio-buffer", type=int, default=32768, help="libavformat AVIO buffer bytes")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the output files go (default /dev/shm: the writers' CPU, not the disk)")
    ap.add_argument("--wait-quiet", type=float, default=120.0,
                    help="before each codec, wait at most this long for the machine to be idle")
    ap.add_argument("--max-other", type=float, default=0.25, help="busy cores that count as idle")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    fixtures = os.path.join(build, "test", "fixtures")
    outdir = os.path.join(build, "perf")
    if a.bin:
        exe, how = os.path.abspath(a.bin), "given with --bin"
    else:
        exe, how = compile_bench(os.path.abspath(a.source), os.path.join(outdir, "cc"))
    workdir = os.path.join(a.dir or outdir, f"kp-fmp4-bench-{os.getpid()}")
    os.makedirs(workdir, exist_ok=True)
    report = {"benchmark": "fmp4-writer", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "compiled": how, "output_fs": pc.fs_type(workdir),
              "frames": a.frames, "runs": a.runs, "warmup": a.warmup, "avio_buffer": a.avio_buffer,
              "cases": [], "failures": []}
    failures = report["failures"]
    try:
        for codec in ("h264", "h265"):
            fixture = os.path.join(fixtures, f"main.{codec}")
            own_out = os.path.join(workdir, f"own.{codec}.mp4")
            lavf_out = os.path.join(workdir, f"lavf.{codec}.mp4")
            quiet = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(a.wait_quiet, a.max_other)))
            load0, cpu0, t0 = pc.loadavg(), pc.cpu_jiffies(), time.monotonic()
            ru0 = os.times()
            r = subprocess.run([exe, "--input", fixture, "--out-own", own_out, "--out-lavf", lavf_out,
                                "--frames", str(a.frames), "--runs", str(a.runs), "--warmup", str(a.warmup),
                                "--avio-buffer", str(a.avio_buffer)], capture_output=True, text=True)
            t1, cpu1, load1 = time.monotonic(), pc.cpu_jiffies(), pc.loadavg()
            ru1 = os.times()
            if r.returncode != 0:
                failures.append(f"{codec}: the benchmark exited {r.returncode}: {r.stderr.strip()}")
                continue
            raw = json.loads(r.stdout)
            hz = os.sysconf("SC_CLK_TCK")
            busy = (cpu1[0] - cpu0[0]) / hz
            own_cpu = (ru1.children_user + ru1.children_system) - (ru0.children_user + ru0.children_system)
            case = {"codec": codec, "fixture": fixture, "quiet_check": quiet, "width": raw["width"], "height": raw["height"],
                    "fixture_frames": raw["fixture_frames"], "libavformat": raw["libavformat"],
                    "load_before": load0, "load_after": load1, "elapsed_s": round(t1 - t0, 2),
                    "machine_busy_cpu_s": round(busy, 2), "steal_cpu_s": round((cpu1[1] - cpu0[1]) / hz, 2), "bench_cpu_s": round(own_cpu, 2),
                    "other_cpu_s": round(max(0.0, busy - own_cpu), 2), "writers": {}}
            for w in ("own", "lavf"):
                runs = raw[w]
                path = own_out if w == "own" else lavf_out
                sizes = {x["bytes"] for x in runs}
                wr = {"wall_ms_per_1000": pc.summary(per_kframes(runs, "wall_ms", a.frames)),
                      "cpu_ms_per_1000": pc.summary(per_kframes(runs, "cpu_ms", a.frames)),
                      "bytes_written": runs[0]["bytes"], "fragments": runs[0]["fragments"],
                      "write_calls": runs[0]["writes"], "runs": runs}
                if len(sizes) != 1:
                    failures.append(f"{codec}/{w}: runs wrote different sizes {sorted(sizes)}")
                if os.path.getsize(path) != runs[-1]["bytes"]:
                    failures.append(f"{codec}/{w}: file is {os.path.getsize(path)} bytes, the writer counted "
                                    f"{runs[-1]['bytes']}")
                rc, err, info = probe(path)
                wr["ffprobe"] = {"rc": rc, "stderr": err, **info}
                want_codec = "h264" if codec == "h264" else "hevc"
                if rc != 0 or err:
                    failures.append(f"{codec}/{w}: ffprobe -v error: rc {rc}: {err[:300]}")
                if info.get("codec_name") != want_codec or int(info.get("nb_read_packets", -1)) != a.frames \
                        or (info.get("width"), info.get("height")) != (raw["width"], raw["height"]):
                    failures.append(f"{codec}/{w}: ffprobe sees {info}, want {want_codec} "
                                    f"{raw['width']}x{raw['height']} with {a.frames} packets")
                rc, err, rows = framemd5(path)
                wr["framemd5"] = rows
                if rc != 0 or err or len(rows) != a.frames:
                    failures.append(f"{codec}/{w}: ffmpeg framemd5: rc {rc}, {len(rows)} packets: {err[:300]}")
                wr["sample_bytes_read_back"] = sum(int(row[4]) for row in rows) if rows else 0
                case["writers"][w] = wr
            own, lavf = case["writers"]["own"], case["writers"]["lavf"]
            if own["sample_bytes_read_back"] != raw["own"][0]["sample_bytes"]:
                failures.append(f"{codec}/own: ffmpeg reads {own['sample_bytes_read_back']} sample bytes, the "
                                f"writer stored {raw['own'][0]['sample_bytes']}")
            differ = sum(1 for x, y in zip(own["framemd5"], lavf["framemd5"]) if x != y)
            case["packets_differing"] = differ
            case["sample_bytes_difference"] = lavf["sample_bytes_read_back"] - own["sample_bytes_read_back"]
            for wr in (own, lavf):
                del wr["framemd5"]
            case["own_over_lavf_wall_p50"] = round(own["wall_ms_per_1000"]["p50"] / lavf["wall_ms_per_1000"]["p50"], 3)
            report["cases"].append(case)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    md = markdown(report)
    jpath, mpath = pc.write_reports(outdir, "fmp4-writer", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


def markdown(rep):
    out = [f"# fmp4-writer ({rep['label']})", "",
           f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}.",
           f"{rep['frames']:,} frames per run (fixture looped), {rep['runs']} measured runs per writer after "
           f"{rep['warmup']} warm-up runs, interleaved; output on {rep['output_fs']}; libavformat AVIO buffer "
           f"{rep['avio_buffer']:,} bytes. Nearest-rank percentiles.", "",
           "| codec | writer | wall p50 ms/1k fr | wall p95 | CPU p50 ms/1k fr | CPU p95 | bytes written | "
           "fragments | write calls |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in rep["cases"]:
        for w, name in (("own", "own (common/fmp4_write.c)"), ("lavf", "libavformat mp4")):
            x = c["writers"][w]
            out.append(f"| {c['codec']} | {name} | {pc.fmt(x['wall_ms_per_1000']['p50'], 3)} | "
                       f"{pc.fmt(x['wall_ms_per_1000']['p95'], 3)} | {pc.fmt(x['cpu_ms_per_1000']['p50'], 3)} | "
                       f"{pc.fmt(x['cpu_ms_per_1000']['p95'], 3)} | {x['bytes_written']:,} | {x['fragments']} | "
                       f"{x['write_calls']:,} |")
    out.append("")
    for c in rep["cases"]:
        out.append(f"* {c['codec']}: own/libavformat wall p50 ratio {c['own_over_lavf_wall_p50']}; "
                   f"{c['packets_differing']} of {rep['frames']:,} packets differ between the two files "
                   f"(libavformat stores {c['sample_bytes_difference']:+,} sample bytes); load average "
                   f"{c['load_before'][0]:.2f} before, {c['load_after'][0]:.2f} after; other processes used "
                   f"{c['other_cpu_s']} CPU s during the {c['elapsed_s']} s run.")
    out.append("")
    out.append("Checks: " + ("all passed (ffprobe -v error clean, every frame present, codec and size right, our "
                             "sample bytes read back exactly)." if not rep["failures"] else
                             "FAILED:\n\n" + "\n".join("* " + f for f in rep["failures"])))
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
