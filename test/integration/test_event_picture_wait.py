"""The picture of a fresh event waits for its video (picture.h, decision 0039): a camera
alarm is stored at once, while the GOP that holds its start is still being written (it
commits when the next keyframe comes), so its /thumbnail and /snapshot wait for that GOP
instead of answering 404 (what the clean-clone CI run saw, test_timeline_preview):
- a camera alarm asked for while it has no keyframe link yet is a 320-px JPEG, and the
  event has both links after (keeppeek_recorderd_picture_video_waits_total{result="came"});
- its /keyframe (for a detector) is a 503 "not_yet_recorded" while it waits, not a 404;
- recorderd's ceiling of pictures waiting for their video, one past it: 32 thumbnails of
  published events starting 3 s ahead wait (keeppeek_recorderd_pictures_waiting_video),
  the 33rd is a 503 "busy" at once; each of the 32 is a JPEG once their GOP is recorded
  (16 at a time go to the transcoder's queue; the rest wait for room);
- the wait's bound, one past it: an event starting a minute ahead (no video of it can be
  recorded in time) is a 404 after REC_PICTURE_GOP_WAIT_MS, counted as result="none";
- an event from before any recording is still a 404 at once."""
import json
import subprocess
import tempfile
import threading
import time

from kp import TestCamera, check, metric_in, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""
GOP_WAITING = 32  # REC_PICTURE_GOP_WAITING
GOP_WAIT_MS = 8000  # REC_PICTURE_GOP_WAIT_MS


def test(make):
    work = tempfile.mkdtemp(prefix="kp-evwait-")
    cam = TestCamera(work, "front", "h264", "baichuan", "aes", extra=("--motion-interval", "3"))
    try:
        kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\n')
        kp.wait_running()
        wait_streaming(kp, "front", timeout=10.0)
        auth = {"Authorization": "Bearer " + kp.token(), "Content-Type": "application/json"}
        get = kp.get

        def metric(name):
            s, _, b = get("/metrics")
            check(s == 200, f"/metrics ({s})")
            return metric_in(b.decode(), name) or 0

        def camera_events():
            s, _, b = get("/api/v1/events?camera=front&limit=100")
            return [e for e in json.loads(b)["events"] if e.get("source") == "camera"] if s == 200 else []

        def publish(eid, start_ms):
            s, _, b = kp.http("POST", "/api/v1/events", headers=auth,
                              body=json.dumps({"id": eid, "revision": 1, "camera": "front", "start_ms": start_ms,
                                               "labels": [{"name": "person", "score": 0.9}]}))
            check(s in (200, 201), f"event {eid} is published ({s} {b[:200]!r})")

        check(wait_for(lambda: any(e.get("keyframes") for e in camera_events()), 30.0, 0.2),
              "a camera alarm with its keyframes: the recording runs")

        # A camera alarm asked for at once.
        seen = {e["id"] for e in camera_events()}
        fresh = None
        deadline = time.monotonic() + 20.0
        while fresh is None and time.monotonic() < deadline:
            for e in camera_events():
                if e["id"] not in seen and not e.get("keyframes"):
                    fresh = e
                seen.add(e["id"])
            time.sleep(0.02)
        check(fresh is not None, "a camera alarm is listed before its GOP is recorded (no keyframe link)")
        s, _, b = get(f"/api/v1/events/{fresh['id']}/keyframe?stream=sub")
        check(s in (503, 200), f"its keyframe meanwhile: 503 or, recorded already, 200 ({s} {b[:200]!r})")
        if s == 503:
            check(json.loads(b).get("code") == "not_yet_recorded", f"503 not_yet_recorded ({b[:200]!r})")
        t0 = time.monotonic()
        s, _, thumb = get(f"/api/v1/events/{fresh['id']}/thumbnail")
        took = (time.monotonic() - t0) * 1000
        print(f"fresh alarm {fresh['id']}: thumbnail {s} after {took:.0f} ms")
        check(s == 200 and thumb[:2] == b"\xff\xd8", f"its thumbnail waits and is a JPEG ({s} {thumb[:40]!r})")
        path = f"{work}/fresh.jpg"
        with open(path, "wb") as f:
            f.write(thumb)
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width", "-of", "csv=p=0", path],
                               capture_output=True, text=True)
        check(probe.stdout.strip() == "320", f"320 px wide ({probe.stdout.strip()})")
        s, _, b = get(f"/api/v1/events/{fresh['id']}")
        check(s == 200 and len(json.loads(b).get("keyframes", [])) == 2, f"the alarm has both links now ({b[:300]!r})")
        check(metric('keeppeek_recorderd_picture_video_waits_total{result="came"}') >= 1, "the wait is counted")

        # 32 wait, the 33rd is refused; each of the 32 is its JPEG.
        ahead = int(time.time() * 1000) + 3000
        for i in range(GOP_WAITING + 1):
            publish(f"ahead-{i}", ahead)
        results = [None] * GOP_WAITING

        def ask(i):
            s, _, b = get(f"/api/v1/events/ahead-{i}/thumbnail", timeout=40)
            results[i] = (s, b)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(GOP_WAITING)]
        for t in threads:
            t.start()
        check(wait_for(lambda: metric("keeppeek_recorderd_pictures_waiting_video") == GOP_WAITING, 5.0, 0.05),
              f"{GOP_WAITING} pictures wait for their video")
        busy = metric('keeppeek_recorderd_pictures_total{result="busy"}')
        s, _, b = get(f"/api/v1/events/ahead-{GOP_WAITING}/thumbnail")
        check(s == 503 and json.loads(b).get("code") == "busy", f"one more: 503 busy ({s} {b[:200]!r})")
        check(metric('keeppeek_recorderd_pictures_total{result="busy"}') == busy + 1, "the one refused is counted")
        for t in threads:
            t.join()
        good = [r for r in results if r and r[0] == 200 and r[1][:2] == b"\xff\xd8"]
        check(len(good) == GOP_WAITING,
              f"each of the {GOP_WAITING} is its JPEG ({[r[0] if r else None for r in results]})")
        check(metric("keeppeek_recorderd_pictures_waiting_video") == 0, "none waits")

        # One whose video cannot come in time.
        none = metric('keeppeek_recorderd_picture_video_waits_total{result="none"}')
        publish("far-ahead", int(time.time() * 1000) + 60000)
        t0 = time.monotonic()
        s, _, b = get("/api/v1/events/far-ahead/snapshot", timeout=40)
        took = (time.monotonic() - t0) * 1000
        print(f"an event a minute ahead: {s} after {took:.0f} ms")
        check(s == 404 and json.loads(b).get("code") == "not_found", f"a 404 ({s} {b[:200]!r})")
        check(GOP_WAIT_MS - 500 <= took, f"after the wait's bound, {GOP_WAIT_MS} ms ({took:.0f})")
        check(metric('keeppeek_recorderd_picture_video_waits_total{result="none"}') == none + 1, "counted as none")

        publish("before-any", int(time.time() * 1000) - 3600000)
        t0 = time.monotonic()
        s, _, b = get("/api/v1/events/before-any/thumbnail")
        took = (time.monotonic() - t0) * 1000
        check(s == 404 and took < GOP_WAIT_MS / 2, f"an event before any recording: a 404 at once ({s}, {took:.0f} ms)")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
