"""GET /api/v1/export, /api/v1/recordings and /api/v1/coverage over HTTP (SPEC 5, 7;
issue 5): an export of 60 s from the middle of a recording is one MP4, streamed with a
Content-Length and as an attachment, that plays in ffprobe/ffmpeg with a duration within
one GOP (1 s for the test camera) of 60 s; nothing recorded -> 404; bad parameters -> 400."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import kp_events as E
from kp import check, run, wait_for

GOP_S = 1.0


def test(make):
    kp, tok, cam = E.start(make)
    t0 = int(time.time() * 1000)

    def recorded(seconds):
        now = int(time.time() * 1000)
        st, got = E.get_json(kp, tok, f"/api/v1/recordings?camera={E.CAMERA}&stream=main&from={t0 - 60000}&to={now}")
        if st != 200:
            raise AssertionError(f"recordings: {st} {got}")
        recs = got["recordings"]
        return recs if recs and recs[0]["end_ms"] - recs[0]["start_ms"] >= seconds * 1000 else None
    recs = wait_for(lambda: recorded(80), 120.0, 1.0)
    check(recs, f"80 s recorded in one file: {recorded(0)}")
    r = recs[0]
    check(r["camera"] == E.CAMERA and r["stream"] == "main" and r["codec"] == "h264", f"recording row: {r}")

    st, cov = E.get_json(kp, tok, f"/api/v1/coverage?from={t0 - 3600000}&to={t0 + 3600000}&bucket=1h")
    check(st == 200 and [c["name"] for c in cov["cameras"]] == [E.CAMERA], f"coverage lists the camera: {st}")
    main = [s for s in cov["cameras"][0]["streams"] if s["name"] == "main"][0]
    check(sum(main["buckets"]) >= 80000 and main["ranges"], f"coverage holds the recorded time: {main}")

    frm = r["start_ms"] + 10000
    to = frm + 60000
    st, h, body = kp.http("GET", f"/api/v1/export?camera={E.CAMERA}&stream=main&from={frm}&to={to}", None,
                          E.auth(tok), timeout=60)
    check(st == 200 and h.get("content-type") == "video/mp4", f"export: 200 video/mp4 ({st} {h} {body[:200]!r})")
    check("attachment" in h.get("content-disposition", ""), f"as an attachment: {h.get('content-disposition')}")
    check(int(h.get("content-length", -1)) == len(body) and len(body) > 100000,
          f"with its Content-Length ({h.get('content-length')}, {len(body)} bytes)")
    path = os.path.join(tempfile.mkdtemp(prefix="kp-export-"), "clip.mp4")
    with open(path, "wb") as f:
        f.write(body)
    p = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration,start_time:stream=codec_name",
                        "-of", "json", path], capture_output=True, text=True)
    check(p.returncode == 0 and not p.stderr.strip(), f"ffprobe reads the clip without errors: {p.stderr[:500]}")
    info = json.loads(p.stdout)
    dur = float(info["format"]["duration"])
    start = float(info["format"].get("start_time", 0))
    check(abs(dur - 60.0) <= GOP_S + 0.05, f"duration {dur:.3f} s within one GOP of 60 s (start_time {start:.3f} s)")
    check(info["streams"][0]["codec_name"] == "h264", "codec h264")
    p = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True,
                       text=True)
    check(p.returncode == 0 and not p.stderr.strip(), f"ffmpeg decodes it without a message: {p.stderr[:500]}")
    shutil.rmtree(os.path.dirname(path))

    # Two exports at a time: a third waits for one of them to finish (503 + Retry-After).
    path = f"/api/v1/export?camera={E.CAMERA}&stream=main&from={frm}&to={to}"
    slow = []
    for _ in range(2):
        s = socket.create_connection(("127.0.0.1", kp.web_port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tok}\r\n\r\n".encode())
        s.recv(1)  # the answer has begun; the rest is left unread
        slow.append(s)
    st, h, b = kp.http("GET", path, None, E.auth(tok))
    check(st == 503 and E.error_of(b)[0] == "busy" and h.get("retry-after"),
          f"a third concurrent export -> 503 busy with Retry-After ({st} {b[:200]!r})")
    for s in slow:
        s.close()

    def served():
        st, h, b = kp.http("GET", path, None, E.auth(tok), timeout=60)
        return st == 200 and len(b) == len(body)
    check(wait_for(served, 10.0, 0.2), "once they are gone, exports are served again")

    st, h, b = kp.http("GET", f"/api/v1/export?camera={E.CAMERA}&stream=main&from=1000&to=2000", None, E.auth(tok))
    check(st == 404 and E.error_of(b)[0] == "nothing_recorded", f"nothing recorded -> 404 ({st} {b!r})")
    st, h, b = kp.http("GET", f"/api/v1/export?camera={E.CAMERA}&from={frm}", None, E.auth(tok))
    check(st == 400 and E.error_of(b)[0] == "bad_parameter", f"missing to -> 400 ({st} {b!r})")
    st, h, b = kp.http("GET", f"/api/v1/export?camera={E.CAMERA}&stream=third&from={frm}&to={to}", None, E.auth(tok))
    check(st == 400, f"bad stream -> 400 ({st})")
    st, h, b = kp.http("GET", f"/api/v1/export?camera={E.CAMERA}&from={frm}&to={to}", None, {})
    check(st == 401, f"export needs authentication ({st})")
    body = json.dumps({"recordings": [r["id"], 999999]})
    st, h, b = kp.http("POST", "/delete", body, E.auth(tok, {"Content-Type": "application/json"}))
    d = json.loads(b) if st == 200 else {}
    check(st == 200 and d.get("busy_recordings") == [r["id"]] and d.get("missing_recordings") == [999999],
          f"delete: the file being written is busy, an unknown id missing ({st} {b!r})")
    cam.kill()


if __name__ == "__main__":
    run(test)
