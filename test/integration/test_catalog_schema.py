"""A catalog of a newer schema (what a downgrade leaves) is refused loudly and left alone.

A real keeppeekd creates and records into a catalog; its meta/version is then set past
the build's with mdb_load(1), on the real LMDB file, and keeppeekd is started on it
again. recorderd's log line names both versions; `keeppeekctl status` (text and --json)
says nothing is recorded and why; /healthz answers 503 with the reason; every camera
stream's recording state is `catalog-unusable`; the catalog's data file is not written;
no worker restarts (recorderd stays up and answers). With the version set back, a
`keeppeekctl restart recorderd` records again and /healthz is 200."""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time

from kp import WORKERS, TestCamera, cameras, check, run, wait_for

SUPPORTED = 2  # CAT_SCHEMA_VERSION in recorderd/catalog.h
NEWER = SUPPORTED + 1

CONFIG = """[keeppeek]
data_dir = DATA
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def meta_version(catalog):
    """meta/version of the catalog in dir catalog, read with mdb_dump(1)."""
    out = subprocess.run(["mdb_dump", "-s", "meta", catalog], capture_output=True, text=True, check=True).stdout
    lines = [l.strip() for l in out.split("HEADER=END\n", 1)[1].splitlines() if l.startswith(" ")]
    pairs = dict(zip(lines[0::2], lines[1::2]))
    return struct.unpack("<Q", bytes.fromhex(pairs[b"version".hex()]))[0]


def set_meta_version(catalog, version):
    """Writes meta/version (u64, host byte order) with mdb_load(1), which replaces the key."""
    text = ("VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n"
            f" {b'version'.hex()}\n {struct.pack('<Q', version).hex()}\nDATA=END\n")
    subprocess.run(["mdb_load", "-s", "meta", catalog], input=text, text=True, check=True)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test(make):
    work = tempfile.mkdtemp(prefix="kp-schema-")
    os.chmod(work, 0o755)  # workers run as nobody when the test runs as root
    data = os.path.join(work, "data")
    cam = TestCamera(work, "yard", "h264", "baichuan", "aes")
    config = CONFIG.replace("DATA", data) + f'[camera "yard"]\nurl = {cam.url()}\n'
    try:
        # A catalog made and used by the real recorderd.
        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(s["recording"]["state"] == "recording"
                                                         for s in c["yard"]["streams"]), 15.0, 0.2),
              f"the first run records: {cameras(kp)}")
        st = json.loads(kp.ctl("status", "--json")[1])
        check(st["catalog"]["state"] == "ok" and st["catalog"]["recording"] is True
              and st["catalog"]["schema_version"] == SUPPORTED
              and st["catalog"]["supported_version"] == SUPPORTED,
              f"status --json reports a usable catalog of schema {SUPPORTED}: {st['catalog']}")
        time.sleep(2.0)
        check(kp.stop() is not None, "the first run stops")
        catalog = os.path.join(data, "catalog")
        check(meta_version(catalog) == SUPPORTED, f"the catalog has schema {SUPPORTED}")

        # What a newer KeepPeek would leave behind.
        set_meta_version(catalog, NEWER)
        check(meta_version(catalog) == NEWER, f"meta/version is now {NEWER}")
        before = sha256(os.path.join(catalog, "data.mdb"))

        kp = make(config=config)
        st = kp.wait_running()
        pids = {w: st[w]["pid"] for w in WORKERS}
        needle = f"has schema version {NEWER}; this build of keeppeek-recorderd"
        line = wait_for(lambda: next((l for l in kp.log_text().splitlines() if needle in l), None), 10.0)
        check(line is not None and "keeppeek-recorderd[" in line and f"up to {SUPPORTED}" in line
              and "not recording" in line.lower(),
              f"recorderd's log line names both versions: {line}")

        def catalog_state():
            rc, out, _ = kp.ctl("status", "--json")
            return json.loads(out)["catalog"] if rc == 0 else None
        cs = wait_for(lambda: (c := catalog_state()) and c["state"] != "ok" and c, 10.0, 0.1)
        check(cs and cs["state"] == "newer-schema" and cs["recording"] is False
              and cs["schema_version"] == NEWER and cs["supported_version"] == SUPPORTED,
              f"status --json: catalog newer-schema, {NEWER} vs {SUPPORTED}, not recording: {cs}")
        check(str(NEWER) in cs["error"] and str(SUPPORTED) in cs["error"], f"its error names both: {cs['error']}")
        rc, out, _ = kp.ctl("status")
        check(rc == 0 and "NOT RECORDING" in out and f"schema {NEWER}" in out and f"up to {SUPPORTED}" in out,
              f"status (text) says nothing is recorded and why:\n{out}")

        status, _, body = kp.http("GET", "/healthz")
        check(status == 503 and b"not recording" in body and f"schema {NEWER}".encode() in body,
              f"/healthz is 503 and says why: {status} {body!r}")

        def streams():
            c = cameras(kp)
            return c["yard"]["streams"] if c and "yard" in c else []
        ss = wait_for(lambda: (s := streams()) and all(x["recording"]["state"] == "catalog-unusable" for x in s)
                      and s, 10.0, 0.1)
        check(bool(ss) and len(ss) == 2, f"both streams' recording state is catalog-unusable: {streams()}")
        check(all(f"schema {NEWER}" in x["recording"]["last_error"] for x in ss),
              "and their last error says why")

        # It stays that way: recorderd is not restarted, nothing is written.
        time.sleep(6.0)
        st = kp.status()
        check(all(st[w]["restarts"] == 0 and st[w]["state"] == "running" for w in WORKERS),
              f"no worker restarted: {[(w, st[w]['restarts'], st[w]['state']) for w in WORKERS]}")
        check({w: st[w]["pid"] for w in WORKERS} == pids, "every worker keeps its pid")
        check(kp.http("GET", "/healthz")[0] == 503, "/healthz stays 503")
        check(sha256(os.path.join(catalog, "data.mdb")) == before, "the catalog's data file is untouched")
        check(meta_version(catalog) == NEWER, f"meta/version is still {NEWER}")
        check(not os.path.isdir(os.path.join(data, "recordings", "yard")) or
              all(os.path.getmtime(os.path.join(dp, f)) < time.time() - 5
                  for dp, _, fs in os.walk(os.path.join(data, "recordings", "yard")) for f in fs),
              "no recording file was written meanwhile")

        # Back at a schema this build reads (the newer KeepPeek reinstalled, say).
        set_meta_version(catalog, SUPPORTED)
        kp.expect_restarts("recorderd")
        rc, out, err = kp.ctl("restart", "recorderd")
        check(rc == 0, f"restart recorderd: {out}{err}")
        check(wait_for(lambda: kp.http("GET", "/healthz")[0] == 200, 15.0, 0.2), "/healthz is 200 again")
        check(wait_for(lambda: (s := streams()) and all(x["recording"]["state"] == "recording" for x in s),
                       15.0, 0.2), f"both streams record again: {streams()}")
        st = kp.status()
        check(all(st[w]["restarts"] == 0 for w in WORKERS if w != "recorderd") and st["recorderd"]["restarts"] == 1,
              "only the restart asked for happened")
    finally:
        cam.kill()
        shutil.rmtree(work, ignore_errors=True)


run(test)
