"""A picture for every event (issue 20, decision 0021): camera motion alarms have no JPEG
of their own; their /thumbnail is their linked sub keyframe decoded in the transcoder
(started on demand for recorderd), 320 px wide, and /snapshot the main keyframe at full
size:
- the thumbnail is a 320-px-wide JPEG whose pixels match (PSNR >= 30 dB, ffmpeg's psnr
  filter) the first frame ffmpeg decodes from an export of the sub recording starting at
  the linked keyframe, scaled by ffmpeg to 320 px;
- the snapshot is 1920 px wide;
- 1,000 thumbnail requests in a row over the camera's events are all 200, each picture is
  made once (keeppeek_recorderd_pictures_total{result="made"}) and served from the cache
  after, which stays within its bound (keeppeek_recorderd_picture_cache_bytes);
- recorderd's ceiling of pictures waiting for the transcoder, one past it: with the
  transcoder stopped (SIGSTOP), 16 snapshot requests wait (keeppeek_recorderd_pictures_waiting),
  the 17th is a 503 "busy" at once and counted; once the transcoder goes on, each of the
  16 is its 1920-px JPEG (recorderd hands the transcoder two at a time, the most it takes);
- an event without a recorded keyframe (published before any recording) is a 404;
- a keyframe that does not decode (its NAL payloads overwritten in the recording file,
  lengths and NAL headers kept) makes /snapshot a 500 "picture_failed", counted, with no
  worker restarted."""
import glob
import json
import os
import random
import re
import signal
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
CACHE_BOUND = 8 << 20  # REC_PICTURE_CACHE_BYTES
PENDING = 16  # REC_PICTURE_PENDING


def nals(annexb):
    """The NAL units of Annex-B bytes (4-byte start codes, as /keyframe answers)."""
    parts = annexb.split(b"\x00\x00\x00\x01")
    return [p for p in parts if p]


def corrupt_keyframe(data, annexb):
    """Overwrites, in the recordings, the payload of every NAL unit of the keyframe (the
    MP4 sample: 4-byte lengths) after its header byte, at every place it is (the test
    camera loops its fixture: equal keyframes recur). How many were overwritten."""
    sample = b"".join(len(n).to_bytes(4, "big") + n for n in nals(annexb))
    rnd = random.Random(20)
    done = 0
    for path in glob.glob(os.path.join(data, "recordings", "**", "*.mp4"), recursive=True):
        with open(path, "r+b") as f:
            blob = f.read()
            at = blob.find(sample)
            while at >= 0:
                pos = at
                for n in nals(annexb):
                    f.seek(pos + 5)
                    f.write(bytes(rnd.randrange(256) for _ in range(len(n) - 1)))
                    pos += 4 + len(n)
                done += 1
                at = blob.find(sample, at + 1)
    return done


def test(make):
    work = tempfile.mkdtemp(prefix="kp-evth-")
    cam = TestCamera(work, "front", "h264", "baichuan", "aes", extra=("--motion-interval", "5"))
    try:
        kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\n')
        kp.wait_running()
        wait_streaming(kp, "front", timeout=10.0)
        auth = {"Authorization": "Bearer " + kp.token()}

        get = kp.get

        def linked():
            s, _, b = get("/api/v1/events?camera=front&limit=100")
            evs = json.loads(b)["events"] if s == 200 else []
            return [e for e in evs if e.get("source") == "camera" and len(e.get("keyframes", [])) == 2]

        check(wait_for(lambda: len(linked()) >= 3, 40.0, 0.5), "three camera events with their keyframes")
        evs = linked()
        e = evs[-1]
        sub_ms = {x["stream"]: x["time_ms"] for x in e["keyframes"]}["sub"]
        t0 = time.monotonic()
        s, h, thumb = get(f"/api/v1/events/{e['id']}/thumbnail")
        print(f"first thumbnail (transcoder started on demand): {s}, {len(thumb)} bytes, "
              f"{(time.monotonic() - t0) * 1000:.0f} ms")
        check(s == 200 and h.get("content-type", "").startswith("image/jpeg") and thumb[:2] == b"\xff\xd8",
              f"the camera event's thumbnail is a JPEG ({s} {thumb[:100]!r})")
        tpath = os.path.join(work, "thumb.jpg")
        with open(tpath, "wb") as f:
            f.write(thumb)
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                                tpath], capture_output=True, text=True)
        check(probe.stdout.strip() == "320,180", f"320 px wide: {probe.stdout.strip()}")

        s, _, mp4 = get(f"/api/v1/export?camera=front&stream=sub&from={sub_ms}&to={sub_ms + 1000}")
        check(s == 200 and len(mp4) > 1000, f"export of the sub stream at the keyframe ({s}, {len(mp4)} bytes)")
        mpath = os.path.join(work, "at-keyframe.mp4")
        with open(mpath, "wb") as f:
            f.write(mp4)
        r = subprocess.run(["ffmpeg", "-hide_banner", "-i", tpath, "-i", mpath, "-lavfi",
                            "[1:v]trim=end_frame=1,scale=320:-2,format=yuv420p[ref];[0:v]format=yuv420p[t];"
                            "[t][ref]psnr", "-f", "null", "-"], capture_output=True, text=True)
        m = re.search(r"average:([0-9.]+|inf)", r.stderr)
        db = float(m.group(1)) if m else 0.0
        print(f"thumbnail against ffmpeg's frame at the keyframe: PSNR {db} dB")
        check(db >= 30.0, f"PSNR >= 30 dB ({db}; {r.stderr[-300:]})")

        s, _, snap = get(f"/api/v1/events/{e['id']}/snapshot")
        spath = os.path.join(work, "snap.jpg")
        with open(spath, "wb") as f:
            f.write(snap)
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width", "-of", "csv=p=0", spath],
                               capture_output=True, text=True)
        check(s == 200 and probe.stdout.strip() == "1920", f"the snapshot is the main keyframe, 1920 px wide ({s})")

        ids = [x["id"] for x in evs]
        bad = 0
        t0 = time.monotonic()
        for i in range(1000):
            s, _, b = get(f"/api/v1/events/{ids[i % len(ids)]}/thumbnail")
            bad += s != 200 or b[:2] != b"\xff\xd8"
        took = time.monotonic() - t0
        print(f"1,000 thumbnails of {len(ids)} events in {took:.1f} s")
        check(bad == 0, f"1,000 thumbnail requests answer a JPEG ({bad} did not)")
        s, _, b = get("/metrics")
        text = b.decode()
        made = metric_in(text, 'keeppeek_recorderd_pictures_total{result="made"}')
        cached = metric_in(text, 'keeppeek_recorderd_pictures_total{result="cached"}')
        size = metric_in(text, "keeppeek_recorderd_picture_cache_bytes")
        print(f"made {made}, from the cache {cached}, cache {size} bytes")
        check(made == len(ids) + 1, f"each picture made once: {len(ids)} thumbnails and one snapshot ({made})")
        check(cached == 1000 - (len(ids) - 1), f"the rest served from the cache ({cached})")
        check(size is not None and 0 < size <= CACHE_BOUND, f"the cache within its bound ({size})")
        check(metric_in(text, 'keeppeek_recorderd_pictures_total{result="decode_failed"}') == 0, "no decode failed")

        # One past the pictures that may wait: the transcoder runs (this snapshot keeps it
        # from lingering out) and is stopped while the requests come.
        s, _, b = get(f"/api/v1/events/{e['id']}/snapshot")
        check(s == 200, f"a snapshot starts the transcoder ({s})")
        tx = kp.status()["transcoder"]["pid"]
        check(tx > 0, "the transcoder runs")
        answers = [None] * PENDING

        def ask(i):
            answers[i] = get(f"/api/v1/events/{e['id']}/snapshot")

        def waiting():
            return metric_in(get("/metrics")[2].decode(), "keeppeek_recorderd_pictures_waiting")

        os.kill(tx, signal.SIGSTOP)
        try:
            askers = [threading.Thread(target=ask, args=(i,)) for i in range(PENDING)]
            for t in askers:
                t.start()
            check(wait_for(lambda: waiting() == PENDING, 10.0, 0.05), f"{PENDING} pictures wait ({waiting()})")
            s, _, b = get(f"/api/v1/events/{e['id']}/snapshot")
            check(s == 503 and json.loads(b).get("code") == "busy", f"the {PENDING + 1}th: 503 busy ({s} {b[:200]!r})")
        finally:
            os.kill(tx, signal.SIGCONT)
        for t in askers:
            t.join(40)
        good = [a for a in answers if a and a[0] == 200 and a[2][:2] == b"\xff\xd8"]
        check(len(good) == PENDING, f"each of the {PENDING} waiting is its JPEG "
              f"({[a[0] if a else None for a in answers]}, {[a[2][:80] for a in answers if a and a[0] != 200][:2]})")
        text = get("/metrics")[2].decode()
        check(metric_in(text, 'keeppeek_recorderd_pictures_total{result="busy"}') == 1, "the one refused is counted")
        check(metric_in(text, 'keeppeek_recorderd_pictures_total{result="decode_failed"}') == 0, "none failed")
        check(metric_in(text, "keeppeek_recorderd_pictures_waiting") == 0, "none waits")
        refused = [line for line in kp.log_text().splitlines() if "picture jobs run" in line]
        check(not refused, f"recorderd gave the transcoder no more than it takes at once ({refused[:2]})")

        old = int(time.time() * 1000) - 3600000
        s, _, b = kp.http("POST", "/api/v1/events", headers=dict(auth, **{"Content-Type": "application/json"}),
                          body=json.dumps({"id": "before-any", "revision": 1, "camera": "front", "start_ms": old,
                                           "labels": [{"name": "person", "score": 0.9}]}))
        check(s in (200, 201), f"an event from before any recording is published ({s} {b[:200]!r})")
        s, _, b = get("/api/v1/events/before-any/thumbnail")
        check(s == 404 and json.loads(b).get("code") == "not_found", f"its thumbnail is a 404 ({s} {b[:200]!r})")

        s, _, kf = get(f"/api/v1/events/{e['id']}/keyframe?stream=main")
        check(s == 200 and corrupt_keyframe(kp.data, kf) >= 1, "the event's main keyframe is overwritten in its file")
        s, _, b = get(f"/api/v1/events/{e['id']}/snapshot")
        check(s == 500 and json.loads(b).get("code") == "picture_failed",
              f"a keyframe that does not decode: 500 picture_failed ({s} {b[:200]!r})")
        s, _, b = get("/metrics")
        check(metric_in(b.decode(), 'keeppeek_recorderd_pictures_total{result="decode_failed"}') == 1,
              "the failure is counted")
        s, _, b = get(f"/api/v1/events/{e['id']}/thumbnail")
        check(s == 200 and b[:2] == b"\xff\xd8", "the (cached) thumbnail still answers; recorderd and the transcoder go on")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
