"""Event JPEGs move to the object store (docs/tier.md, step 8; decision 0038) with keeppeekd,
a test camera and a real Ceph RADOS Gateway (ceph_rgw.py). With `[tier] after = 20s`, the
JPEG of an event that started 60 s ago is copied (its object's bytes are the JPEG's), a
sidecar `<jpeg>.tier` says where, and the local JPEG is gone; a young event's JPEG stays.
The snapshot read through the API is the same bytes (fetched whole into the read cache, the
second read from the cache) and its thumbnail decodes. A new revision of the event retires
the old revision's sidecar and its object is deleted from the store; the new revision's
JPEG moves in its turn. An object changed in the store behind our back is refused (its MD5
is not the ETag we stored): 503, not wrong bytes. recorderd killed: a JPEG left beside its
sidecar (a crash between the two steps) is removed, and a sidecar no revision names (a
crash before its retirement) is retired and its object deleted. keeppeekctl check finds 0
problems with the JPEGs in the store, a catalog rebuilt from the files still serves them,
and a deleted event's object is deleted. No other worker restarts."""
import atexit
import os
import re
import shutil
import signal
import time

import ceph_rgw
import kp_events
from kp import TestCamera, check, metric, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {{dir}}/data
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
[tier]
{store}after = 20s
cache_size = 16
timeout = 10
[camera "front"]
url = {url}
"""


def jpeg_path(data, eid, rev):
    """events/<hh>/<id>-<rev>.jpg as recorderd names it (jobs.c): found by listing, so that
    the test does not repeat the hash."""
    for hh in os.listdir(os.path.join(data, "events")):
        p = os.path.join(data, "events", hh, f"{eid}-{rev}.jpg")
        if os.path.exists(p) or os.path.exists(p + ".tier"):
            return p
    return None


def sidecar(path):
    """{key, size, etag} of path's sidecar, or None."""
    try:
        with open(path + ".tier") as f:
            return dict(line.split("=", 1) for line in f.read().splitlines())
    except FileNotFoundError:
        return None


def moved(data, eid, rev):
    p = jpeg_path(data, eid, rev)
    return p and not os.path.exists(p) and sidecar(p)


def test(make, rgw, work):
    cam = TestCamera(work, "front", "h264", "baichuan", "aes")
    atexit.register(cam.kill)
    config = CONFIG.format(store=rgw.tier_keys(work), url=cam.url())
    kp = make(config=config, env=rgw.tier_env())
    got = os.path.join(work, "got")
    kp.wait_running()
    wait_streaming(kp, "front", timeout=10.0)
    tok = kp.token("admin")
    snap = kp_events.snapshot_jpeg()
    other = snap[:-2] + b"\x00\xff\xd9"  # another JPEG's bytes: the same picture, a byte more before EOI
    now = int(time.time() * 1000)

    def publish(eid, rev, start_ms, jpeg):
        st, _, body = kp_events.publish_json(kp, tok, kp_events.event(eid, rev, start_ms=start_ms), jpeg)
        check(st in (200, 201), f"publish {eid} revision {rev}: {st} {body[:200]!r}")

    def get(eid, part):
        return kp.http("GET", f"/api/v1/events/{eid}/{part}", None, kp_events.auth(tok), timeout=30)

    publish("old-1", 1, now - 60000, snap)
    publish("old-2", 1, now - 59000, snap)
    publish("old-3", 1, now - 58000, snap)
    publish("young", 1, now, snap)

    # The old events' JPEGs move; the young one's stays until it is 20 s old.
    side = wait_for(lambda: moved(kp.data, "old-1", 1), 60, 0.2)
    check(side, "the JPEG of an event 60 s old is copied, its sidecar written and the JPEG removed")
    check(wait_for(lambda: moved(kp.data, "old-2", 1), 30, 0.2), "the second old event's JPEG moves too")
    young = jpeg_path(kp.data, "young", 1)
    check(young and os.path.exists(young) and not sidecar(young), "the young event's JPEG stays local")
    check(int(side["size"]) == len(snap) and rgw.object_bytes(side["key"], got) == snap,
          f"the object {side['key']} is the JPEG's bytes")
    check(re.fullmatch(r"events/[0-9a-f]{2}/old-1-1-\d+\.jpg", side["key"]),
          f"the object key names the revision and its commit time: {side['key']}")
    check(metric(kp, tok, "keeppeek_tier_event_jpegs_uploaded_total") >= 2, "the uploads are counted")

    # Read back through the API: the same bytes, the second time from the cache.
    st, h, body = get("old-1", "snapshot")
    check(st == 200 and body == snap, f"the snapshot of a moved JPEG is read back whole: {st}, {len(body)} bytes")
    hits = metric(kp, tok, "keeppeek_tier_cache_hits_total")
    st, _, body = get("old-1", "snapshot")
    check(st == 200 and body == snap and metric(kp, tok, "keeppeek_tier_cache_hits_total") > hits,
          "the second read is answered from the read cache")
    st, _, thumb = get("old-2", "thumbnail")
    check(st == 200 and thumb[:2] == b"\xff\xd8" and thumb[-2:] == b"\xff\xd9",
          f"a thumbnail is made from a JPEG read back: {st}, {len(thumb)} bytes")

    # A new revision: the old revision's object is deleted, the new JPEG moves in its turn.
    publish("old-1", 2, now - 60000, other)
    check(wait_for(lambda: rgw.absent(side["key"]), 30, 0.5),
          "the replaced revision's object is deleted from the store")
    side2 = wait_for(lambda: moved(kp.data, "old-1", 2), 60, 0.2)
    check(side2 and side2["key"] != side["key"] and rgw.object_bytes(side2["key"], got) == other,
          "the new revision's JPEG moves to an object of its own")
    st, _, body = get("old-1", "snapshot")
    check(st == 200 and body == other, f"the new revision's snapshot is read back: {st}")
    check(not os.listdir(os.path.join(kp.data, "tier-deletes")), "tier-deletes is empty once the deletes ran")

    # An object changed behind our back is refused, not served.
    side_b = wait_for(lambda: moved(kp.data, "old-3", 1), 30, 0.2)
    tampered = os.path.join(work, "tampered.jpg")
    with open(tampered, "wb") as f:
        f.write(other)
    check(rgw.probe("put", side_b["key"], tampered).returncode == 0, "the object is replaced behind our back")
    fail = metric(kp, tok, "keeppeek_tier_fetch_failures_total")
    st, _, body = get("old-3", "snapshot")
    check(st == 503 and body != other and metric(kp, tok, "keeppeek_tier_fetch_failures_total") > fail,
          f"a JPEG whose object's MD5 is not its ETag is refused: {st} {body[:120]!r}")
    with open(tampered, "wb") as f:
        f.write(snap)
    check(rgw.probe("put", side_b["key"], tampered).returncode == 0, "the object is put back")

    # A crash between the sidecar and the JPEG's removal, and one before a retirement.
    young_side = wait_for(lambda: moved(kp.data, "young", 1), 60, 0.2)
    check(young_side, "the young event's JPEG moves once it is 20 s old")
    left = jpeg_path(kp.data, "young", 1)
    with open(left, "wb") as f:
        f.write(snap)
    orphan_dir = os.path.dirname(left)
    orphan = os.path.join(orphan_dir, "gone-1.jpg")
    shutil.copy(tampered, os.path.join(work, "orphan.jpg"))
    orphan_key = "events/00/gone-1-1.jpg"
    check(rgw.probe("put", orphan_key, os.path.join(work, "orphan.jpg")).returncode == 0, "an orphan's object")
    with open(orphan + ".tier", "w") as f:
        f.write(f"key={orphan_key}\nsize={len(snap)}\netag=0\n")
    kp.expect_restarts("recorderd")
    os.kill(kp.status()["recorderd"]["pid"], signal.SIGKILL)
    check(wait_for(lambda: (s := kp.status()) and s["recorderd"]["restarts"] == 1 and
                   s["recorderd"]["state"] == "running", 30, 0.2), "recorderd is restarted")
    check(wait_for(lambda: not os.path.exists(left), 30, 0.2), "a JPEG left beside its sidecar is removed")
    check(wait_for(lambda: rgw.absent(orphan_key), 30, 0.5) and not os.path.exists(orphan + ".tier"),
          "a sidecar no revision names is retired at start and its object deleted")
    st, _, body = get("young", "snapshot")
    check(st == 200 and body == snap, f"after the restart the moved JPEG is read back: {st}")

    rc, out, err = kp.ctl("check")
    check(rc == 0 and " 0 problems" in out, f"keeppeekctl check with JPEGs in the store: {out.strip()}{err.strip()}")
    rc, out, err = kp.ctl("check", "--rebuild")
    check(rc == 0, f"a rebuild from the files: {out.strip()}{err.strip()}")
    st, _, body = wait_for(lambda: (a := get("old-2", "snapshot"))[0] == 200 and a, 20, 0.5) or (0, 0, b"")
    check(body == snap, "after the rebuild a moved JPEG is still read back")
    rc, out, err = kp.ctl("check")
    check(rc == 0 and " 0 problems" in out, f"keeppeekctl check after the rebuild: {out.strip()}{err.strip()}")

    # A deleted event: its object goes too.
    st, _, body = kp.http("POST", "/delete", '{"recordings":[],"events":["old-1"]}',
                          kp_events.auth(tok, {"Content-Type": "application/json"}), timeout=30)
    check(st == 200, f"delete event old-1: {st} {body[:200]!r}")
    check(wait_for(lambda: rgw.absent(side2["key"]), 30, 0.5), "a deleted event's object is deleted from the store")
    check(not moved(kp.data, "old-1", 2), "its sidecar is gone")
    rc, out, _ = kp.ctl("tier", "status")
    check(rc == 0 and "event JPEGs: moved once their event is 20 s old" in out, f"tier status: {out.strip()}")
    print(f"     {metric(kp, tok, 'keeppeek_tier_event_jpegs_uploaded_total')} JPEGs moved, "
          f"{metric(kp, tok, 'keeppeek_tier_event_jpegs_deleted_total')} objects deleted")
    cam.kill()


def main():
    ceph_rgw.with_cluster("kp-tier-ev-", lambda rgw, d: run(lambda make: test(make, rgw, d)))


if __name__ == "__main__":
    main()
