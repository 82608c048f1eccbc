"""The timeline's hover preview (issue 20, decision 0025): GET
/api/v1/cameras/CAM/thumbnail?t=MS is the keyframe at or before t (the sub stream's, or
?stream=main), made 320 px wide in the transcoder, with the span of its GOP in
Keyframe-Time and Keyframe-Until, and cached by keyframe:
- the picture is a 320-px-wide JPEG whose pixels match (PSNR >= 30 dB, ffmpeg's psnr
  filter) the first frame ffmpeg decodes from an export starting at that keyframe;
- another time in the same GOP is served from the cache, not made again;
- a time no recording covers is a 404 "no_recording", an unknown camera a 404
  "not_found"; t negative, past int64, not a number or missing is a 400;
- 1,000 requests in a row over the recorded span are all JPEGs, each keyframe made once,
  the cache within its bound (keeppeek_recorderd_picture_cache_bytes);
- a delete of a recording and of an event drops their pictures from the cache at once
  (keeppeek_recorderd_picture_cache_entries, ..._purged_total), not by LRU order."""
import json
import os
import re
import subprocess
import tempfile
import time

from kp import TestCamera, check, metric_in, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""
CACHE_BOUND = 8 << 20  # REC_PICTURE_CACHE_BYTES


def psnr_at_keyframe(get, work, jpeg, stream, kms):
    """PSNR of jpeg against the first frame ffmpeg decodes from an export of the stream at
    kms, scaled by ffmpeg to 320 px."""
    tpath = os.path.join(work, f"preview-{stream}.jpg")
    with open(tpath, "wb") as f:
        f.write(jpeg)
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width", "-of", "csv=p=0", tpath],
                           capture_output=True, text=True)
    check(probe.stdout.strip() == "320", f"{stream}: 320 px wide ({probe.stdout.strip()})")
    s, _, mp4 = get(f"/api/v1/export?camera=front&stream={stream}&from={kms}&to={kms + 1000}")
    check(s == 200 and len(mp4) > 1000, f"export of {stream} at the keyframe ({s}, {len(mp4)} bytes)")
    mpath = os.path.join(work, f"at-{stream}.mp4")
    with open(mpath, "wb") as f:
        f.write(mp4)
    r = subprocess.run(["ffmpeg", "-hide_banner", "-i", tpath, "-i", mpath, "-lavfi",
                        "[1:v]trim=end_frame=1,scale=320:-2,format=yuv420p[ref];[0:v]format=yuv420p[t];"
                        "[t][ref]psnr", "-f", "null", "-"], capture_output=True, text=True)
    m = re.search(r"average:([0-9.]+|inf)", r.stderr)
    db = float(m.group(1)) if m else 0.0
    print(f"{stream} preview against ffmpeg's frame at the keyframe: PSNR {db} dB")
    check(db >= 30.0, f"PSNR >= 30 dB ({db}; {r.stderr[-300:]})")


def test(make):
    work = tempfile.mkdtemp(prefix="kp-tlprev-")
    cam = TestCamera(work, "front", "h264", "baichuan", "aes", extra=("--motion-interval", "5"))
    try:
        kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\nrollover_secs = 8\n')
        kp.wait_running()
        wait_streaming(kp, "front", timeout=10.0)
        auth = {"Authorization": "Bearer " + kp.token()}

        get = kp.get

        def recordings(stream):
            s, _, b = get(f"/api/v1/recordings?camera=front&stream={stream}&from=0&to={int(time.time() * 1000) + 60000}")
            if s != 200:
                check(False, f"recordings ({s} {b[:200]!r})")
            return json.loads(b)["recordings"]

        def metrics():
            s, _, b = get("/metrics")
            if s != 200:
                check(False, f"/metrics ({s})")
            return b.decode()

        def span(stream):
            recs = recordings(stream)
            return (recs[0]["start_ms"], recs[-1]["end_ms"]) if recs else (0, 0)

        check(wait_for(lambda: span("sub")[1] - span("sub")[0] >= 20000 and span("main")[1] - span("main")[0] >= 20000,
                       60.0, 0.5), "20 s of both streams recorded")
        t_from, t_to = span("sub")
        t = t_from + 7000

        t0 = time.monotonic()
        s, h, jpeg = get(f"/api/v1/cameras/front/thumbnail?t={t}")
        print(f"first preview (transcoder started on demand): {s}, {len(jpeg)} bytes, "
              f"{(time.monotonic() - t0) * 1000:.0f} ms, {h.get('keyframe-time')}..{h.get('keyframe-until')}")
        check(s == 200 and h.get("content-type", "").startswith("image/jpeg") and jpeg[:2] == b"\xff\xd8",
              f"the preview is a JPEG ({s} {jpeg[:200]!r})")
        kms, until = int(h.get("keyframe-time", "0")), int(h.get("keyframe-until", "0"))
        check(kms <= t < until, f"its keyframe is at or before t and its GOP covers t ({kms} <= {t} < {until})")
        psnr_at_keyframe(get, work, jpeg, "sub", kms)

        text = metrics()
        made = metric_in(text, 'keeppeek_recorderd_pictures_total{result="made"}')
        s, h2, again = get(f"/api/v1/cameras/front/thumbnail?t={until - 1}")
        check(s == 200 and again == jpeg and int(h2.get("keyframe-time", "0")) == kms,
              "another time of the same GOP answers the same picture")
        text = metrics()
        check(metric_in(text, 'keeppeek_recorderd_pictures_total{result="made"}') == made,
              "from the cache: not made again")

        s, h, main = get(f"/api/v1/cameras/front/thumbnail?t={t}&stream=main")
        check(s == 200 and main[:2] == b"\xff\xd8", f"stream=main answers a JPEG ({s})")
        psnr_at_keyframe(get, work, main, "main", int(h.get("keyframe-time", "0")))

        for path, code in ((f"/api/v1/cameras/front/thumbnail?t={t_from - 3600000}", "no_recording"),
                           ("/api/v1/cameras/front/thumbnail?t=1000", "no_recording"),
                           (f"/api/v1/cameras/nosuch/thumbnail?t={t}", "not_found")):
            s, _, b = get(path)
            check(s == 404 and json.loads(b).get("code") == code, f"{path}: 404 {code} ({s} {b[:200]!r})")
        for q in ("t=-5", "t=99999999999999999999", "t=abc", "t=", "t=12x", "", f"t={t}&stream=third"):
            s, _, b = get(f"/api/v1/cameras/front/thumbnail?{q}")
            check(s == 400 and json.loads(b).get("code") == "bad_parameter", f"?{q}: 400 ({s} {b[:200]!r})")
        s, _, b = get(f"/api/v1/cameras/a.b/thumbnail?t={t}")
        check(s == 400 and json.loads(b).get("code") == "bad_camera", f"a camera name with a dot: 400 ({s})")
        for path in ("/api/v1/cameras/front/snapshot?t=1", "/api/v1/cameras/front", "/api/v1/cameras/a%2Fb/thumbnail"):
            s, _, b = get(path)
            check(s in (400, 404), f"{path}: refused ({s} {b[:120]!r})")
        s, _, b = kp.http("GET", f"/api/v1/cameras/front/thumbnail?t={t}")
        check(s == 401, f"no credentials: 401 ({s})")

        t_from, t_to = span("sub")
        bad, kfs = 0, set()
        t0 = time.monotonic()
        for i in range(1000):
            s, h, b = get(f"/api/v1/cameras/front/thumbnail?t={t_from + (t_to - t_from - 1) * i // 999}")
            bad += s != 200 or b[:2] != b"\xff\xd8"
            kfs.add(h.get("keyframe-time"))
        took = time.monotonic() - t0
        text = metrics()
        made_after = metric_in(text, 'keeppeek_recorderd_pictures_total{result="made"}')
        size = metric_in(text, "keeppeek_recorderd_picture_cache_bytes")
        entries = metric_in(text, "keeppeek_recorderd_picture_cache_entries")
        print(f"1,000 previews over {t_to - t_from} ms ({len(kfs)} keyframes) in {took:.1f} s; "
              f"made {made_after - made - 1}, cache {entries} entries, {size} bytes")
        check(bad == 0, f"1,000 preview requests answer a JPEG ({bad} did not)")
        check(made_after - made - 1 <= len(kfs), f"each keyframe made once ({made_after - made - 1} for {len(kfs)})")
        check(size is not None and 0 < size <= CACHE_BOUND, f"the cache within its bound ({size})")

        # A delete drops the pictures of what it removed (recordings roll over every 8 s:
        # an open recording is not deleted).
        s, _, b = get("/api/v1/events?camera=front&limit=100")
        evs = [e for e in json.loads(b)["events"] if e.get("source") == "camera"]
        check(len(evs) >= 1, "a camera event")
        s, _, b = get(f"/api/v1/events/{evs[0]['id']}/thumbnail")
        check(s == 200, f"the event's thumbnail ({s})")
        rec = recordings("sub")[0]
        check(not rec["open"], f"the first sub recording is closed ({rec})")
        in_rec = [x for x in range(rec["start_ms"], rec["end_ms"], 1000)]
        for x in in_rec:
            s, _, b = get(f"/api/v1/cameras/front/thumbnail?t={x}")
            check(s == 200, f"preview at {x} in recording {rec['id']} ({s})")
        text = metrics()
        before = metric_in(text, "keeppeek_recorderd_picture_cache_entries")
        purged = metric_in(text, "keeppeek_recorderd_picture_cache_purged_total")
        body = json.dumps({"recordings": [rec["id"]], "events": [evs[0]["id"]]})
        s, _, b = kp.http("POST", "/delete", body=body, headers=dict(auth, **{"Content-Type": "application/json"}))
        res = json.loads(b) if s == 200 else {}
        check(s == 200 and res.get("deleted_recordings") == 1 and res.get("deleted_events") == 1,
              f"the recording and the event are deleted ({s} {b[:300]!r})")
        check(wait_for(lambda: (metric_in(metrics(), "keeppeek_recorderd_picture_cache_purged_total") or 0) > purged,
                       5.0, 0.05), "the cache is swept after the delete")
        text = metrics()
        after = metric_in(text, "keeppeek_recorderd_picture_cache_entries")
        gone = metric_in(text, "keeppeek_recorderd_picture_cache_purged_total") - purged
        print(f"delete of recording {rec['id']} and event {evs[0]['id']}: cache {before} -> {after} entries, "
              f"{gone} purged")
        check(gone >= 2 and after == before - gone, f"their pictures left the cache ({before} -> {after}, {gone})")
        s, _, b = get(f"/api/v1/cameras/front/thumbnail?t={in_rec[0]}&stream=sub")
        check(s == 404 and json.loads(b).get("code") == "no_recording",
              f"the deleted recording has no preview any more ({s} {b[:200]!r})")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
