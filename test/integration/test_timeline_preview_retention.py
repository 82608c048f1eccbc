"""Retention drops the timeline previews of what it removes (issue 20, decision 0025): one
Baichuan test camera recorded into 3-second files under a 5 MB quota (as
test_recording_quota); the previews of the first two sub recordings are asked for
(GET /api/v1/cameras/CAM/thumbnail?t=MS&stream=sub, each GOP once), then, once
retention has deleted those recordings, their pictures have left recorderd's cache at
once (keeppeek_recorderd_picture_cache_entries back to 0, each counted in
keeppeek_recorderd_picture_cache_purged_total), not by LRU order, and their times
answer 404 no_recording."""
import json
import tempfile
import time

from kp import TestCamera, check, metric_in, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[retention]
max_disk_gb = 0.005
"""


def test(make):
    work = tempfile.mkdtemp(prefix="kp-tlret-")
    cam = TestCamera(work, "front", "h264", "baichuan", "aes")
    try:
        kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\nrollover_secs = 3\n')
        kp.wait_running()
        wait_streaming(kp, "front", timeout=10.0)

        get = kp.get

        def sub_recordings():
            s, _, b = get(f"/api/v1/recordings?camera=front&stream=sub&from=0&to={int(time.time() * 1000) + 60000}")
            if s != 200:
                check(False, f"recordings ({s})")
            return json.loads(b)["recordings"]

        def entries():
            s, _, b = get("/metrics")
            text = b.decode()
            return (metric_in(text, "keeppeek_recorderd_picture_cache_entries"),
                    metric_in(text, "keeppeek_recorderd_picture_cache_purged_total"))

        check(wait_for(lambda: len([r for r in sub_recordings() if not r["open"]]) >= 2, 30.0, 0.2),
              "two closed sub recordings")
        first = sub_recordings()[:2]
        kfs = set()
        for r in first:
            for t in range(r["start_ms"], r["end_ms"], 250):
                s, h, b = get(f"/api/v1/cameras/front/thumbnail?t={t}&stream=sub")
                check(s == 200 and b[:2] == b"\xff\xd8", f"preview at {t} ({s} {b[:200]!r})")
                kfs.add(h.get("keyframe-time"))
        held, purged0 = entries()
        print(f"{len(kfs)} keyframes of recordings {[r['id'] for r in first]} previewed; cache {held} entries")
        check(held == len(kfs), f"one cache entry per keyframe ({held} for {len(kfs)})")
        ids = {r["id"] for r in first}
        check(wait_for(lambda: not ids & {r["id"] for r in sub_recordings()}, 90.0, 0.5),
              "retention deleted the two recordings")
        check(wait_for(lambda: entries()[0] == 0, 5.0, 0.05), "their pictures left the cache at once")
        left, purged = entries()
        print(f"after retention: cache {left} entries, {purged - purged0} purged")
        check(purged - purged0 == held, f"each one counted as purged ({purged - purged0} of {held})")
        s, _, b = get(f"/api/v1/cameras/front/thumbnail?t={first[0]['start_ms']}&stream=sub")
        check(s == 404 and json.loads(b).get("code") == "no_recording", f"no preview any more ({s} {b[:200]!r})")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
