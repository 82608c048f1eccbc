"""Events publication over HTTP against the real supervisor (SPEC 6, 7; issue 7): JSON,
multipart and protobuf publications with a JPEG are acknowledged only after the durable
commit; the event, its JPEG (byte-identical), thumbnail and keyframe are retrievable;
revision rules (higher replaces, equal or lower -> 409); a JPEG of 16 MiB + 1 -> 413; a
corrupt JPEG -> 400 with a reason; kill -9 of recorderd right after an ack loses nothing."""
import json
import os
import signal
import time

import kp_events as E
from kp import check, fail, run, wait_for

JPEG_MAX = 16 * 1024 * 1024


def test(make):
    kp, tok, cam = E.start(make)
    jpeg = E.snapshot_jpeg()
    time.sleep(3.0)  # a few keyframes indexed, so that the event links one
    now = int(time.time() * 1000)

    # JSON with a JPEG: the ack, then the event, its JPEG, thumbnail and keyframe.
    ev = E.event("det-1", 1, start_ms=now - 1500, end_ms=now - 500, labels=[("person", 0.93)],
                 attributes={"zone": "porch"}, boxes=[("person", 0.1, 0.2, 0.3, 0.4, 0.93)])
    st, h, b = E.publish_json(kp, tok, ev, jpeg)
    check(st == 200, f"JSON publish answered 200 (got {st} {b[:200]!r})")
    ack = json.loads(b)
    check(ack["id"] == "det-1" and ack["revision"] == 1 and ack["committed_ms"] >= now - 60000,
          f"ack has id, revision and committed_ms: {ack}")
    st, got = E.get_json(kp, tok, "/api/v1/events/det-1")
    check(st == 200 and got["id"] == "det-1" and got["revision"] == 1, f"GET the event: {st} {got}")
    check(got["camera"] == E.CAMERA and got["start_ms"] == now - 1500 and got["end_ms"] == now - 500,
          "the event keeps camera and times")
    check([l["name"] for l in got["labels"]] == ["person"] and got["has_jpeg"], "labels and has_jpeg")
    check(got["jpeg_width"] == 640 and got["jpeg_height"] == 360, f"JPEG size read: {got}")
    st, h, snap = kp.http("GET", "/api/v1/events/det-1/snapshot", None, E.auth(tok))
    check(st == 200 and h.get("content-type") == "image/jpeg", f"snapshot 200 image/jpeg ({st}, {h})")
    check(snap == jpeg, f"snapshot byte-identical ({len(snap)} vs {len(jpeg)} bytes)")
    st, h, thumb = kp.http("GET", "/api/v1/events/det-1/thumbnail", None, E.auth(tok))
    check(st == 200 and thumb[:2] == b"\xff\xd8" and thumb[-2:] == b"\xff\xd9", f"thumbnail is a JPEG ({st})")
    for stream in ("main", "sub"):
        st, h, kf = kp.http("GET", f"/api/v1/events/det-1/keyframe?stream={stream}", None, E.auth(tok))
        check(st == 200 and h.get("content-type") == "video/h264",
              f"keyframe {stream}: 200 video/h264 ({st} {h.get('content-type')} {kf[:100]!r})")
        check(kf[:4] == b"\0\0\0\1" or kf[:3] == b"\0\0\1", f"keyframe {stream} is Annex-B")
        nal_types = {kf[i + 3] & 0x1F for i in range(len(kf) - 4) if kf[i:i + 3] == b"\0\0\1"}
        check(5 in nal_types, f"keyframe {stream} holds an IDR slice (NAL types {sorted(nal_types)})")

    # Revision rules.
    st, h, b = E.publish_json(kp, tok, ev, jpeg)
    check(st == 409 and E.error_of(b)[0] == "revision_conflict", f"equal revision -> 409 ({st} {b!r})")
    ev2 = dict(ev, revision=3, labels=[{"name": "car", "score": 0.5}])
    st, h, b = E.publish_json(kp, tok, ev2)
    check(st == 200 and json.loads(b)["revision"] == 3, f"higher revision -> 200 ({st} {b!r})")
    st, h, b = E.publish_json(kp, tok, dict(ev, revision=2))
    check(st == 409, f"lower revision -> 409 ({st} {b!r})")
    st, got = E.get_json(kp, tok, "/api/v1/events/det-1")
    check(got["revision"] == 3 and got["labels"][0]["name"] == "car" and not got["has_jpeg"],
          f"revision 3 replaced revision 1 entirely: {got}")
    st, h, b = kp.http("GET", "/api/v1/events/det-1/snapshot", None, E.auth(tok))
    # Revision 3 has no JPEG of its own: its snapshot is made from the linked main keyframe
    # (issue 20, decision 0021), never revision 1's JPEG.
    check(st == 200 and b[:2] == b"\xff\xd8" and b != jpeg,
          f"revision 3 has no JPEG: its snapshot is made from the keyframe, not revision 1's ({st})")

    # Multipart and protobuf.
    st, h, b = E.publish_multipart(kp, tok, E.event("mp-1", 1, start_ms=now - 1000), jpeg)
    check(st == 200 and json.loads(b)["id"] == "mp-1", f"multipart publish 200 ({st} {b[:200]!r})")
    st, h, snap = kp.http("GET", "/api/v1/events/mp-1/snapshot", None, E.auth(tok))
    check(snap == jpeg, "multipart JPEG byte-identical")
    st, h, b = E.publish_proto(kp, tok, E.event("pb-1", 2, start_ms=now - 1000, attributes={"plate": "AB 123"}),
                               jpeg)
    check(st == 200 and h.get("content-type") == "application/x-protobuf",
          f"protobuf publish: 200 application/x-protobuf ({st} {h.get('content-type')} {b[:200]!r})")
    f = E.decode_fields(b)
    check(f.get(1) == b"pb-1" and f.get(2) == 2 and f.get(3, 0) >= now - 60000, f"PublishAck fields: {f}")
    st, h, snap = kp.http("GET", "/api/v1/events/pb-1/snapshot", None, E.auth(tok))
    check(snap == jpeg, "protobuf JPEG byte-identical")

    # Ceilings and bad input, refused before recorderd.
    big = b"\xff\xd8" + bytes(JPEG_MAX + 1 - 4) + b"\xff\xd9"
    check(len(big) == JPEG_MAX + 1, "the oversized JPEG has 16 MiB + 1 bytes")
    for name, fn in (("multipart", E.publish_multipart), ("protobuf", E.publish_proto), ("JSON", E.publish_json)):
        st, h, b = fn(kp, tok, E.event("big-" + name, 1, start_ms=now), big, timeout=60)
        check(st == 413 and E.error_of(b)[0] == "jpeg_too_large", f"{name}: 16 MiB + 1 JPEG -> 413 ({st} {b!r})")
    corrupt = jpeg[:len(jpeg) // 2]
    st, h, b = E.publish_json(kp, tok, E.event("bad-1", 1, start_ms=now), corrupt)
    code, why = E.error_of(b)
    check(st == 400 and code == "bad_jpeg" and "EOI" in why, f"truncated JPEG -> 400 with a reason ({st} {b!r})")
    garbage = b"\xff\xd8" + bytes(range(256)) * 4 + b"\xff\xd9"
    st, h, b = E.publish_multipart(kp, tok, E.event("bad-2", 1, start_ms=now), garbage)
    code, why = E.error_of(b)
    check(st == 400 and code == "bad_jpeg" and why, f"corrupt JPEG header -> 400 with a reason ({st} {b!r})")
    st, h, b = kp.http("GET", "/api/v1/events/bad-1", None, E.auth(tok))
    check(st == 404, f"refused publications left nothing ({st})")
    st, h, b = kp.http("POST", "/api/v1/events", "{", E.auth(tok, {"Content-Type": "application/json"}))
    check(st == 400 and E.error_of(b)[0] == "bad_json", f"bad JSON -> 400 ({st} {b!r})")
    st, h, b = kp.http("POST", "/api/v1/events", "x", E.auth(tok, {"Content-Type": "text/plain"}))
    check(st == 415, f"unknown content type -> 415 ({st})")
    st, h, b = kp.http("POST", "/api/v1/events", json.dumps(E.event("noauth", 1)),
                       {"Content-Type": "application/json"})
    check(st == 401, f"publication without a token -> 401 ({st})")
    st, h, b = kp.http("GET", "/api/v1/events/bad%2Fid/snapshot", None, E.auth(tok))
    check(st in (400, 404), f"a bad event id is refused ({st})")

    # kill -9 of recorderd right after an ack: the event is there after the restart.
    rec = kp.status()["recorderd"]["pid"]
    st, h, b = E.publish_json(kp, tok, E.event("durable-1", 1, start_ms=now - 200), jpeg)
    check(st == 200, f"publish before the kill ({st})")
    kp.expect_restarts("recorderd")
    os.kill(rec, signal.SIGKILL)

    def back():
        s = kp.status()
        return s and s["recorderd"]["pid"] not in (0, rec) and s["recorderd"]["state"] == "running"
    check(wait_for(back, 10.0, 0.05), "recorderd restarted")

    def found():
        st, got = E.get_json(kp, tok, "/api/v1/events/durable-1")
        return got if st == 200 else None
    got = wait_for(found, 10.0, 0.1)
    check(got and got["revision"] == 1 and got["has_jpeg"], f"the acknowledged event survived kill -9: {got}")
    st, h, snap = kp.http("GET", "/api/v1/events/durable-1/snapshot", None, E.auth(tok))
    check(snap == jpeg, "its JPEG survived too")
    cam.kill()


if __name__ == "__main__":
    run(test)
