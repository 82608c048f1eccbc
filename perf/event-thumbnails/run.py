#!/usr/bin/env python3
"""event-thumbnails: the time to answer GET /api/v1/events/ID/thumbnail for camera alarms
(no JPEG of their own: the sub keyframe decoded in the transcoder, decision 0021), on a
cold cache and from the cache (issue 20).

Workload: keeppeekd from the build tree with one Baichuan test camera (H.264, 1920x1080
main and 640x360 sub, 25 fps, a keyframe every second) sending a motion alarm every
second (`--motion-interval 1`) for --record seconds. Then, over one new TCP connection
per request (as the integration tests do: the connect is in every figure):
* start: the first thumbnail while the transcoder is stopped (keeppeekd starts it on
  recorderd's demand): one sample per run;
* cold: the first thumbnail of every other linked alarm (the transcoder running; each
  one decoded, scaled and encoded once);
* warm: --warm requests cycling over the same alarms (every one from the cache);
* snapshot: /snapshot of every alarm (the main keyframe at 1920x1080, never cached);
* preview cold / warm: the timeline's hover preview (GET /api/v1/cameras/front/thumbnail
  ?t=MS, decision 0025) at one time in each GOP of the sub stream's recorded span (each
  keyframe made once: a picture of a keyframe is not an event's), then --warm requests
  over the same times (every one from the cache).
Reported: count, p50, p95, max (nearest rank), in ms. Checks: every answer 200 and a
JPEG, pictures made = alarms + snapshots + GOPs previewed (each made once), no worker
restarted. Reports: BUILD/perf/event-thumbnails.{json,md}.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "integration"))
from kp import TestCamera, cameras, check, run, wait_for  # noqa: E402

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100.0 * len(xs) + 0.5)) - 1))] if xs else None


def row(name, xs):
    return {"what": name, "n": len(xs), "p50_ms": round(pct(xs, 50), 2), "p95_ms": round(pct(xs, 95), 2),
            "max_ms": round(max(xs), 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", type=float, default=45.0)
    ap.add_argument("--warm", type=int, default=1000)
    ap.add_argument("--out", default=os.path.join(os.environ.get("KP_BUILD_ROOT", "build"), "perf"))
    a = ap.parse_args()
    rows = []

    def test(make):
        work = tempfile.mkdtemp(prefix="kp-perf-thumb-")
        cam = TestCamera(work, "front", "h264", "baichuan", "aes", extra=("--motion-interval", "1"))
        try:
            kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\n')
            kp.wait_running()
            check(wait_for(lambda: (c := cameras(kp)) and all(s["state"] == "streaming"
                                                              for s in c["front"]["streams"]), 10.0, 0.1), "streams")
            auth = {"Authorization": "Bearer " + kp.token()}

            def get(path):
                t0 = time.perf_counter()
                s, h, b = kp.http("GET", path, headers=auth, timeout=30)
                ms = (time.perf_counter() - t0) * 1000.0
                if s != 200 or b[:2] != b"\xff\xd8":
                    check(False, f"{path}: a JPEG ({s})")
                return ms

            time.sleep(a.record)
            s, _, b = kp.http("GET", "/api/v1/events?camera=front&limit=500", headers=auth)
            ids = [e["id"] for e in json.loads(b)["events"]
                   if e["source"] == "camera" and len(e.get("keyframes", [])) == 2]
            check(len(ids) >= 10, f"{len(ids)} linked alarms")
            start = [get(f"/api/v1/events/{ids[0]}/thumbnail")]
            cold = [get(f"/api/v1/events/{i}/thumbnail") for i in ids[1:]]
            warm = [get(f"/api/v1/events/{ids[k % len(ids)]}/thumbnail") for k in range(a.warm)]
            snap = [get(f"/api/v1/events/{i}/snapshot") for i in ids]
            s, _, b = kp.http("GET", f"/api/v1/recordings?camera=front&stream=sub&from=0&to={2 ** 62}",
                              headers=auth)
            recs = json.loads(b)["recordings"]
            # One time per GOP (a keyframe every second), clear of the GOP's edges and of
            # the newest, still unindexed, second.
            times = list(range(recs[0]["start_ms"] + 500, recs[-1]["end_ms"] - 1500, 1000))
            pcold = [get(f"/api/v1/cameras/front/thumbnail?t={t}") for t in times]
            pwarm = [get(f"/api/v1/cameras/front/thumbnail?t={times[k % len(times)] + 200}") for k in range(a.warm)]
            s, _, b = kp.http("GET", "/metrics", headers=auth)
            made = int(re.search(r'pictures_total\{result="made"\} (\d+)', b.decode()).group(1))
            check(made == 2 * len(ids) + len(times),
                  f"each picture made once ({made} pictures for {len(ids)} alarms and {len(times)} GOPs)")
            rows.extend([row("start (transcoder stopped)", start), row("cold cache", cold),
                         row("warm (cache)", warm), row("snapshot 1920x1080", snap),
                         row("hover preview, cold (a new GOP)", pcold), row("hover preview, warm (cache)", pwarm)])
        finally:
            cam.kill()

    run(test)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "event-thumbnails.json"), "w") as f:
        json.dump(rows, f, indent=1)
    md = ["| request | n | p50 ms | p95 ms | max ms |", "| --- | ---: | ---: | ---: | ---: |"]
    md += [f"| {r['what']} | {r['n']} | {r['p50_ms']} | {r['p95_ms']} | {r['max_ms']} |" for r in rows]
    with open(os.path.join(a.out, "event-thumbnails.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
