"""recorderd's answers to webd, end to end through the HTTP API (docs/queries.md), with
one Baichuan test camera (H.264, main and sub) recording:
- coverage and recordings JSON have the documented shapes and describe what is recorded;
- a published event with a JPEG is acknowledged after its commit; the same revision
  again is 409; search finds it by a prefix of an attribute word and by label; its
  JPEG comes back byte-identical, its thumbnail is 320 px wide, its keyframe is the
  H.264 keyframe (Annex-B, an SPS first) that `keeppeekctl keyframe` gives for the
  time of its link;
- an export of 4 s from the middle of a file is one MP4 that ffprobe reads with
  start 0 and a duration within one GOP of 4 s, and that ffmpeg decodes without errors;
- kill -9 of recorderd right after an ack loses nothing: after the restart the event,
  its revision and its JPEG are there, and `keeppeekctl check` is clean;
- recorderd's metrics appear in /metrics."""
import base64
import json
import os
import signal
import subprocess
import tempfile
import time

from kp import FIXTURES, TestCamera, check, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rq-")
    cam = TestCamera(work, "front", "h264", "baichuan", "aes")
    try:
        kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\nrollover_secs = 60\n')
        kp.wait_running()
        wait_streaming(kp, "front", timeout=10.0)
        auth = {"Authorization": "Bearer " + kp.token()}

        get = kp.get

        def publish(ev):
            return kp.http("POST", "/api/v1/events", body=json.dumps(ev),
                           headers=dict(auth, **{"Content-Type": "application/json"}))

        time.sleep(10.0)
        now = int(time.time() * 1000)
        s, h, b = get(f"/api/v1/coverage?from={now - 3600000}&to={now + 1000}")
        check(s == 200, f"coverage answers 200 ({s} {b[:200]!r})")
        cov = json.loads(b)
        check(cov["total_cameras"] == 1 and cov["cameras"][0]["name"] == "front", "coverage lists the camera")
        streams = {x["name"]: x for x in cov["cameras"][0]["streams"]}
        check(set(streams) == {"main", "sub"} and all(len(x["ranges"]) >= 1 for x in streams.values()),
              "coverage has ranges for main and sub")
        check(sum(streams["main"]["buckets"]) >= 7000, f"buckets hold the recorded time: {streams['main']['buckets']}")
        s, h, b = get(f"/api/v1/recordings?from={now - 3600000}&to={now + 1000}")
        recs = json.loads(b)["recordings"] if s == 200 else []
        check(s == 200 and {r["stream"] for r in recs} == {"main", "sub"} and all(
            r["codec"] == "h264" and r["fragments"] >= 1 for r in recs), f"recordings list both files: {recs}")

        jpeg = open(os.path.join(FIXTURES, "snapshot.jpg"), "rb").read()
        ev = {"id": "rq-1", "revision": 1, "camera": "front", "stream": "main", "start_ms": now - 4000,
              "labels": [{"name": "Person", "score": 0.9}], "attributes": [{"key": "color", "value": "Red jacket"}],
              "jpeg_base64": base64.b64encode(jpeg).decode()}
        s, h, b = publish(ev)
        ack = json.loads(b) if s == 200 else {}
        check(s == 200 and ack.get("id") == "rq-1" and ack.get("revision") == 1 and ack.get("committed_ms", 0) >= now,
              f"publish acknowledged: {s} {b!r}")
        s, h, b = publish(ev)
        check(s == 409 and b"revision_conflict" in b, f"the same revision again: 409 ({s} {b!r})")

        for q in ("q=jack", "q=RED+jac", "label=person"):
            s, h, b = get(f"/api/v1/events?{q}")
            found = json.loads(b)["events"] if s == 200 else []
            check(s == 200 and [e["id"] for e in found] == ["rq-1"], f"search {q} finds it")
        s, h, b = get("/api/v1/events?q=blue")
        check(s == 200 and json.loads(b)["events"] == [], "search q=blue finds nothing")

        s, h, b = get("/api/v1/events/rq-1")
        evj = json.loads(b) if s == 200 else {}
        check(evj.get("has_jpeg") is True and evj.get("jpeg_bytes") == len(jpeg), f"event JSON: {evj}")
        s, h, b = get("/api/v1/events/rq-1/snapshot")
        check(s == 200 and b == jpeg, "its JPEG is byte-identical")
        s, h, thumb = get("/api/v1/events/rq-1/thumbnail")
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width", "-of", "csv=p=0", "-"],
                               input=thumb, capture_output=True)
        check(s == 200 and probe.stdout.strip() == b"320", f"thumbnail 320 px wide ({s}, {probe.stdout!r})")
        s, h, kf = get("/api/v1/events/rq-1/keyframe?stream=main")
        check(s == 200 and kf[:5] == b"\x00\x00\x00\x01\x67", f"keyframe: Annex-B H.264 with its SPS first ({s})")
        links = {x["stream"]: x["time_ms"] for x in evj.get("keyframes", [])}
        if "main" in links:
            r = subprocess.run([os.path.join(os.environ["KP_BUILD_ROOT"], "supervisor", "keeppeekctl"), "-s", kp.sock,
                                "keyframe", "front", "main", str(links["main"])], capture_output=True)
            check(r.returncode == 0 and r.stdout == kf, "the same bytes as keeppeekctl keyframe at the linked time")

        # Export 4 s from the middle of the (60 s) file.
        s, h, mp4 = get(f"/api/v1/export?camera=front&stream=main&from={now - 7000}&to={now - 3000}")
        check(s == 200 and len(mp4) > 1000, f"export answers ({s}, {len(mp4)} bytes)")
        path = os.path.join(work, "export.mp4")
        with open(path, "wb") as f:
            f.write(mp4)
        r = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=start_time,duration", "-of", "csv=p=0",
                            path], capture_output=True, text=True)
        start, dur = (float(x) for x in r.stdout.strip().split(","))
        print(f"export: start {start}, duration {dur}")
        check(r.returncode == 0 and start == 0.0 and 4.0 <= dur <= 4.0 + 2.0,
              "ffprobe reads the export from 0 with a duration within one GOP (< 2 s) of 4 s")
        r = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True, text=True)
        check(r.returncode == 0 and not r.stderr.strip(), "ffmpeg decodes the export without errors")

        # kill -9 right after an ack.
        ev2 = dict(ev, revision=2, labels=[{"name": "dog", "score": 0.5}])
        s, h, b = publish(ev2)
        check(s == 200, f"revision 2 acknowledged ({s})")
        pid = kp.status()["recorderd"]["pid"]
        kp.expect_restarts("recorderd")
        os.kill(pid, signal.SIGKILL)
        check(wait_for(lambda: (st := kp.status()) and st["recorderd"]["pid"] not in (0, pid)
                       and st["recorderd"]["state"] == "running", 10.0, 0.05), "recorderd is back")
        kp.wait_running()
        s, h, b = wait_for(lambda: (x := get("/api/v1/events/rq-1"))[0] == 200 and x, 5.0, 0.1) or (0, {}, b"")
        evj = json.loads(b) if s == 200 else {}
        check(evj.get("revision") == 2 and evj["labels"][0]["name"] == "dog", f"after kill -9: revision 2 is there")
        s, h, b = get("/api/v1/events/rq-1/snapshot")
        check(s == 200 and b == jpeg, "after kill -9: its JPEG is there")
        rc, out, err = kp.ctl("check")
        check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"check is clean: {out.strip()}")

        def metrics_show_recording():  # the restarted recorderd resumes at its own pace
            s, h, b = get("/metrics")
            text = b.decode(errors="replace")
            return s == 200 and 'keeppeek_recorderd_recording_state{camera="front",stream="main",' \
                'state="recording"} 1' in text and "keeppeek_recorderd_commit_seconds_count" in text
        check(wait_for(metrics_show_recording, 15, 0.2), "recorderd's metrics are in /metrics")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
