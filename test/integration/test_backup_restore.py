"""keeppeekctl backup and restore (keeppeekctl(8), docs/backup.md).

A real keeppeekd records a test camera (2 s files), events are published with JPEGs (one
of them in two revisions), a user and tokens are created. `keeppeekctl backup DIR --media`
runs while recording goes on: it succeeds, recording keeps writing meanwhile, no worker
restarts. keeppeekd is stopped; `keeppeekctl restore` refuses nothing but its clear cases
(the daemon running, a non-empty backup directory, replacing without --force) and puts the
backup into a fresh data directory and a fresh configuration file. A keeppeekd started on
them finds every recording row (same id, stream and start; ends no earlier), every event
(same revision, labels, byte-identical JPEG), the user (logs in) and the tokens (the old
admin token authenticates); `keeppeekctl check` finds no problem; no worker restarts."""
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import time

import kp_events as E
from kp import KEEPPEEKCTL, WORKERS, TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = DATA
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""
PASSWORD = "correct horse battery"


def recordings(kp, tok):
    st, got = E.get_json(kp, tok, f"/api/v1/recordings?from=0&to={int(time.time() * 1000) + 60000}&limit=10000")
    check(st == 200 and not got["truncated"], f"recordings listed ({st})")
    return {r["id"]: r for r in got["recordings"]}


def events(kp, tok):
    st, got = E.get_json(kp, tok, "/api/v1/events?limit=500")
    check(st == 200 and got["next_cursor"] is None, f"events listed in one page ({st})")
    return {e["id"]: e for e in got["events"]}


def login(kp, user, password):
    c = http.client.HTTPConnection("127.0.0.1", kp.web_port, timeout=10)
    try:
        c.request("POST", "/api/v1/login", body=json.dumps({"user": user, "password": password}),
                  headers={"Content-Type": "application/json", "Origin": kp.web_url})
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def restarts(kp):
    st = kp.status()
    return {w: (st[w]["restarts"], st[w]["pid"], st[w]["state"]) for w in WORKERS}


def no_restart(before, after, what):
    check(all(after[w][0] == 0 and after[w][1] == before[w][1] and after[w][2] == "running" for w in WORKERS),
          f"{what}: no worker restarted ({after})")


def recording_bytes(kp):
    c = cameras(kp)
    return sum(s["recording"]["bytes_written"] for s in c[E.CAMERA]["streams"]) if c else 0


def test(make):
    work = tempfile.mkdtemp(prefix="kp-backup-")
    os.chmod(work, 0o755)  # workers run as nobody when the test runs as root
    data, data2 = os.path.join(work, "data"), os.path.join(work, "data2")
    backup = os.path.join(work, "backup")
    cam = TestCamera(work, E.CAMERA, "h264", "baichuan", "aes")
    camera = f'[camera "{E.CAMERA}"]\nurl = {cam.url()}\nrollover_secs = 2\n'
    try:
        kp = make(config=CONFIG.replace("DATA", data) + camera)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(s["recording"]["state"] == "recording"
                                                         for s in c[E.CAMERA]["streams"]), 15.0, 0.2),
              f"recording: {cameras(kp)}")
        before = restarts(kp)
        tok = kp.token("admin", name="backup-admin")
        viewer = kp.token("viewer", name="backup-viewer")
        kp.add_user("alice", PASSWORD, "viewer")
        check(login(kp, "alice", PASSWORD) == 200, "alice logs in before the backup")

        time.sleep(5.0)
        jpeg = E.snapshot_jpeg()
        now = int(time.time() * 1000)
        for i, (eid, rev) in enumerate([("bk-1", 1), ("bk-2", 1), ("bk-3", 1), ("bk-2", 2)]):
            ev = E.event(eid, rev, start_ms=now - 4000 + 500 * i, labels=[("person" if rev == 1 else "car", 0.8)])
            st, _, b = E.publish_json(kp, tok, ev, jpeg if eid != "bk-3" else None)
            check(st == 200, f"publish {eid} revision {rev}: {st} {b[:120]!r}")
        time.sleep(3.0)
        recs_before, evs_before = recordings(kp, tok), events(kp, tok)
        check(len(recs_before) >= 4, f"several recordings to back up ({len(recs_before)})")
        check(set(evs_before) == {"bk-1", "bk-2", "bk-3"} and evs_before["bk-2"]["revision"] == 2,
              f"three events, bk-2 at revision 2: {sorted(evs_before)}")
        _, users_out, _ = kp.ctl("user", "list", "--json")
        _, tokens_out, _ = kp.ctl("token", "list", "--json")

        # Refused: a directory that is not empty.
        os.makedirs(os.path.join(work, "full"))
        open(os.path.join(work, "full", "x"), "w").close()
        rc, out, err = kp.ctl("backup", os.path.join(work, "full"))
        check(rc == 1 and "not an empty directory" in err, f"backup into a non-empty directory: 1 ({err.strip()})")

        # The backup, while recording goes on.
        written = recording_bytes(kp)
        rc, out, err = kp.ctl("--json", "backup", backup, "--media")
        check(rc == 0, f"backup exits 0: {out}{err}")
        m = json.loads(out)
        check(m["keeppeek_backup"] == 1 and m["catalog_schema"] == 2 and m["users"] == 1 and m["tokens"] == 2,
              f"the manifest: schema 2, 1 user, 2 tokens: {m}")
        check(m["recordings"] >= len(recs_before) and m["events"] == 3 and m["media_files"] >= len(recs_before) + 2,
              f"the manifest counts every recording and event, the media files too: {m}")
        check(m["config"] == kp.config_path and m["data_dir"] == data, "it names the configuration and data_dir")
        for p in ("MANIFEST", "keeppeek.conf", "data/catalog/data.mdb", "data/auth/users", "data/auth/tokens"):
            check(os.path.isfile(os.path.join(backup, p)), f"the backup has {p}")
        with open(kp.config_path) as f, open(os.path.join(backup, "keeppeek.conf")) as g:
            check(f.read() == g.read(), "the configuration is copied as it is")
        check(wait_for(lambda: recording_bytes(kp) > written, 10.0, 0.2), "recording went on during the backup")
        check("backup: catalog copied" in kp.log_text(), "recorderd logs the copy")
        no_restart(before, restarts(kp), "backup")
        rc, out, err = kp.ctl("restore", backup, "--data-dir", data2, "--config", os.path.join(work, "r.conf"))
        check(rc == 1 and "keeppeekd is running" in err, f"restore while the daemon runs: refused ({err.strip()})")
        check(not os.path.exists(data2), "and nothing was written")
        kp.stop()
        cam.kill()  # nothing more is recorded: the restored rows are what the backup holds

        # Restore into a fresh data directory and a fresh configuration file.
        restored_conf = os.path.join(work, "restored.conf")
        rc, out, err = kp.ctl("restore", backup, "--data-dir", data2, "--config", restored_conf)
        check(rc == 0, f"restore exits 0: {out}{err}")
        with open(kp.config_path) as f, open(restored_conf) as g:
            check(f.read() == g.read(), "the configuration is restored")
        check(os.stat(restored_conf).st_mode & 0o777 == 0o600, "as mode 0600")
        rc, out, err = kp.ctl("restore", backup, "--data-dir", data2, "--config", restored_conf)
        check(rc == 1 and "--force" in err, f"restoring over it again needs --force ({err.strip()})")

        kp2 = make(config=CONFIG.replace("DATA", data2) + camera)
        kp2.wait_running()
        before2 = restarts(kp2)
        check(wait_for(lambda: "recovery:" in kp2.log_text(), 10.0), "recorderd recovered the restored data")
        recs_after, evs_after = recordings(kp2, tok), events(kp2, tok)
        missing = [i for i in recs_before if i not in recs_after]
        check(not missing, f"every recording row is back ({len(recs_before)} before, {len(recs_after)} after; "
              f"missing {missing})")
        for i, r in recs_before.items():
            a = recs_after.get(i)
            check(a and (a["camera"], a["stream"], a["start_ms"], a["codec"]) ==
                  (r["camera"], r["stream"], r["start_ms"], r["codec"]) and a["end_ms"] >= r["end_ms"]
                  and a["fragments"] >= r["fragments"], f"recording {i} is the same: {r} / {a}")
        check(set(evs_after) == set(evs_before), f"every event is back: {sorted(evs_after)}")
        for eid, e in evs_before.items():
            a = evs_after[eid]
            check((a["revision"], a["labels"], a["start_ms"], a["has_jpeg"]) ==
                  (e["revision"], e["labels"], e["start_ms"], e["has_jpeg"]), f"event {eid} is the same")
            if e["has_jpeg"]:
                st, _, snap = kp2.http("GET", f"/api/v1/events/{eid}/snapshot", None, E.auth(tok))
                check(st == 200 and snap == jpeg, f"event {eid}'s JPEG is back, byte-identical")
        rc, out, _ = kp2.ctl("user", "list", "--json")
        check(rc == 0 and json.loads(out) == json.loads(users_out), f"the users are back: {out.strip()}")
        rc, out, _ = kp2.ctl("token", "list", "--json")
        check(rc == 0 and json.loads(out) == json.loads(tokens_out), f"the tokens are back: {out.strip()}")
        check(login(kp2, "alice", PASSWORD) == 200, "alice logs in with her password")
        st, _ = E.get_json(kp2, viewer, "/api/v1/cameras")
        check(st == 200, "the viewer token authenticates")
        rc, out, err = kp2.ctl("check")
        check(rc == 0 and " 0 problems" in out, f"keeppeekctl check finds no problem: {out.strip()[-160:]}")
        no_restart(before2, restarts(kp2), "after the restore")
    finally:
        cam.kill()
        shutil.rmtree(work, ignore_errors=True)


run(test)
