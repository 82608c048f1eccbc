#!/usr/bin/env python3
"""A small external analysis service for KeepPeek: watches one camera's sub stream and
publishes events with a JPEG over the HTTP API (POST /api/v1/events, API token).

    analysis_client.py --url http://127.0.0.1:8080 --token-file ~/.keeppeek-token \\
        --camera front-door [--mode motion|schedule] [--interval 2]

Every --interval seconds it fetches the last --span seconds of the camera's recorded
sub stream (GET /api/v1/export, an MP4 clip, no transcoding), decodes it with Debian's
ffmpeg into the last frame as a small grayscale image (for the detector) and as a JPEG
(for the event), and asks the detector what it sees:

* --mode motion (default): a frame-difference heuristic. The share of pixels whose gray
  level moved by more than --threshold since the previous frame; at or above --min-area
  it is motion. The first frame with motion opens an event (revision 1); while motion
  goes on the same event is republished with a higher revision (a longer end time, the
  newest JPEG) at most every --update seconds; after --hold seconds without motion the
  event is closed with a last revision.
* --mode schedule: one event per --every seconds with the current frame, label
  "snapshot".

Replace FrameDifference with a real detector (README.md says how): it gets the frame and
returns labels and boxes; the rest (fetching, JPEG, revisions, retries) stays. Python 3
standard library and ffmpeg only."""
import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

GRAY_W, GRAY_H = 160, 90  # the detector's view of a frame


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status, self.body = status, body


class KeepPeek:
    """The two API calls this client makes, with `Authorization: Bearer TOKEN`."""

    def __init__(self, url, token, timeout=30.0):
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout

    def _call(self, method, path, body=None, ctype=None):
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if ctype:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read().decode("utf-8", "replace")) from None

    def export(self, camera, stream, from_ms, to_ms):
        """An MP4 clip of [from_ms, to_ms) starting at the keyframe at or before from_ms."""
        q = urllib.parse.urlencode({"camera": camera, "stream": stream, "from": from_ms, "to": to_ms})
        return self._call("GET", "/api/v1/export?" + q)

    def publish(self, event, jpeg):
        """Publishes one revision; returns {"id", "revision", "committed_ms"} once it is
        durably committed. 409: this revision is not higher than the stored one."""
        body = dict(event)
        if jpeg is not None:
            body["jpeg_base64"] = base64.b64encode(jpeg).decode()
        data = self._call("POST", "/api/v1/events", json.dumps(body).encode(), "application/json")
        return json.loads(data)


def last_frame(mp4):
    """(gray bytes GRAY_W x GRAY_H, JPEG bytes) of the clip's last frame, decoded by ffmpeg
    in one pass: one branch scaled to gray for the detector, one encoded as JPEG."""
    with tempfile.TemporaryDirectory(prefix="kp-analysis-") as d:
        src, jpg = os.path.join(d, "clip.mp4"), os.path.join(d, "last.jpg")
        with open(src, "wb") as f:
            f.write(mp4)
        r = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", src, "-filter_complex",
                            f"[0:v]split=2[a][b];[a]scale={GRAY_W}:{GRAY_H},format=gray[g]",
                            "-map", "[g]", "-f", "rawvideo", "pipe:1",
                            "-map", "[b]", "-update", "1", "-q:v", "3", "-y", jpg],
                           capture_output=True, timeout=60)
        frame = GRAY_W * GRAY_H
        if r.returncode != 0 or len(r.stdout) < frame or not os.path.exists(jpg):
            raise RuntimeError(f"ffmpeg could not decode the clip ({len(mp4)} bytes): "
                               f"{r.stderr.decode('utf-8', 'replace').strip()[:300]}")
        with open(jpg, "rb") as f:
            return r.stdout[-frame:], f.read()


class FrameDifference:
    """The stand-in detector: motion = share of pixels that changed by more than
    `threshold` gray levels since the previous frame. Returns a list of detections
    [{"label", "score", "box": (x, y, w, h) normalized}] like a real detector would."""

    def __init__(self, threshold, min_area):
        self.threshold, self.min_area = threshold, min_area
        self.prev = None

    def detect(self, gray, jpeg):
        prev, self.prev = self.prev, gray
        if prev is None:
            return []
        x0, y0, x1, y1, changed = GRAY_W, GRAY_H, -1, -1, 0
        t = self.threshold
        for i, (a, b) in enumerate(zip(prev, gray)):
            if abs(a - b) > t:
                changed += 1
                x, y = i % GRAY_W, i // GRAY_W
                x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
        share = changed / float(GRAY_W * GRAY_H)
        if share < self.min_area:
            return []
        box = (x0 / GRAY_W, y0 / GRAY_H, (x1 - x0 + 1) / GRAY_W, (y1 - y0 + 1) / GRAY_H)
        return [{"label": "motion", "score": round(min(1.0, share / self.min_area / 10 + 0.5), 3), "box": box,
                 "changed": round(share, 4)}]


class MotionEvents:
    """Turns per-frame detections into events with revisions: open, update, close."""

    def __init__(self, api, camera, stream, update_s, hold_s, log):
        self.api, self.camera, self.stream = api, camera, stream
        self.update_s, self.hold_s, self.log = update_s, hold_s, log
        self.ev = None  # the open event
        self.last_motion = 0.0
        self.last_sent = 0.0
        self.jpeg = None  # the newest JPEG: a revision replaces the whole event, JPEG included

    def _send(self, dets, jpeg, now_ms):
        ev = dict(self.ev)
        if dets:
            ev["labels"] = [{"name": d["label"], "score": d["score"]} for d in dets]
            ev["boxes"] = [{"label": d["label"], "score": d["score"], "x": d["box"][0], "y": d["box"][1],
                            "w": d["box"][2], "h": d["box"][3]} for d in dets]
            ev["attributes"] = {"detector": "frame-difference", "changed": str(dets[0].get("changed", ""))}
        ev["end_ms"] = max(ev["start_ms"], now_ms)
        self.jpeg = jpeg or self.jpeg
        while True:
            try:
                ack = self.api.publish(ev, self.jpeg)
                break
            except ApiError as e:
                if e.status != 409:
                    raise
                ev["revision"] += 1  # someone (an earlier run) holds this revision: go past it
        self.ev.update({k: ev[k] for k in ("revision", "end_ms")})
        self.ev["labels"], self.ev["boxes"] = ev.get("labels", []), ev.get("boxes", [])
        self.ev["attributes"] = ev.get("attributes", {})
        self.log(f"published {ack['id']} revision {ack['revision']} (committed {ack['committed_ms']})")
        self.last_sent = time.monotonic()
        self.ev["revision"] += 1

    def close(self, now_ms):
        """The last revision of the open event (its final end time), on exit."""
        if self.ev is not None:
            self._send([], None, now_ms)
            self.ev = None

    def frame(self, dets, jpeg, now_ms):
        now = time.monotonic()
        if dets:
            self.last_motion = now
            if self.ev is None:
                self.ev = {"id": f"{self.camera}.frame-diff.{now_ms}", "revision": 1, "camera": self.camera,
                           "stream": self.stream, "start_ms": now_ms, "end_ms": now_ms, "labels": [],
                           "boxes": [], "attributes": {}}
                self._send(dets, jpeg, now_ms)
            elif now - self.last_sent >= self.update_s:
                self._send(dets, jpeg, now_ms)
        elif self.ev is not None and now - self.last_motion >= self.hold_s:
            self._send([], jpeg, now_ms)  # the closing revision: final end time
            self.ev = None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("KEEPPEEK_URL", "http://127.0.0.1:8080"),
                    help="KeepPeek's web address (env KEEPPEEK_URL)")
    ap.add_argument("--token-file", help="file holding the API token (else env KEEPPEEK_TOKEN)")
    ap.add_argument("--camera", required=True)
    ap.add_argument("--stream", default="sub", choices=["sub", "main"])
    ap.add_argument("--mode", default="motion", choices=["motion", "schedule"])
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between frames")
    ap.add_argument("--span", type=float, default=3.0, help="seconds of recording fetched per frame")
    ap.add_argument("--threshold", type=int, default=24, help="gray levels a pixel must move (motion)")
    ap.add_argument("--min-area", type=float, default=0.01, help="share of changed pixels that is motion")
    ap.add_argument("--update", type=float, default=5.0, help="seconds between revisions of an open event")
    ap.add_argument("--hold", type=float, default=6.0, help="seconds without motion that close an event")
    ap.add_argument("--every", type=float, default=60.0, help="seconds between events (schedule)")
    ap.add_argument("--frames", type=int, default=0, help="stop after this many frames (0: run until killed)")
    a = ap.parse_args()
    if a.token_file:
        with open(a.token_file) as f:
            token = f.read().strip()
    else:
        token = os.environ.get("KEEPPEEK_TOKEN", "").strip()
    if not token:
        ap.error("no API token: --token-file or KEEPPEEK_TOKEN (keeppeekctl token create --name N --role publisher)")

    def log(msg):
        print(time.strftime("%H:%M:%S ") + msg, flush=True)
    api = KeepPeek(a.url, token)
    detector = FrameDifference(a.threshold, a.min_area)
    motion = MotionEvents(api, a.camera, a.stream, a.update, a.hold, log)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    frames, next_scheduled, backoff = 0, 0.0, a.interval
    while not stop and (a.frames == 0 or frames < a.frames):
        t = time.monotonic()
        now_ms = int(time.time() * 1000)
        try:
            mp4 = api.export(a.camera, a.stream, now_ms - int(a.span * 1000), now_ms)
            gray, jpeg = last_frame(mp4)
            frames += 1
            if a.mode == "schedule":
                if t >= next_scheduled:
                    ack = api.publish({"id": f"{a.camera}.schedule.{now_ms}", "revision": 1, "camera": a.camera,
                                       "stream": a.stream, "start_ms": now_ms, "end_ms": now_ms,
                                       "labels": [{"name": "snapshot", "score": 1.0}],
                                       "attributes": {"detector": "schedule"}}, jpeg)
                    log(f"published {ack['id']} revision {ack['revision']} (committed {ack['committed_ms']})")
                    next_scheduled = t + a.every
            else:
                motion.frame(detector.detect(gray, jpeg), jpeg, now_ms)
            backoff = a.interval
        except (ApiError, RuntimeError, OSError, urllib.error.URLError) as e:
            # Nothing recorded yet, KeepPeek restarting, network trouble: say so, back off.
            log(f"{a.camera}: {e}; retrying in {backoff:.0f} s")
            time.sleep(backoff)
            backoff = min(backoff * 2, 60.0)
            continue
        time.sleep(max(0.0, t + a.interval - time.monotonic()))
    motion.close(int(time.time() * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
