"""Helpers for the events tests (publication, search, live fan-out, export): a keeppeekd
with one test camera and an admin token, and the three encodings of
POST /api/v1/events (JSON, multipart/form-data, application/x-protobuf with the
PublishEvent of proto/analysis.proto, encoded here by hand: stdlib only)."""
import atexit
import base64
import json
import os
import struct
import tempfile
import uuid

from kp import FIXTURES, TestCamera, cameras, check, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""

CAMERA = "front"


def snapshot_jpeg():
    with open(os.path.join(FIXTURES, "snapshot.jpg"), "rb") as f:
        return f.read()


def start(make, camera=True, codec="h264"):
    """keeppeekd with one Baichuan test camera (both streams streaming) and an admin
    token: (kp, token, cam)."""
    work = tempfile.mkdtemp(prefix="kp-ev-")
    config = CONFIG
    cam = None
    if camera:
        cam = TestCamera(work, CAMERA, codec, "baichuan", "aes")
        atexit.register(cam.kill)  # also when the test fails before its own cam.kill()
        config += f'[camera "{CAMERA}"]\nurl = {cam.url()}\n'
    kp = make(config=config)
    kp.wait_running()
    if camera:
        def streaming():
            c = cameras(kp)
            return c and CAMERA in c and all(s["state"] == "streaming" for s in c[CAMERA]["streams"])
        check(wait_for(streaming, 15.0, 0.1), f"camera {CAMERA} streaming: {cameras(kp)}")
    tok = kp.token("admin")
    return kp, tok, cam


def auth(tok, extra=None):
    h = {"Authorization": "Bearer " + tok}
    h.update(extra or {})
    return h


def event(eid, revision=1, start_ms=None, camera=CAMERA, stream="main", labels=(("person", 0.9),),
          attributes=None, end_ms=0, boxes=()):
    import time
    if start_ms is None:
        start_ms = int(time.time() * 1000) - 1000
    return {"id": eid, "revision": revision, "camera": camera, "stream": stream, "start_ms": start_ms,
            "end_ms": end_ms, "labels": [{"name": n, "score": s} for n, s in labels],
            "boxes": [dict(zip(("label", "x", "y", "w", "h", "score"), b)) for b in boxes],
            "attributes": attributes or {}}


def publish_json(kp, tok, ev, jpeg=None, timeout=30):
    body = dict(ev)
    if jpeg is not None:
        body["jpeg_base64"] = base64.b64encode(jpeg).decode()
    st, h, b = kp.http("POST", "/api/v1/events", json.dumps(body),
                       auth(tok, {"Content-Type": "application/json"}), timeout=timeout)
    return st, h, b


def publish_multipart(kp, tok, ev, jpeg=None, timeout=30):
    boundary = "kp-" + uuid.uuid4().hex
    parts = [b"--" + boundary.encode() + b"\r\n"
             b'Content-Disposition: form-data; name="event"\r\nContent-Type: application/json\r\n\r\n' +
             json.dumps(ev).encode() + b"\r\n"]
    if jpeg is not None:
        parts.append(b"--" + boundary.encode() + b"\r\n"
                     b'Content-Disposition: form-data; name="jpeg"; filename="e.jpg"\r\n'
                     b"Content-Type: image/jpeg\r\n\r\n" + jpeg + b"\r\n")
    body = b"".join(parts) + b"--" + boundary.encode() + b"--\r\n"
    return kp.http("POST", "/api/v1/events", body,
                   auth(tok, {"Content-Type": "multipart/form-data; boundary=" + boundary}), timeout=timeout)


def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, value):
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return _varint(num << 3 | 5) + struct.pack("<f", value)
    if isinstance(value, str):
        value = value.encode()
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def encode_publish_event(ev, jpeg=None):
    """keeppeek.analysis.PublishEvent (proto/analysis.proto)."""
    out = _field(1, ev["id"]) + _field(2, ev["revision"]) + _field(3, ev["camera"]) + _field(4, ev["stream"])
    out += _field(5, ev["start_ms"])
    if ev.get("end_ms"):
        out += _field(6, ev["end_ms"])
    for l in ev.get("labels", []):
        out += _field(7, _field(1, l["name"]) + _field(2, float(l["score"])))
    for k, v in ev.get("attributes", {}).items():
        out += _field(9, _field(1, k) + _field(2, v))
    if jpeg is not None:
        out += _field(10, jpeg)
    return out


def decode_fields(data):
    """A protobuf message as {field number: value} (varints and length-delimited)."""
    i, out = 0, {}
    while i < len(data):
        key, i = _read_varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            out[num], i = _read_varint(data, i)
        elif wt == 2:
            n, i = _read_varint(data, i)
            out[num] = data[i:i + n]
            i += n
        else:
            raise ValueError(f"wire type {wt}")
    return out


def _read_varint(data, i):
    shift = v = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def publish_proto(kp, tok, ev, jpeg=None, timeout=30):
    return kp.http("POST", "/api/v1/events", encode_publish_event(ev, jpeg),
                   auth(tok, {"Content-Type": "application/x-protobuf"}), timeout=timeout)


def get_json(kp, tok, path):
    st, h, b = kp.http("GET", path, None, auth(tok))
    return st, (json.loads(b) if h.get("content-type", "").startswith("application/json") and b else None)


def error_of(body):
    """The {"error","code"} of an error answer."""
    try:
        e = json.loads(body)
        return e.get("code"), e.get("error")
    except ValueError:
        return None, body[:200]
