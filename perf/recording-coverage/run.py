#!/usr/bin/env python3
"""recording-coverage: recorderd's coverage snapshot (CoverageQuery, answered from the
maintained summaries) against one materializing fragment scan per stream, on a real
catalog of 127 cameras x main+sub x 30 days x 128 keyframed fragments per
camera/day/stream (975,360 fragments), 6 h buckets over the 30 days (SPEC section 13).

    python3 perf/recording-coverage/run.py --build build --bin build/perf/recording-coverage-bench
        [--samples 5] [--warmup 2] [--keep-catalog]
    (or: ninja -C build perf-recording-coverage)

The C program (perf/recording-coverage/bench.c, built by perf/meson.build with recorderd's
catalog and query sources) writes a fresh catalog into BUILD/perf/recording-coverage/
through recorderd's catalog functions, then times both paths, interleaved after the
warm-up. This runner checks the work (every fragment row read by the baseline; per
stream, the snapshot's bucket totals equal the baseline's, the retained exact ranges equal
the baseline's newest ranges, identical when not truncated; at most 256 ranges per
stream; response at most 8 MiB), applies the p95 budget (500 ms) and writes
BUILD/perf/recording-coverage.{json,md}. Exit status 1 when a check or the budget fails.
Method: docs/perf/METHODOLOGY.md."""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

FRAGMENTS = 127 * 2 * 30 * 128
BUDGET_P95_MS = 500.0
MAX_RANGES = 256
MAX_BYTES = 8 * 1024 * 1024


def run_child(cmd):
    """Runs cmd; returns (stdout, its CPU seconds, machine busy and steal CPU seconds,
    wall seconds) over its lifetime."""
    tck = os.sysconf("SC_CLK_TCK")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    j0 = pc.cpu_jiffies()
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    j1 = pc.cpu_jiffies()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"{cmd[0]} failed with status {r.returncode}")
    own = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return r.stdout, r.stderr, own, (j1[0] - j0[0]) / tck, (j1[1] - j0[1]) / tck, wall


def streams_of(doc):
    out = {}
    for cam in doc["cameras"]:
        for s in cam["streams"]:
            out[cam["name"] + "/" + s["name"]] = s
    return out


def check(base_doc, snap_doc, expected, samples, gen):
    """Returns (problems, per-stream table rows)."""
    problems = []
    if gen and gen["fragments"] != FRAGMENTS:
        problems.append(f"the generator wrote {gen['fragments']} fragments, not {FRAGMENTS}")
    for s in samples:
        if s["path"] == "baseline" and (s["rows_read"] != FRAGMENTS or s["rows_in_range"] != FRAGMENTS):
            problems.append(f"baseline round {s['round']} read {s['rows_read']} rows "
                            f"({s['rows_in_range']} in range), not {FRAGMENTS}")
        if s["path"] == "summaries" and s["bytes"] > MAX_BYTES:
            problems.append(f"round {s['round']}: the answer is {s['bytes']} bytes, over {MAX_BYTES}")
    for key in ("from_ms", "to_ms", "bucket_ms", "total_cameras"):
        if base_doc[key] != snap_doc[key]:
            problems.append(f"{key}: snapshot {snap_doc[key]}, baseline {base_doc[key]}")
    base, snap = streams_of(base_doc), streams_of(snap_doc)
    if sorted(base) != sorted(snap) or sorted(snap) != sorted(expected):
        problems.append(f"stream sets differ: snapshot {len(snap)}, baseline {len(base)}, "
                        f"generated {len(expected)}")
    rows = []
    for key in sorted(expected):
        b, s, e = base.get(key), snap.get(key), expected[key]
        if not b or not s:
            continue
        b_total = sum(r[1] - r[0] for r in b["ranges"])
        s_total = sum(s["buckets"])
        n_base, n_snap = len(b["ranges"]), len(s["ranges"])
        trunc = s["ranges_truncated"]
        if b_total != e["total_ms"] or n_base != e["ranges"]:
            problems.append(f"{key}: baseline {b_total} ms in {n_base} ranges, generated {e['total_ms']} ms "
                            f"in {e['ranges']}")
        if s_total != b_total:
            problems.append(f"{key}: snapshot buckets sum to {s_total} ms, baseline {b_total} ms")
        if s["buckets"] != b["buckets"]:
            diff = sum(1 for x, y in zip(s["buckets"], b["buckets"]) if x != y)
            problems.append(f"{key}: {diff} of {len(b['buckets'])} buckets differ "
                            f"(lengths {len(s['buckets'])} / {len(b['buckets'])})")
        if n_snap > MAX_RANGES:
            problems.append(f"{key}: {n_snap} exact ranges, over {MAX_RANGES}")
        if n_snap != min(n_base, MAX_RANGES):
            problems.append(f"{key}: {n_snap} exact ranges retained of the baseline's {n_base}")
        if trunc != (n_base > MAX_RANGES):
            problems.append(f"{key}: ranges_truncated {trunc} with {n_base} ranges in the baseline")
        if s["ranges"] != b["ranges"][n_base - n_snap:]:
            problems.append(f"{key}: the retained ranges are not the baseline's newest {n_snap}")
        if trunc:
            x = s["exact_from_ms"]
            prev_end = b["ranges"][n_base - n_snap - 1][1]
            if x is None or not prev_end <= x <= s["ranges"][0][0]:
                problems.append(f"{key}: exact_from_ms {x} not between the last dropped range's end "
                                f"{prev_end} and the first retained start {s['ranges'][0][0]}")
        elif s["exact_from_ms"] is not None:
            problems.append(f"{key}: exact_from_ms {s['exact_from_ms']} without truncation")
        rows.append({"stream": key, "fragments": e["fragments"], "covered_ms": b_total,
                     "baseline_ranges": n_base, "retained_ranges": n_snap, "truncated": trunc,
                     "exact_from_ms": s["exact_from_ms"]})
    return problems, rows


LAYOUTS = {
    "gaps": "1-12 runs of touching 2-10 s fragments per stream and day (30-360 exact ranges per stream "
            "over 30 days: some streams over the 256 kept)",
    "contiguous": "the seed's shape: 128 touching 675 s fragments per day, one exact range per stream",
}


def markdown(rep):
    m = rep["machine"]
    lines = [f"# recording-coverage ({'PASS' if rep['pass'] else 'FAIL'})", "",
             f"{pc.machine_md(m)}; revision {rep['revision']}; catalog on {rep['catalog_fs']}.", "",
             "Workload per layout: 127 cameras x main+sub x 30 days x 128 keyframed fragments per "
             "camera/day/stream = 975,360 fragments, written through recorderd's catalog code "
             "(cat_add_fragment maintains the coverage summaries). Query: every camera, both streams, the "
             f"30 days, 6 h buckets. {rep['samples']} samples per path after {rep['warmup']} warm-up rounds, "
             "the two paths interleaved; nearest rank; wall time (CLOCK_MONOTONIC) and process CPU time.", ""]
    lines += ["| layout | path | wall p50 ms | wall p95 ms | wall max ms | CPU p50 ms | CPU p95 ms | response bytes |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, L in rep["layouts"].items():
        r = L["results"]
        for path, label in (("baseline", "baseline: one materializing fragment scan per stream"),
                            ("summaries", "**CoverageQuery from the maintained summaries**")):
            x = r[path]
            lines.append(f"| {name} | {label} | {pc.fmt(x['wall_ms']['p50'])} | {pc.fmt(x['wall_ms']['p95'])} | "
                         f"{pc.fmt(x['wall_ms']['max'])} | {pc.fmt(x['cpu_ms']['p50'])} | "
                         f"{pc.fmt(x['cpu_ms']['p95'])} | {x['bytes']:,} |")
    lines.append("")
    for name, L in rep["layouts"].items():
        r, c, w, cpu = L["results"], L["coverage"], L["workload"], L["cpu"]
        lines += [f"## {name}", "", LAYOUTS[name] + ".", "",
                  f"* catalog: {w['fragments']:,} fragments in {w['recordings']:,} recordings, written in "
                  f"{w['seconds']:.2f} s ({w['commits']} transactions), {w['catalog_bytes']:,} bytes;",
                  f"* summaries p95 {r['summaries']['wall_ms']['p95']:.2f} ms against the {BUDGET_P95_MS:.0f} ms "
                  f"budget; median {r['speedup_p50']:.1f}x faster than the baseline;",
                  f"* exact ranges retained per stream: max {c['retained_max']} (limit {MAX_RANGES}), "
                  f"{c['retained_total']:,} in all; {c['streams_truncated']} of {c['streams']} streams truncated, "
                  f"{c['streams_exact']} complete; the baseline found {c['baseline_min']}-{c['baseline_max']} "
                  "ranges per stream;",
                  f"* quiet check: {L['quiet_check']['busy_cores']} busy cores after waiting "
                  f"{L['quiet_check']['waited_s']} s; load average before / after {L['load_before'][0]} / "
                  f"{L['load_after'][0]}; while measuring, "
                  f"the benchmark used {cpu['bench_s']:.2f} CPU s, the machine {cpu['machine_busy_s']:.2f} s "
                  f"(other processes {cpu['other_s']:.2f} s, steal {cpu['steal_s']:.2f} s) over "
                  f"{cpu['wall_s']:.2f} s.", ""]
        if L["problems"]:
            lines += ["Problems:", ""] + [f"* {p}" for p in L["problems"]] + [""]
        else:
            lines += ["Checks passed: the baseline read all 975,360 fragment rows in every round; for all 254 "
                      "streams the snapshot's buckets equal the baseline's and sum to the generated total, and "
                      "its retained ranges are the baseline's newest ones, identical where not truncated"
                      + ("; with no stream truncated, the answer is byte-identical to the baseline's document."
                         if L["byte_identical_to_baseline"] else "."), ""]
    return "\n".join(lines)


def run_layout(exe, work, layout, a):
    catalog = os.path.join(work, "catalog")
    os.makedirs(work, exist_ok=True)
    stamp = os.path.join(work, "generated.json")
    if a.keep_catalog and os.path.exists(stamp):
        with open(stamp) as f:
            gen = json.load(f)
    else:
        shutil.rmtree(catalog, ignore_errors=True)
        out = run_child([exe, "--layout", layout, "--catalog", catalog, "--generate"])[0]
        gen = json.loads(out)
        with open(stamp, "w") as f:
            json.dump(gen, f)
    print(f"{layout}: catalog of {gen['fragments']:,} fragments written in {gen['seconds']:.2f} s, "
          f"{gen['catalog_bytes']:,} bytes", flush=True)
    quiet = pc.wait_quiet(a.wait_quiet, a.max_busy)
    load_before = pc.loadavg()
    out, _, own, busy, steal, wall = run_child([exe, "--layout", layout, "--catalog", catalog, "--out", work,
                                                "--warmup", str(a.warmup), "--samples", str(a.samples)])
    load_after = pc.loadavg()
    meas = json.loads(out)
    with open(os.path.join(work, "baseline.json")) as f:
        base_doc = json.load(f)
    with open(os.path.join(work, "summaries.json")) as f:
        snap_doc = json.load(f)
    with open(os.path.join(work, "expected.json")) as f:
        expected = json.load(f)
    problems, rows = check(base_doc, snap_doc, expected, meas["samples"], gen)
    identical = None
    if not any(r["truncated"] for r in rows):
        # Nothing truncated: the baseline renders the same document, byte for byte.
        with open(os.path.join(work, "baseline.json"), "rb") as f1, \
                open(os.path.join(work, "summaries.json"), "rb") as f2:
            identical = f1.read() == f2.read()
        if not identical:
            problems.append("no stream is truncated, yet the answer differs from the baseline's document")
    if meas["body"] != "records":
        problems.append(f"recorderd's answer is {meas['body']}")
    results = {}
    for name in ("baseline", "summaries"):
        xs = [s for s in meas["samples"] if s["path"] == name and not s["warmup"]]
        results[name] = {"wall_ms": pc.summary([s["wall_ms"] for s in xs]),
                         "cpu_ms": pc.summary([s["cpu_ms"] for s in xs]),
                         "bytes": xs[-1]["bytes"]}
        if name == "summaries":
            results[name]["record_bytes"] = xs[-1]["record_bytes"]
    results["speedup_p50"] = results["baseline"]["wall_ms"]["p50"] / results["summaries"]["wall_ms"]["p50"]
    p95 = results["summaries"]["wall_ms"]["p95"]
    if p95 > BUDGET_P95_MS:
        problems.append(f"summaries p95 {p95:.2f} ms over the {BUDGET_P95_MS:.0f} ms budget")
    retained = [r["retained_ranges"] for r in rows] or [0]
    base_n = [r["baseline_ranges"] for r in rows] or [0]
    L = {"workload": gen, "query": {k: meas[k] for k in ("from_ms", "to_ms", "bucket_ms")}, "results": results,
         "coverage": {"streams": len(rows), "retained_max": max(retained), "retained_total": sum(retained),
                      "streams_truncated": sum(1 for r in rows if r["truncated"]),
                      "streams_exact": sum(1 for r in rows if not r["truncated"]),
                      "baseline_min": min(base_n), "baseline_max": max(base_n)},
         "quiet_check": {"busy_cores": quiet[0], "waited_s": quiet[1]},
         "load_before": load_before, "load_after": load_after,
         "cpu": {"bench_s": round(own, 3), "machine_busy_s": round(busy, 3), "other_s": round(max(0.0, busy - own), 3),
                 "steal_s": round(steal, 3), "wall_s": round(wall, 3)},
         "byte_identical_to_baseline": identical, "samples_raw": meas["samples"], "streams": rows, "problems": problems}
    b, s = results["baseline"]["wall_ms"], results["summaries"]["wall_ms"]
    print(f"{layout}: baseline (fragment scan) p50 {b['p50']:.2f} ms, p95 {b['p95']:.2f} ms, "
          f"{results['baseline']['bytes']:,} bytes")
    print(f"{layout}: summaries (CoverageQuery) p50 {s['p50']:.2f} ms, p95 {s['p95']:.2f} ms, "
          f"{results['summaries']['bytes']:,} bytes; ranges retained max {L['coverage']['retained_max']}, "
          f"{L['coverage']['streams_truncated']} of {len(rows)} streams truncated")
    print(f"{layout}: quiet check {quiet[0]} busy cores after {quiet[1]} s; load average {load_before[0]} -> "
          f"{load_after[0]}; other CPU {L['cpu']['other_s']:.2f} s "
          f"in {L['cpu']['wall_s']:.2f} s", flush=True)
    for p in problems:
        print(f"FAIL ({layout}): {p}")
    return L


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--bin", help="recording-coverage-bench (default BUILD/perf/recording-coverage-bench)")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--wait-quiet", type=float, default=60.0,
                    help="wait at most this many seconds for a near-idle machine before each layout")
    ap.add_argument("--max-busy", type=float, default=0.5, help="near-idle: at most this many busy cores over 3 s")
    ap.add_argument("--layouts", default="gaps,contiguous", help="comma-separated: gaps, contiguous")
    ap.add_argument("--keep-catalog", action="store_true",
                    help="reuse BUILD/perf/recording-coverage/LAYOUT/catalog from an earlier run")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    exe = a.bin or os.path.join(build, "perf", "recording-coverage-bench")
    layouts = [x for x in a.layouts.split(",") if x]
    if not layouts or any(x not in LAYOUTS for x in layouts):
        ap.error("--layouts takes gaps and/or contiguous")
    rep = {"benchmark": "recording-coverage", "machine": pc.machine(), "revision": pc.git_revision(a.source),
           "catalog_fs": pc.fs_type(build),
           "samples": a.samples, "warmup": a.warmup, "budget_p95_ms": BUDGET_P95_MS, "max_ranges": MAX_RANGES,
           "max_bytes": MAX_BYTES, "layouts": {}}
    for layout in layouts:
        rep["layouts"][layout] = run_layout(exe, os.path.join(build, "perf", "recording-coverage", layout),
                                            layout, a)
    rep["pass"] = all(not L["problems"] for L in rep["layouts"].values())
    jpath, mpath = pc.write_reports(os.path.join(build, "perf"), "recording-coverage", rep, markdown(rep))
    print(f"{'PASS' if rep['pass'] else 'FAIL'}; reports: {jpath} {mpath}")
    return 0 if rep["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
