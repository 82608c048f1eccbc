"""The event record log (docs/decisions/0023-event-record-log.md) against a crash and a lost
catalog, with the real keeppeekd, a test camera and POST /api/v1/events.

Four publishers publish events (envelope-only and with a JPEG), publish second revisions
and delete events over POST /delete, while recorderd is killed with SIGKILL once in the
middle (the supervisor restarts it; the test asserts exactly that one restart). Every
acknowledged publication survives: the event is stored with at least the acknowledged
revision, and every acknowledged delete stays done. No record file is written per event
(events/<hh>/ holds JPEGs only) and the records are in events/log/, a new segment after
the restart. Then keeppeekd is stopped, three record files of the older layout
(events/<hh>/<id>-<rev>.ev, written here from the format of decision 0003) are added, a
torn tail is appended to the newest segment, and catalog/data.mdb is deleted:
`keeppeekctl check --rebuild` restores every event from the log and the .ev files, each
one identical to what the API showed before (keyframe links aside, which a rebuild makes
anew), the three older ones as written, and reports the torn tail as ignored bytes."""
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import zlib

import kp_events as E
from kp import KEEPPEEKCTL, TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = DATA
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""

PUBLISHERS = 4


def api_events(kp, tok):
    out, cursor = {}, None
    while True:
        st, got = E.get_json(kp, tok, "/api/v1/events?limit=500" + (f"&cursor={cursor}" if cursor else ""))
        check(st == 200, f"events listed ({st})")
        out.update({e["id"]: e for e in got["events"]})
        cursor = got["next_cursor"]
        if cursor is None:
            return out


def streaming(kp):
    c = cameras(kp)
    return c and E.CAMERA in c and all(s["state"] == "streaming" for s in c[E.CAMERA]["streams"])


# An EventRecord (proto/keeppeek.proto), encoded by hand as nanopb writes it.
def _varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _key(num, wire):
    return _varint(num << 3 | wire)


def _str(num, s):
    b = s.encode()
    return _key(num, 2) + _varint(len(b)) + b


def _int(num, v):
    return _key(num, 0) + _varint(v)


def event_record(eid, rev, start_ms, end_ms, label, score, attrs, committed_ms):
    lab = _str(1, label) + _key(2, 5) + struct.pack("<f", score)
    b = _str(1, eid) + _int(2, rev) + _str(3, E.CAMERA) + _int(5, start_ms) + _int(6, end_ms)
    b += _key(7, 2) + _varint(len(lab)) + lab
    for k, v in attrs.items():
        a = _str(1, k) + _str(2, v)
        b += _key(9, 2) + _varint(len(a)) + a
    return b + _str(10, "analysis") + _str(11, "token:legacy") + _int(15, committed_ms)


def id_hash(eid):
    """recorderd/jobs.c id_hash: FNV-1a folded to a byte."""
    h = 2166136261
    for c in eid.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return (h ^ h >> 8 ^ h >> 16 ^ h >> 24) & 0xFF


def write_legacy(data, eid, rev, body):
    """events/<hh>/<id>-<rev>.ev: "KPEV", version 1, length, CRC-32, the EventRecord."""
    top = os.path.join(data, "events")
    st = os.stat(top)
    d = os.path.join(top, f"{id_hash(eid):02x}")
    if not os.path.isdir(d):
        os.mkdir(d, 0o750)
        os.chown(d, st.st_uid, st.st_gid)
    path = os.path.join(d, f"{eid}-{rev}.ev")
    with open(path, "wb") as f:
        f.write(b"KPEV" + struct.pack("<III", 1, len(body), zlib.crc32(body)) + body)
    os.chown(path, st.st_uid, st.st_gid)
    os.chmod(path, 0o640)


def files_under(top, suffix):
    return sorted(os.path.join(dp, f) for dp, _, fs in os.walk(top) for f in fs if f.endswith(suffix))


def test(make):
    work = tempfile.mkdtemp(prefix="kp-evlog-")
    os.chmod(work, 0o755)  # workers run as nobody when the test runs as root
    data = os.path.join(work, "data")
    cam = TestCamera(work, E.CAMERA, "h264", "baichuan", "aes")
    config = CONFIG.replace("DATA", data) + f'[camera "{E.CAMERA}"]\nurl = {cam.url()}\n'
    jpeg = E.snapshot_jpeg()
    try:
        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: streaming(kp), 15.0, 0.1), f"camera streaming: {cameras(kp)}")
        tok = kp.token("admin", name="evlog-admin")
        time.sleep(2.0)

        lock = threading.Lock()
        acked = {}        # id -> highest acknowledged revision
        tried_delete = set()
        deleted = set()   # acknowledged deletes
        stop = threading.Event()
        counts = {"acked": 0, "failed": 0}

        def publisher(p):
            n = 0
            while not stop.is_set():
                n += 1
                eid = f"c{p}-{n:05d}"
                ev = E.event(eid, 1, start_ms=int(time.time() * 1000) - 800, labels=[("person", 0.5 + p / 10)],
                             attributes={"n": str(n)})
                try:
                    st, _, b = E.publish_json(kp, tok, ev, jpeg if n % 4 == 0 else None, timeout=20)
                except OSError:
                    st = None
                with lock:
                    if st == 200:
                        acked[eid] = max(acked.get(eid, 0), 1)
                        counts["acked"] += 1
                    else:
                        counts["failed"] += 1
                old = f"c{p}-{n - 3:05d}"
                if n % 5 == 0 and n > 3:  # a second revision of an earlier one
                    try:
                        st, _, b = E.publish_json(kp, tok, E.event(old, 2, labels=[("car", 0.7)]), None, timeout=20)
                    except OSError:
                        st = None
                    if st == 200:
                        with lock:
                            acked[old] = 2
                elif n % 7 == 0 and n > 3:  # a delete
                    with lock:
                        tried_delete.add(old)
                    try:
                        st, _, b = kp.http("POST", "/delete", json.dumps({"events": [old]}),
                                           E.auth(tok, {"Content-Type": "application/json"}), timeout=20)
                    except OSError:
                        st = None
                    if st == 200:
                        with lock:
                            deleted.add(old)

        threads = [threading.Thread(target=publisher, args=(p,), daemon=True) for p in range(PUBLISHERS)]
        for t in threads:
            t.start()
        time.sleep(3.0)
        before_kill = counts["acked"]
        old_pid = kp.status()["recorderd"]["pid"]
        kp.expect_restarts("recorderd")
        os.kill(old_pid, signal.SIGKILL)
        back = wait_for(lambda: (r := kp.status()["recorderd"]) and r["state"] == "running"
                        and r["pid"] not in (0, old_pid) and r, 30.0, 0.05)
        check(back is not None, f"recorderd (pid {old_pid}) runs again after SIGKILL")
        time.sleep(3.0)
        stop.set()
        for t in threads:
            t.join(60)
        print(f"publications acknowledged: {counts['acked']} ({before_kill} before the kill), "
              f"not acknowledged: {counts['failed']}; deletes acknowledged: {len(deleted)}")
        check(before_kill > 20 and counts["acked"] > before_kill + 20,
              f"publications acknowledged before and after the kill: {before_kill}, {counts['acked']}")
        st = kp.status()
        check(st["recorderd"]["restarts"] == 1, f"recorderd restarted exactly once: {st['recorderd']['restarts']}")

        # Every acknowledged publication and delete survived the kill.
        evs = api_events(kp, tok)
        lost = [e for e, rev in acked.items() if e not in tried_delete and (e not in evs or evs[e]["revision"] < rev)]
        check(not lost, f"every acknowledged event is stored with its revision ({len(lost)} lost: {lost[:5]})")
        back_again = [e for e in deleted if e in evs]
        check(not back_again, f"every acknowledged delete stays done: {back_again[:5]}")

        # The records are in the log, no file per event; one segment per recorderd lifetime.
        check(files_under(os.path.join(data, "events"), ".ev") == [], "no record file per event")
        segs = files_under(os.path.join(data, "events", "log"), ".evl")
        check(len(segs) >= 2, f"a new event log segment after the restart: {segs}")

        # A lost catalog, rebuilt from the log and from record files of the older layout.
        before = api_events(kp, tok)
        check(kp.stop() is not None, "keeppeekd stops")
        now = int(time.time() * 1000)
        legacy = {"legacy-1": (1, now - 9000, now - 8000, "dog", 0.25, {"zone": "yard"}, now - 7000),
                  "legacy-2": (2, now - 6000, 0, "cat", 0.5, {}, now - 5000),
                  "legacy-3": (1, now - 4000, now - 3500, "person", 0.75, {"plate": "KP 1"}, now - 3000)}
        for eid, (rev, s, e, label, score, attrs, committed) in legacy.items():
            write_legacy(data, eid, rev, event_record(eid, rev, s, e, label, score, attrs, committed))
        with open(segs[-1], "ab") as f:
            f.write(b"\x30\0\0\0\1\0\0")  # a torn tail: 7 bytes of an item header
        os.unlink(os.path.join(data, "catalog", "data.mdb"))

        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: "catalog/data.mdb is missing" in kp.log_text(), 10.0), "the lost catalog is reported")
        r = subprocess.run([KEEPPEEKCTL, "-s", kp.sock, "--json", "check", "--rebuild"],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"check --rebuild exits 0: {r.stdout}{r.stderr}")
        res = json.loads(r.stdout)
        check(res["rebuilt"] and res["events"] == len(before) + len(legacy) and res["log_segments"] == len(segs)
              and res["log_bytes_ignored"] >= 7 and res["tombstones"] >= len(deleted)
              and res["event_files_set_aside"] == 0 and res["events_jpeg_gone"] == 0,
              f"every event rebuilt from the log and the .ev files ({len(before)} + {len(legacy)}), the torn tail ignored: {res}")
        check(wait_for(lambda: kp.http("GET", "/healthz")[0] == 200, 15.0, 0.2), "/healthz is 200")
        after = api_events(kp, tok)
        check(set(after) == set(before) | set(legacy), f"the same events: {sorted(set(after) ^ set(before))[:10]}")
        differ = [e for e in before if {k: v for k, v in before[e].items() if k != "keyframes"} !=
                  {k: v for k, v in after[e].items() if k != "keyframes"}]
        check(not differ, f"every event identical after the rebuild: {differ[:3]} "
              f"{[(before[e], after[e]) for e in differ[:1]]}")
        for eid, (rev, s, e, label, score, attrs, committed) in legacy.items():
            got = after[eid]
            check(got["revision"] == rev and got["start_ms"] == s and got["end_ms"] == (e or s)
                  and [(l["name"], l["score"]) for l in got["labels"]] == [(label, score)]
                  and got["attributes"] == [{"key": k, "value": v} for k, v in attrs.items()] and got["camera"] == E.CAMERA and not got["has_jpeg"],
                  f"{eid} restored from its .ev file as written: {got}")
        for eid in [e for e in before if before[e]["has_jpeg"]][:5]:
            st, _, snap = kp.http("GET", f"/api/v1/events/{eid}/snapshot", None, E.auth(tok))
            check(st == 200 and snap == jpeg, f"event {eid}'s JPEG, byte for byte")
        rc, out, _ = kp.ctl("check")
        check(rc == 0 and " 0 problems" in out, f"check finds no problem: {out.strip()[-200:]}")
        check(kp.status()["recorderd"]["restarts"] == 0, "no restart in the second run")
    finally:
        cam.kill()
        shutil.rmtree(work, ignore_errors=True)


run(test)
