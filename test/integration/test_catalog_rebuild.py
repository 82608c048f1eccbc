"""A damaged or lost catalog is reported, never crashed on, and rebuilt from the files.

A real keeppeekd records a test camera (2 s files, both streams) and takes events over
POST /api/v1/events with an admin token (JPEG, no JPEG, a second revision). Then, three
times, keeppeekd is stopped, the catalog's recording rows are read with mdb_dump(1), and
data.mdb is damaged: truncated to half, one page zeroed (the root of the `fragments`
sub-database, found from the meta page), deleted. keeppeekd is started on it: recorderd
stays up (no SIGBUS loop, no LMDB assertion: no worker restarts), its log names the file
and the reason, `keeppeekctl status --json` says catalog `error`, /healthz is 503 with
`catalog: error`, both streams are `catalog-error`, `keeppeekctl check` answers (1)
instead of aborting, and no recording or event file is removed. `keeppeekctl check
--rebuild` then rebuilds the catalog: every recording row is back (same file, stream,
start, end, bytes, fragments), every acknowledged event is back (same revision, labels,
attributes, times, JPEG byte for byte), the damaged file is kept aside unchanged, check
finds no problem, /healthz is 200 and recording goes on (new rows, an event published
after the rebuild is stored too). Last, the catalog in use is rebuilt on demand: the
same recordings and events, the old file kept as data.mdb.replaced-*, recording resumes."""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time

import kp_events as E
from kp import KEEPPEEKCTL, TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = DATA
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""

# struct cat_recording (recorderd/catalog.h), host byte order.
RECORDING = struct.Struct("<QIIHHIqqQIIqQ160s")


def catalog_rows(data):
    """Every row of the catalog's recordings table, read with mdb_dump(1), by path."""
    out = subprocess.run(["mdb_dump", "-s", "recordings", os.path.join(data, "catalog")],
                         capture_output=True, text=True, check=True).stdout
    lines = out.split("HEADER=END\n", 1)[1].split("\n")
    values = [bytes.fromhex(l.strip()) for l in lines if l.startswith(" ")]
    rows = {}
    for raw in values[1::2]:
        f = RECORDING.unpack(raw)
        path = f[13].split(b"\0", 1)[0].decode()
        rows[path] = {"open": f[5], "start_ms": f[6], "end_ms": f[7], "bytes": f[8], "fragments": f[9]}
    return rows


def media_files(data):
    out = set()
    for top in ("recordings", "events"):
        for dp, _, fs in os.walk(os.path.join(data, top)):
            out |= {os.path.join(dp, f) for f in fs if not f.endswith(".thumb.jpg")}
    return out


def tree_root(path, name):
    """(page size, root page) of a named sub-database, from the newest meta page and the
    main tree's root leaf (LMDB 0.9, 64-bit layout)."""
    with open(path, "rb") as f:
        d = f.read()
    psize = struct.unpack_from("<I", d, 40)[0]
    metas = [(struct.unpack_from("<Q", d, i * psize + 144)[0], struct.unpack_from("<Q", d, i * psize + 128)[0])
             for i in (0, 1)]
    root = max(metas)[1] * psize
    check(struct.unpack_from("<H", d, root + 10)[0] & 2, "the main tree's root is a leaf")
    lower = struct.unpack_from("<H", d, root + 12)[0]
    for i in range((lower - 16) // 2):
        off = root + struct.unpack_from("<H", d, root + 16 + 2 * i)[0]
        ksize = struct.unpack_from("<H", d, off + 6)[0]
        if d[off + 8:off + 8 + ksize] == name.encode():
            return psize, struct.unpack_from("<Q", d, off + 8 + ksize + 40)[0]
    check(False, f"sub-database {name} found")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def api_recordings(kp, tok):
    st, got = E.get_json(kp, tok, f"/api/v1/recordings?from=0&to={int(time.time() * 1000) + 60000}&limit=10000")
    check(st == 200 and not got["truncated"], f"recordings listed ({st})")
    return {(r["camera"], r["stream"], r["start_ms"]): r for r in got["recordings"]}


def api_events(kp, tok):
    st, got = E.get_json(kp, tok, "/api/v1/events?limit=500")
    check(st == 200 and got["next_cursor"] is None, f"events listed in one page ({st})")
    return {e["id"]: e for e in got["events"]}


def streams(kp):
    c = cameras(kp)
    return c[E.CAMERA]["streams"] if c and E.CAMERA in c else []


def recording(kp):
    s = streams(kp)
    return len(s) == 2 and all(x["recording"]["state"] == "recording" for x in s)


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rebuild-")
    os.chmod(work, 0o755)  # workers run as nobody when the test runs as root
    data = os.path.join(work, "data")
    datafile = os.path.join(data, "catalog", "data.mdb")
    cam = TestCamera(work, E.CAMERA, "h264", "baichuan", "aes")
    config = CONFIG.replace("DATA", data) + f'[camera "{E.CAMERA}"]\nurl = {cam.url()}\nrollover_secs = 2\n'
    jpeg = E.snapshot_jpeg()
    acked = {}  # id -> the event as published (its newest acknowledged revision)
    try:
        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: recording(kp), 15.0, 0.2), f"recording: {streams(kp)}")
        tok = kp.token("admin", name="rebuild-admin")

        def publish(ev, with_jpeg):
            st, _, b = E.publish_json(kp, tok, ev, jpeg if with_jpeg else None)
            check(st == 200 and json.loads(b)["revision"] == ev["revision"],
                  f"publish {ev['id']} revision {ev['revision']}: {st} {b[:120]!r}")
            acked[ev["id"]] = dict(ev, has_jpeg=with_jpeg)

        time.sleep(3.0)
        now = int(time.time() * 1000)
        publish(E.event("rb-1", 1, start_ms=now - 2500, labels=[("person", 0.9)]), True)
        publish(E.event("rb-2", 1, start_ms=now - 2000, attributes={"plate": "KP 123"}), False)
        publish(E.event("rb-1", 2, start_ms=now - 2500, labels=[("car", 0.7)], end_ms=now - 1000), True)
        publish(E.event("rb-3", 1, start_ms=now - 1500, labels=[("dog", 0.6)],
                        boxes=[("dog", 0.1, 0.2, 0.3, 0.4, 0.6)]), True)
        time.sleep(3.0)

        for mode in ("truncate", "zero a page", "delete"):
            evs_before = api_events(kp, tok)
            check(set(evs_before) == set(acked), f"[{mode}] the acknowledged events: {sorted(evs_before)}")
            check(kp.stop() is not None, f"[{mode}] keeppeekd stops")
            rows = catalog_rows(data)
            check(len(rows) >= 4 and not any(r["open"] for r in rows.values()),
                  f"[{mode}] {len(rows)} recording rows, all closed")
            files = media_files(data)

            # The damage.
            size = os.path.getsize(datafile)
            if mode == "truncate":
                os.truncate(datafile, size // 2)
                reason = "truncated"
            elif mode == "zero a page":
                psize, page = tree_root(datafile, "fragments")
                with open(datafile, "r+b") as f:
                    f.seek(page * psize)
                    f.write(b"\0" * psize)
                reason = f"page {page} of sub-database 'fragments' carries the number 0"
            else:
                os.unlink(datafile)
                reason = "catalog/data.mdb is missing"
            damaged = sha256(datafile) if os.path.exists(datafile) else None

            # Refused loudly; nothing crashes, nothing is removed.
            kp = make(config=config)
            kp.wait_running()
            line = wait_for(lambda: next((l for l in kp.log_text().splitlines()
                                          if f"catalog {data}/catalog cannot be used" in l), None), 10.0)
            check(line is not None and "keeppeek-recorderd[" in line and reason in line,
                  f"[{mode}] recorderd's log names the file and the reason: {line}")

            def catalog_state():
                rc, out, _ = kp.ctl("status", "--json")
                return json.loads(out)["catalog"] if rc == 0 else None
            cs = wait_for(lambda: (c := catalog_state()) and c["state"] != "ok" and c, 10.0, 0.1)
            check(cs and cs["state"] == "error" and cs["recording"] is False and "catalog/data.mdb" in cs["error"]
                  and "check --rebuild" in cs["error"], f"[{mode}] status --json: catalog error: {cs}")
            rc, out, _ = kp.ctl("status")
            check(rc == 0 and "NOT RECORDING: recorderd: catalog: error: catalog/data.mdb" in out,
                  f"[{mode}] status says so")
            status, _, body = kp.http("GET", "/healthz")
            check(status == 503 and b"catalog: error: catalog/data.mdb" in body,
                  f"[{mode}] /healthz is 503 with catalog: error: {status} {body!r}")
            ss = wait_for(lambda: (s := streams(kp)) and all(x["recording"]["state"] == "catalog-error" for x in s)
                          and s, 10.0, 0.1)
            check(ss and len(ss) == 2, f"[{mode}] both streams are catalog-error: {streams(kp)}")
            rc, out, _ = kp.ctl("check")
            check(rc == 1 and "catalog: error" in out, f"[{mode}] check answers without a catalog: {out.strip()}")
            time.sleep(2.0)
            check(media_files(data) >= files, f"[{mode}] no recording or event file was removed")
            st = kp.status()
            check(st["recorderd"]["restarts"] == 0 and st["recorderd"]["state"] == "running",
                  f"[{mode}] recorderd stays up")

            # The rebuild.
            r = subprocess.run([KEEPPEEKCTL, "-s", kp.sock, "--json", "check", "--rebuild"],
                               capture_output=True, text=True, timeout=300)
            check(r.returncode == 0, f"[{mode}] check --rebuild exits 0: {r.stdout}{r.stderr}")
            res = json.loads(r.stdout)
            check(res["rebuilt"] and res["recording"] and res["files"] == res["recordings"] >= len(rows)
                  and res["files_set_aside"] == 0 and res["events"] == len(acked)
                  and res["event_files_set_aside"] == 0 and res["events_jpeg_gone"] == 0,
                  f"[{mode}] every file indexed, every event restored: {res}")
            if damaged:
                aside = os.path.join(data, res["moved_to"])
                check(res["moved_to"].startswith("catalog/data.mdb.damaged-") and sha256(aside) == damaged,
                      f"[{mode}] the damaged file is kept as it was: {res['moved_to']}")
            else:
                check(res["moved_to"] is None, f"[{mode}] no old data file to keep")
            check(f"rebuild: catalog rebuilt from the files" in kp.log_text(), f"[{mode}] recorderd logs it")

            # Everything is back, and recording goes on.
            check(wait_for(lambda: kp.http("GET", "/healthz")[0] == 200, 15.0, 0.2), f"[{mode}] /healthz is 200")
            check(wait_for(lambda: recording(kp), 15.0, 0.2), f"[{mode}] both streams record: {streams(kp)}")
            recs = api_recordings(kp, tok)
            for path, row in rows.items():
                _, camera, stream, name = path.split("/")
                a = next((x for x in recs.values() if x["camera"] == camera and x["stream"] == stream
                          and x["start_ms"] == row["start_ms"]), None)
                check(a is not None and (a["end_ms"], a["bytes"], a["fragments"], a["open"]) ==
                      (row["end_ms"], row["bytes"], row["fragments"], False),
                      f"[{mode}] recording {path} is back: {row} / {a}")
            evs = api_events(kp, tok)
            check(set(evs) == set(acked), f"[{mode}] every acknowledged event is back: {sorted(evs)}")
            for eid, want in acked.items():
                # Everything but the keyframe links, which the rebuild makes anew (they may
                # name a keyframe that was not indexed yet when the event was published).
                got = {k: v for k, v in evs[eid].items() if k != "keyframes"}
                had = {k: v for k, v in evs_before[eid].items() if k != "keyframes"}
                check(got == had and got["revision"] == want["revision"] and got["has_jpeg"] == want["has_jpeg"],
                      f"[{mode}] event {eid} is the same: {had} / {got}")
                if want["has_jpeg"]:
                    st, _, snap = kp.http("GET", f"/api/v1/events/{eid}/snapshot", None, E.auth(tok))
                    check(st == 200 and snap == jpeg, f"[{mode}] event {eid}'s JPEG, byte for byte")
            rc, out, _ = kp.ctl("check")
            check(rc == 0 and " 0 problems" in out, f"[{mode}] check finds no problem: {out.strip()[-200:]}")
            publish(E.event(f"after-{mode.split()[0]}", 1, start_ms=int(time.time() * 1000) - 500), True)
            time.sleep(4.0)

        # A catalog in use, rebuilt on demand: recording stops for the rebuild and goes on.
        evs_before = api_events(kp, tok)
        recs_before = api_recordings(kp, tok)
        r = subprocess.run([KEEPPEEKCTL, "-s", kp.sock, "--json", "check", "--rebuild"],
                           capture_output=True, text=True, timeout=300)
        res = json.loads(r.stdout) if r.returncode == 0 else {}
        check(r.returncode == 0 and res["rebuilt"] and res["recording"] and res["events"] == len(acked)
              and res["moved_to"].startswith("catalog/data.mdb.replaced-"),
              f"a catalog in use is rebuilt, the old one kept as .replaced-: {r.stdout}{r.stderr}")
        check(wait_for(lambda: recording(kp), 15.0, 0.2), f"both streams record again: {streams(kp)}")
        recs = api_recordings(kp, tok)
        check(all(k in recs and (recs[k]["end_ms"], recs[k]["fragments"]) == (v["end_ms"], v["fragments"])
                  for k, v in recs_before.items() if not v["open"]),
              "every closed recording is the same after it")
        evs = api_events(kp, tok)
        check({k: {f: v for f, v in e.items() if f != "keyframes"} for k, e in evs.items()} ==
              {k: {f: v for f, v in e.items() if f != "keyframes"} for k, e in evs_before.items()},
              "and every event")
        time.sleep(3.0)

        # Recording went on after the last rebuild: new rows, the old ones as they were.
        before = rows
        kp.stop()
        after = catalog_rows(data)
        check(all(after.get(p) == r for p, r in before.items()), "every row before the last damage is still there")
        check(len(set(after) - set(before)) >= 2, f"new recordings after it ({len(set(after) - set(before))})")
        check(any(sha256(os.path.join(data, "catalog", n)) for n in os.listdir(os.path.join(data, "catalog"))
                  if n.startswith("data.mdb.damaged-")), "the damaged data files are kept")
    finally:
        cam.kill()
        shutil.rmtree(work, ignore_errors=True)


run(test)
