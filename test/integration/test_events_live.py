"""Live event fan-out on the /api/v1/live WebSocket (SPEC 6, 12; issue 7): every
committed revision reaches every subscriber as the JSON envelope and then its JPEG
(byte-identical); a stalled subscriber (never reads) does not hold up publication or the
other subscribers: its bounded queue (64 commands, 8,454,144 reserved bytes) is dropped
and it is told {"type":"resync","dropped":N}, so that every event is either delivered
to it or counted as dropped; camera filters; bad control messages get an error; the
live event JSON equals the search answer's for the same revision (one renderer)."""
import json
import os
import subprocess
import tempfile
import threading
import time

import kp_events as E
import kp_ws
from kp import check, run

EVENTS = 60
TINY = 70  # one past the 64-command bound and then some


def noise_jpeg(path):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "nullsrc=s=1280x720,geq=lum='random(1)*255':cb=128:cr=128", "-frames:v", "1", "-q:v", "3",
                    path], check=True)
    with open(path, "rb") as f:
        return f.read()


def connect(kp, tok):
    return kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/live", {"Authorization": "Bearer " + tok})


def read_all(ws, out, stop, quiet=1.0):
    """Appends (kind, data) until stop is set and nothing arrived for `quiet` seconds."""
    while True:
        try:
            kind, data = ws.recv(timeout=quiet)
        except TimeoutError:
            if stop.is_set():
                return
            continue
        except (ConnectionError, OSError):
            return
        out.append((kind, data))
        if kind == "close":
            return


def events_of(msgs):
    """[(envelope, jpeg or None)] and the resync notices, checking the pairing."""
    evs, resyncs, i = [], [], 0
    while i < len(msgs):
        kind, data = msgs[i]
        if kind != "text":
            raise AssertionError(f"message {i}: a binary message without its envelope")
        m = json.loads(data)
        if m["type"] == "resync":
            resyncs.append(m["dropped"])
            i += 1
            continue
        if m["type"] != "event":
            raise AssertionError(f"message {i}: unexpected {m}")
        jpeg = None
        if m["jpeg_follows"]:
            kind, jpeg = msgs[i + 1]
            if kind != "binary":
                raise AssertionError(f"message {i + 1}: the JPEG of {m['event']['id']} is not binary")
            i += 1
        evs.append((m, jpeg))
        i += 1
    return evs, resyncs


def test(make):
    kp, tok, cam = E.start(make)
    with tempfile.TemporaryDirectory(prefix="kp-live-") as tmp:
        jpeg = noise_jpeg(os.path.join(tmp, "noise.jpg"))
    check(len(jpeg) > 300000, f"a large JPEG ({len(jpeg)} bytes)")

    active = connect(kp, tok)
    stalled = connect(kp, tok)
    filtered = connect(kp, tok)
    filtered.send_text(json.dumps({"type": "subscribe", "cameras": ["other-camera"]}))
    bad = connect(kp, tok)
    bad.send_text("{not json")
    kind, data = bad.recv(timeout=5)
    check(kind == "text" and json.loads(data) == {"type": "error", "code": "bad_message"},
          f"a malformed control message gets an error notice ({kind} {data!r})")
    bad.send_text(json.dumps({"type": "subscribe", "cameras": [E.CAMERA]}))
    time.sleep(0.3)

    got_active, got_filtered, got_bad = [], [], []
    stop = threading.Event()
    readers = [threading.Thread(target=read_all, args=(active, got_active, stop)),
               threading.Thread(target=read_all, args=(filtered, got_filtered, stop)),
               threading.Thread(target=read_all, args=(bad, got_bad, stop))]
    for t in readers:
        t.start()
    now = int(time.time() * 1000)
    for i in range(EVENTS):
        ev = E.event(f"live-{i:02d}", 1, start_ms=now - 10000 + i, labels=(("person", 0.912345),),
                     boxes=(("person", 0.1, 0.2, 0.3, 0.4, 0.876543),))
        st, h, b = E.publish_json(kp, tok, ev, jpeg)
        if st != 200:
            stop.set()
            raise AssertionError(f"publish live-{i:02d} while a subscriber is stalled: {st} {b!r}")
    check(True, f"{EVENTS} publications of {len(jpeg)}-byte JPEGs acknowledged while a subscriber is stalled")
    # Then small events: with the stalled socket full, its queue reaches the command bound.
    for i in range(TINY):
        st, h, b = E.publish_json(kp, tok, E.event(f"tiny-{i:02d}", 1, start_ms=now - 5000 + i))
        if st != 200:
            stop.set()
            raise AssertionError(f"publish tiny-{i:02d}: {st} {b!r}")
    # A JPEG too large for a subscriber's byte bound (9 MiB; headers intact): the envelope
    # goes without it.
    big = jpeg[:-2] + bytes(9 * 1024 * 1024) + b"\xff\xd9"
    st, h, b = E.publish_json(kp, tok, E.event("live-big", 1, start_ms=now), big, timeout=60)
    check(st == 200, f"a 9 MiB JPEG is accepted ({st} {b[:200]!r})")
    # An event without a JPEG: an envelope alone.
    st, h, b = E.publish_json(kp, tok, E.event("live-nojpeg", 1, start_ms=now))
    check(st == 200, "and one without a JPEG")
    stop.set()
    for t in readers:
        t.join(30)

    evs, resyncs = events_of(got_active)
    want = ([f"live-{i:02d}" for i in range(EVENTS)] + [f"tiny-{i:02d}" for i in range(TINY)] +
            ["live-big", "live-nojpeg"])
    check([m["event"]["id"] for m, _ in evs] == want and not resyncs,
          f"the reading subscriber got every event in order, no resync ({[m['event']['id'] for m, _ in evs]}, resyncs {resyncs})")
    check(all(j == jpeg for _, j in evs[:EVENTS]), "each followed by its JPEG, byte-identical")
    check(all(j is None for _, j in evs[EVENTS:EVENTS + TINY]), "envelope-only events come alone")
    m, j = evs[-2]
    check(j is None and not m["jpeg_follows"] and m["event"]["has_jpeg"] and m["event"]["jpeg_bytes"] == len(big),
          "a JPEG over the queue bound: envelope only, jpeg_follows false, has_jpeg and its size")
    m, j = evs[-1]
    check(j is None and not m["jpeg_follows"] and not m["event"]["has_jpeg"], "an event without a JPEG: envelope only")
    e0 = evs[0][0]["event"]
    check(e0["revision"] == 1 and e0["camera"] == E.CAMERA and e0["committed_ms"] > 0 and
          e0["jpeg_bytes"] == len(jpeg) and e0["jpeg_width"] == 1280,
          f"the envelope carries the committed event: {e0}")
    # One renderer (common/event_json.c): the fan-out's event is what a search answers for
    # the same revision, keyframe links and score digits included.
    st, page = E.get_json(kp, tok, f"/api/v1/events?camera={E.CAMERA}&limit=500")
    found = {e["id"]: e for e in (page or {}).get("events", [])}
    check(st == 200 and found.get("live-00") == e0 and "keyframes" in e0 and
          e0["labels"][0]["score"] == 0.912345 and e0["boxes"][0]["score"] == 0.876543,
          f"the live event equals the search answer's: {e0} vs {found.get('live-00')}")
    check(got_filtered == [], f"a subscriber filtering another camera got nothing ({len(got_filtered)} messages)")
    check(len(events_of(got_bad)[0]) == EVENTS + TINY + 2, "after an error notice the subscription still works")

    # The stalled subscriber now reads: some events, a resync with the count dropped, and
    # every event either delivered or counted. (After a long zero window TCP probes it
    # seldom: the first bytes may take seconds, hence the generous deadline.)
    got_stalled = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            kind, data = stalled.recv(timeout=max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            break
        got_stalled.append((kind, data))
        if kind == "text":
            m = json.loads(data)
            if m["type"] == "event" and m["event"]["id"] == "live-nojpeg":
                break
            if m["type"] == "resync" and sum(json.loads(d)["dropped"] for k, d in got_stalled
                                             if k == "text" and '"resync"' in d) == EVENTS + TINY + 2:
                break
    evs_s, resyncs_s = events_of(got_stalled)
    ids_s = [m["event"]["id"] for m, _ in evs_s]
    check(resyncs_s and all(n > 0 for n in resyncs_s), f"the stalled subscriber was resynced: {resyncs_s}")
    check(len(ids_s) + sum(resyncs_s) == EVENTS + TINY + 2,
          f"delivered ({len(ids_s)}) + dropped ({sum(resyncs_s)}) == published ({EVENTS + TINY + 2})")
    check(ids_s == sorted(ids_s, key=want.index), "what it did get came in order")
    check(all(j == jpeg for m, j in evs_s if m["jpeg_follows"]), "with intact JPEGs")

    st, h, b = kp.http("GET", "/metrics", None, E.auth(tok))
    text = b.decode()
    if "keeppeek_webd_live_dropped_total" in text:
        vals = {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l.startswith("keeppeek_webd_live_")}
        check(vals["keeppeek_webd_live_dropped_total"] == sum(resyncs_s) and
              vals["keeppeek_webd_live_resyncs_total"] == len(resyncs_s) and
              vals["keeppeek_webd_live_jpeg_omitted_total"] == 1,
              f"/metrics counts the drops and resyncs: {vals}")
        check(vals["keeppeek_webd_live_queue_bytes_high_water"] <= 8454144 and
              vals["keeppeek_webd_live_queue_commands_high_water"] == 64,
              f"queue high-water marks: the command bound reached, never passed ({vals})")
    else:
        print("note: /metrics does not include webd_live_metrics() yet")
    for ws in (active, stalled, filtered, bad):
        ws.close()
    cam.kill()


if __name__ == "__main__":
    run(test)
