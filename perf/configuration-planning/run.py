#!/usr/bin/env python3
"""configuration-planning: a five-field plan over 64 cameras (keeppeekd's plan code,
supervisor/config_plan.c) from the base keeppeekd keeps loaded, and from the file's text,
30 measured runs after 5 warm-up runs, against a read-only
baseline in the same run, as the seed's: parsing the same 64-camera file and building the
first typed snapshot page (supervisor/config_snapshot.c, GET /api/v1/config). Nearest-rank p50/p95 of both, the encoded plan size, and the
checks that the work was done (the plan lists 320 changes, holds no secret, and applied
to the file gives all 64 cameras the five new values). Target (issue 17): plan p95 <=
0.2 ms (the seed's 1.167 ms), plan <= 64 KiB.

    python3 perf/configuration-planning/run.py --build build [--runs 30]
    (or ninja -C build perf-configuration-planning)

Writes BUILD/perf/configuration-planning.{json,md}. Exit status 1 when a check fails or
the plan is over 64 KiB. Method: docs/perf/METHODOLOGY.md."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

NAME = "configuration-planning"
TARGET_P95_MS = 0.2
SEED_P95_MS = 1.167


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--bin", default=None)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    binary = a.bin or os.path.join(a.build, "perf", "configuration-planning-bench")
    load0 = pc.loadavg()
    out = subprocess.run([binary, str(a.runs)], capture_output=True, text=True, check=True).stdout
    load1 = pc.loadavg()
    res = json.loads(out)
    base_ms = [v / 1e6 for v in res.pop("baseline_ns")]
    plan_ms = [v / 1e6 for v in res.pop("plan_ns")]
    text_ms = [v / 1e6 for v in res.pop("plan_from_text_ns")]
    report = {"benchmark": NAME, "label": a.label, "machine": pc.machine(), "revision": pc.git_revision(a.source),
              "load_before": load0, "load_after": load1, "runs": a.runs, "warmup": 5,
              "baseline_ms": pc.summary(base_ms), "plan_ms": pc.summary(plan_ms),
              "plan_from_text_ms": pc.summary(text_ms), **res}
    failures = []
    if not res["plan_says_320_changes"] or res["cameras_changed"] != 64 or not res["applied"]:
        failures.append("the plan did not do the work (320 changes on 64 cameras, applied)")
    if res["secret_in_plan"] or res["secret_in_page"]:
        failures.append("a secret is in the plan or the snapshot page")
    if res["page_cameras"] != 64:
        failures.append(f"the snapshot page holds {res['page_cameras']} cameras, not 64")
    if res["plan_bytes"] > 64 * 1024:
        failures.append(f"the plan is {res['plan_bytes']} bytes, over 64 KiB")
    report["failures"] = failures
    p, b, t = report["plan_ms"], report["baseline_ms"], report["plan_from_text_ms"]
    md = [f"# {NAME}", "", pc.machine_md(report["machine"]) + f"; revision {report['revision']}", "",
          f"Load average before/after: {load0[0]:.2f} / {load1[0]:.2f}. {a.runs} runs after 5 warm-up runs, "
          "nearest rank.", "",
          "| path | p50 ms | p95 ms | max ms |", "| --- | ---: | ---: | ---: |",
          f"| baseline: parse + first typed snapshot page | {b['p50']:.3f} | {b['p95']:.3f} | {b['max']:.3f} |",
          f"| plan (base loaded): resolve, 5 fields x 64 cameras, validate, diff, encode | {p['p50']:.3f} | "
          f"{p['p95']:.3f} | {p['max']:.3f} |",
          f"| plan (the file's text loaded first) | {t['p50']:.3f} | {t['p95']:.3f} | {t['max']:.3f} |", "",
          f"Plan {res['plan_bytes']:,} bytes (limit 65,536) for a {res['config_bytes']:,}-byte file; "
          f"target p95 <= {TARGET_P95_MS} ms (seed {SEED_P95_MS} ms): "
          f"{'met' if p['p95'] <= TARGET_P95_MS else 'NOT met'}.", ""]
    if failures:
        md += ["Failures:", ""] + [f"* {f}" for f in failures]
    jpath, mpath = pc.write_reports(os.path.join(a.build, "perf"), NAME, report, "\n".join(md) + "\n")
    print("\n".join(md))
    print(f"reports: {jpath} {mpath}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
