#!/usr/bin/env python3
"""tier-playback: the time keeppeekd takes to export a whole recording, and to answer a
timeline thumbnail, when the recording's samples are in the object store (tiering's read
path, decision 0037) against the same requests of a local recording, measured end to end
through the HTTP API in the same run.

    python3 perf/tier-playback/run.py --build build [--quick] [--runs 15] [--warmup 1]
        [--warm 3] [--thumbs 15] [--keep-local 20] [--rgw-nodelay] [--dir /tmp]

Workload: a one-node Ceph cluster with radosgw on loopback (test/integration/ceph_rgw.py,
the tests' harness), keeppeekd from the build tree (test/integration/kp.py) with one
Baichuan test camera (H.264, 1920x1080 main ~2 Mbit/s, 640x360 sub, 25 fps, a keyframe
about every second), `rollover_secs = 10` and `[tier] after = 2s, keep_local = --keep-local`:
every closed recording (about 10 s) is copied to the store, kept whole --keep-local s
more, then stripped to its headers, its samples read back with ranged GETs into the read
cache (data_dir/tier-cache, emptied only when recorderd starts) when played. The runner
follows keeppeekd's log and, for each main recording, over one new TCP connection per
request (the connect is in every figure), `GET /api/v1/export` of the whole recording:

* when tierd reports it stored (still local, within keep_local): **local, page cache
  dropped** (posix_fadvise(DONTNEED) of the file first; mincore counts the pages still
  cached) and **local, page cache** (the file read whole by the runner first; mincore
  checks every page is cached: a recording just recorded or played), one first for one
  recording and the other first for the next; the first body is the recording's
  reference bytes;
* when recorderd reports it stripped: **remote, cold** (its samples fetched from the
  store: every measured run is a recording not read before, none cached), then --warm
  times **remote, warm** (the same export again, from the read cache).

Before each request the runner waits (at most 5 s) until no copy is queued or under way
(keeppeek_tier_queued = 0): main and sub close together and their copies start 2 s later,
so a request would otherwise often be timed against tierd's upload and the OSD's write of
the other stream's recording. The first --warmup recordings stripped are exported the
same way and checked, not counted (nor are their local exports). The run ends when --runs
recordings were exported cold. Then, with --thumbs > 0, timeline thumbnails (`GET
/api/v1/cameras/CAM/thumbnail?t=MS`, decision 0025: the sub stream's keyframe decoded by
the transcoder), alternating **local** (a GOP of a closed, not yet stripped sub
recording, its file's pages dropped first) and **remote, cold** (a GOP of a stripped sub
recording, its keyframe's fragment fetched from the store): each a keyframe not pictured
before, so each is a decode; one of each first, unmeasured (the first starts the
transcoder).

Checks (exit 1 on any): every answer 200; every export body byte-equal to the reference
(the same recording's export while local); the references ffprobe-clean with a packet
per 40 ms of their span (within 2); around each request, from /metrics: a cold export or
remote thumbnail raised keeppeek_tier_fetches_total by >= 1, a warm export raised it by 0 and
keeppeek_tier_cache_hits_total by >= 1, a local export or thumbnail raised it by 0; the
file was local (no `.tier` sidecar) before and after a local request and stripped (a
sidecar, under a quarter of its blocks) before a remote one; each thumbnail a JPEG of a
keyframe not answered before, keeppeek_recorderd_pictures_total{result="made"} + 1; no
fetch failure, no read refused, no worker restarted. Reported: nearest-rank p50/p95 (and
min, max) per case, bytes and fetches per export, the machine, its load average sampled
every second and whole-machine CPU over the run; keeppeekd's warnings and errors are
copied into the report. Reports: BUILD/perf/tier-playback.{json,md}. Method:
docs/perf/METHODOLOGY.md."""
import argparse
import ctypes
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

CAM = "tp-cam"
CONFIG = """[keeppeek]
data_dir = {{dir}}/data
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
[tier]
{store}after = 2s
keep_local = {keep_local}s
part_size = 5
timeout = 10
[camera "{cam}"]
url = {url}
rollover_secs = 10
"""
STORED = re.compile(r"recording (\d+): (recordings/" + CAM + r"/(main|sub)/(\d+)\.mp4) stored, (\d+) bytes")
STRIPPED = re.compile(r"recording (\d+): (recordings/" + CAM + r"/(main|sub)/(\d+)\.mp4) now holds its headers only")
PROBLEM = re.compile(r"^.*\[\d+\]: (warning|error): .*$", re.M)
METRICS = ("keeppeek_tier_fetches_total", "keeppeek_tier_fetched_bytes_total", "keeppeek_tier_cache_hits_total",
           "keeppeek_tier_cache_misses_total", "keeppeek_tier_fetch_failures_total",
           "keeppeek_tier_reads_refused_total", "keeppeek_tier_cache_bytes", "keeppeek_tier_cache_evicted_total",
           'keeppeek_recorderd_pictures_total{result="made"}', "keeppeek_tier_queued", "keeppeek_tier_uploaded_total",
           "keeppeek_tier_stripped_total")
SETTLE_S = 5.0  # at most this long waiting for no copy to be under way before a request
CASES = [("local_dropped", "export, local, page cache dropped (baseline)"),
         ("local_cached", "export, local, page cache (baseline)"),
         ("remote_cold", "export, remote, cold (fetched from the store)"),
         ("remote_warm", "export, remote, warm (read cache)"),
         ("thumb_local", "thumbnail, local (page cache dropped)"),
         ("thumb_remote", "thumbnail, remote, cold (keyframe fetched)")]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def file_pages(path):
    ps = os.sysconf("SC_PAGE_SIZE")
    return (os.path.getsize(path) + ps - 1) // ps


def drop_cached(path):
    """posix_fadvise(DONTNEED) of the whole file, then the number of its pages still in
    the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return resident_pages(path)


def resident_pages(path):
    """The file's pages in the page cache: mincore over a mapping that is never touched."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            ps = os.sysconf("SC_PAGE_SIZE")
            vec = (ctypes.c_ubyte * ((size + ps - 1) // ps))()
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            return sum(v & 1 for v in vec)
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


class Bench:
    def __init__(self, kp, a, failures):
        self.kp, self.a, self.failures = kp, a, failures
        self.auth = {"Authorization": "Bearer " + kp.token()}
        self.log_off = 0
        self.samples = {k: [] for k, _ in CASES}
        self.rows = []  # one per request, measured or not
        self.recs = {}  # main recordings by file name (ms): reference bytes and state
        self.stripped_sub = []  # file names (ms) of stripped sub recordings, in order
        self.cold_done = 0
        self.keyframes = set()  # Keyframe-Time of every thumbnail answered
        self.resident_after_drop = 0

    # -- keeppeekd's API ----------------------------------------------------------
    def get(self, path, timeout=30):
        t0 = time.perf_counter()
        st, h, body = self.kp.http("GET", path, None, self.auth, timeout=timeout)
        return st, h, body, (time.perf_counter() - t0) * 1000.0

    def metrics(self):
        st, _, body = self.kp.http("GET", "/metrics", None, self.auth)
        if st != 200:
            raise RuntimeError(f"/metrics answered {st}")
        out = {}
        for line in body.decode().splitlines():
            name, _, v = line.rpartition(" ")
            if name in METRICS:
                out[name] = float(v)
        return out

    def recordings(self, stream, around_ms=None):
        now = int(time.time() * 1000)
        lo, hi = (around_ms - 60000, around_ms + 60000) if around_ms else (now - 3600000, now + 60000)
        st, _, body = self.kp.http("GET", f"/api/v1/recordings?camera={CAM}&stream={stream}&from={lo}&to={hi}",
                                   None, self.auth)
        if st != 200:
            raise RuntimeError(f"recordings: {st} {body[:200]!r}")
        return json.loads(body)["recordings"]

    def recording_of(self, stream, name_ms):
        """The recording whose file is named name_ms (its start, or up to 15 ms after)."""
        for r in self.recordings(stream, name_ms):
            if 0 <= name_ms - r["start_ms"] <= 15:
                return r
        return None

    def path(self, stream, name_ms):
        return os.path.join(self.kp.data, "recordings", CAM, stream, f"{name_ms}.mp4")

    def fail(self, msg):
        print("FAIL: " + msg, file=sys.stderr, flush=True)
        self.failures.append(msg)

    def settle(self):
        """Waits (at most SETTLE_S) until no copy to the store is queued or under way, so
        that a request is not timed against tierd's upload of the recording just closed
        (main and sub close together; their copies start 2 s later). Returns the wait."""
        t0 = time.monotonic()
        polls = 0
        while self.metrics().get("keeppeek_tier_queued", 0) and time.monotonic() - t0 < SETTLE_S:
            polls += 1
            time.sleep(0.02)
        return time.monotonic() - t0, polls > 0

    # -- the state of a file ----------------------------------------------------------
    def is_local(self, path):
        return not os.path.exists(path + ".tier")

    def is_stripped(self, path):
        st = os.stat(path)
        return os.path.exists(path + ".tier") and st.st_blocks * 512 < st.st_size // 4

    # -- one request, with the counters around it ----------------------------------
    def measure(self, case, path, what, counted, ref=None, local=None, drop=False, load=False):
        """One GET of `what`, timed; checks its answer and the counters around it. drop:
        the file's pages dropped from the page cache first; load: read whole first (all
        its pages cached). Returns the body, or None when the file's state changed under
        the request (not counted, not a failure: the caller picks another)."""
        file_ = what.split("?")[0]
        if local is True and not self.is_local(path):
            return None
        if local is False and not self.is_stripped(path):
            self.fail(f"{case}: {path} is not stripped before its remote request")
            return None
        settle, waited = self.settle()
        resident = drop_cached(path) if drop else None
        if resident:
            self.resident_after_drop += resident
        if load:
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
            missing = file_pages(path) - resident_pages(path)
            if missing:
                self.fail(f"{case}: {missing} pages of {path} not cached after reading it")
        m0 = self.metrics()
        st, h, body, ms = self.get(what)
        m1 = self.metrics()
        if local is True and not self.is_local(path):
            return None  # stripped meanwhile: not a local read
        d = {k: m1.get(k, 0) - m0.get(k, 0) for k in METRICS}
        row = {"case": case, "counted": counted, "file": os.path.relpath(path, self.kp.data), "status": st,
               "ms": round(ms, 3), "bytes": len(body), "fetches": int(d["keeppeek_tier_fetches_total"]),
               "fetched_bytes": int(d["keeppeek_tier_fetched_bytes_total"]),
               "cache_hits": int(d["keeppeek_tier_cache_hits_total"]),
               "cache_misses": int(d["keeppeek_tier_cache_misses_total"]), "resident_pages_after_drop": resident,
               "settle_ms": round(settle * 1000.0, 1), "waited_for_copy": waited,
               "copies_during": int(d["keeppeek_tier_uploaded_total"] + m1["keeppeek_tier_queued"]),
               "strips_during": int(d["keeppeek_tier_stripped_total"]), "t_unix": round(time.time(), 3)}
        self.rows.append(row)
        bad = []
        if st != 200:
            bad.append(f"status {st} {body[:200]!r}")
        if d["keeppeek_tier_fetch_failures_total"] or d["keeppeek_tier_reads_refused_total"]:
            bad.append(f"{d['keeppeek_tier_fetch_failures_total']:.0f} fetch failures, "
                       f"{d['keeppeek_tier_reads_refused_total']:.0f} reads refused")
        if case in ("remote_cold", "thumb_remote") and row["fetches"] < 1:
            bad.append(f"no fetch from the store ({row['fetches']})")
        if case == "remote_warm" and (row["fetches"] != 0 or row["cache_hits"] < 1):
            bad.append(f"not from the read cache ({row['fetches']} fetches, {row['cache_hits']} hits)")
        if case in ("local_dropped", "local_cached", "thumb_local") and row["fetches"] != 0:
            bad.append(f"{row['fetches']} fetches for a local recording")
        if ref is not None and body != ref:
            bad.append(f"{len(body)} bytes differing from the {len(ref)} exported while local")
        if case.startswith("thumb"):
            made = d['keeppeek_recorderd_pictures_total{result="made"}']
            if body[:2] != b"\xff\xd8":
                bad.append(f"not a JPEG ({h.get('content-type')})")
            if made != 1:
                bad.append(f"{made:.0f} pictures made, not 1 (a keyframe not pictured before)")
            row["keyframe_time"] = h.get("keyframe-time")
            if not row["keyframe_time"] or row["keyframe_time"] in self.keyframes:
                bad.append(f"keyframe {row['keyframe_time']} answered before")
            self.keyframes.add(row["keyframe_time"])
        if bad:
            row["failed"] = "; ".join(bad)
            self.fail(f"{case} {file_} of {row['file']}: " + "; ".join(bad))
            return body
        if counted:
            self.samples[case].append(ms)
        return body

    # -- the exports, as keeppeekd's log tells what happened to each recording -----
    def new_log(self):
        """keeppeekd's log lines written since the last call (whole lines only)."""
        with open(self.kp.log_path, "rb") as f:
            f.seek(self.log_off)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self.log_off += cut
        return data[:cut].decode("utf-8", "replace")

    def export_path(self, rec):
        return f"/api/v1/export?camera={CAM}&stream=main&from={rec['start_ms']}&to={rec['end_ms']}"

    def on_stored(self, name_ms):
        path = self.path("main", name_ms)
        rec = self.recording_of("main", name_ms)
        if rec is None:
            self.fail(f"main recording {name_ms} stored but not listed")
            return
        counted = len(self.recs) >= self.a.warmup
        # The two local exports in turns, first one then the other first, so that what
        # the first request leaves behind (and the load after a copy) falls on both alike.
        order = ("local_dropped", "local_cached") if len(self.recs) % 2 == 0 else ("local_cached", "local_dropped")
        ref = None
        for case in order:
            body = self.measure(case, path, self.export_path(rec), counted, ref=ref, local=True,
                                drop=case == "local_dropped", load=case == "local_cached")
            if body is None:
                print(f"tier-playback: main/{name_ms} stripped before its local exports; skipped", flush=True)
                return
            ref = ref or body
        self.recs[name_ms] = {"rec": rec, "ref": ref, "sha256": hashlib.sha256(ref).hexdigest(), "cold": False}

    def on_stripped(self, name_ms):
        r = self.recs.get(name_ms)
        if r is None:
            return  # recorded before the benchmark could export it while local
        counted = self.cold_done >= self.a.warmup
        path = self.path("main", name_ms)
        self.measure("remote_cold", path, self.export_path(r["rec"]), counted, ref=r["ref"], local=False)
        r["cold"] = True
        for _ in range(self.a.warm):
            self.measure("remote_warm", path, self.export_path(r["rec"]), counted, ref=r["ref"], local=False)
        self.cold_done += 1
        n = self.cold_done - self.a.warmup
        print(f"tier-playback: main/{name_ms} exported cold ({'warm-up' if n <= 0 else f'{n} of {self.a.runs}'})",
              flush=True)

    def exports(self, deadline):
        while self.cold_done < self.a.runs + self.a.warmup and not self.failures:
            if time.monotonic() > deadline:
                self.fail(f"only {self.cold_done} recordings exported cold before the deadline")
                return
            text = self.new_log()
            events = [(m.start(), "stored", m) for m in STORED.finditer(text)]
            events += [(m.start(), "stripped", m) for m in STRIPPED.finditer(text)]
            for _, kind, m in sorted(events, key=lambda e: e[0]):
                stream, name_ms = m.group(3), int(m.group(4))
                if stream == "sub":
                    if kind == "stripped":
                        self.stripped_sub.append(name_ms)
                elif kind == "stored":
                    self.on_stored(name_ms)
                elif self.cold_done < self.a.runs + self.a.warmup:
                    self.on_stripped(name_ms)
            time.sleep(0.05)

    # -- thumbnails ------------------------------------------------------------------
    def gops(self, rec):
        """Times inside each whole GOP of a sub recording (a keyframe every second), clear
        of the recording's edges."""
        return list(range(rec["start_ms"] + 1500, rec["end_ms"] - 1000, 1000))

    def thumbnails(self):
        # and the sub recordings stripped since the exports ended
        self.stripped_sub += [int(m.group(4)) for m in STRIPPED.finditer(self.new_log()) if m.group(3) == "sub"]
        used = set()
        remote = []
        for name_ms in self.stripped_sub:
            rec = self.recording_of("sub", name_ms)
            if rec:
                remote += [(name_ms, t) for t in self.gops(rec)]
        # One GOP of each remote recording in turn, so that no two requests read one object
        # in a row.
        remote.sort(key=lambda x: (x[1] - x[0]) // 1000)

        def next_local():
            end = time.monotonic() + 25
            while time.monotonic() < end:
                local = self.local_sub_names()
                # The newest recording is the open one; then the newest closed first: the
                # farthest from its strip.
                for rec in sorted(self.recordings("sub"), key=lambda r: r["start_ms"])[-2::-1]:
                    name = next((n for n in local if 0 <= n - rec["start_ms"] <= 15), None)
                    if name is None:
                        continue
                    for t in reversed(self.gops(rec)):
                        if (name, t) not in used:
                            return name, t
                time.sleep(0.5)
            return None

        def one(case, counted):
            if case == "thumb_local":
                while True:
                    got = next_local()
                    if got is None:
                        self.fail("no GOP of a local sub recording left to picture")
                        return False
                    used.add(got)
                    body = self.measure(case, self.path("sub", got[0]),
                                        f"/api/v1/cameras/{CAM}/thumbnail?t={got[1]}", counted, local=True, drop=True)
                    if body is not None:
                        return True
            if not remote:
                self.fail("no GOP of a stripped sub recording left to picture")
                return False
            name, t = remote.pop(0)
            self.measure(case, self.path("sub", name), f"/api/v1/cameras/{CAM}/thumbnail?t={t}", counted, local=False)
            return True

        for i in range(self.a.thumbs + 1):
            for case in ("thumb_local", "thumb_remote"):
                if not one(case, i > 0) or self.failures:
                    return

    def local_sub_names(self):
        root = os.path.join(self.kp.data, "recordings", CAM, "sub")
        return [int(f[:-4]) for f in os.listdir(root) if f.endswith(".mp4") and not os.path.exists(
            os.path.join(root, f + ".tier"))]


def ffprobe_refs(recs, scratch, failures):
    """Each reference export: ffprobe-clean, with as many video packets as its span holds
    frames at 25 fps (within 2: the span's ends are frame times)."""
    out = []
    path = os.path.join(scratch, "ref.mp4")
    for name_ms, r in sorted(recs.items()):
        with open(path, "wb") as f:
            f.write(r["ref"])
        p = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                            "stream=codec_name,width,height,nb_read_packets", "-of", "json", path],
                           capture_output=True, text=True)
        info = json.loads(p.stdout)["streams"][0] if p.returncode == 0 and p.stdout.strip() else {}
        packets = int(info.get("nb_read_packets", 0))
        span = r["rec"]["end_ms"] - r["rec"]["start_ms"]
        out.append({"file": f"main/{name_ms}.mp4", "bytes": len(r["ref"]), "sha256": r["sha256"],
                    "packets": packets, "codec": info.get("codec_name"), "width": info.get("width"),
                    "height": info.get("height"), "span_ms": span, "ffprobe_errors": p.stderr.strip()[:300],
                    "exported_cold": r["cold"]})
        if p.returncode != 0 or p.stderr.strip() or abs(packets - span / 40.0) > 2 or packets < 200:
            failures.append(f"export of main/{name_ms}: ffprobe rc {p.returncode}, {packets} packets for "
                            f"{span} ms, {p.stderr.strip()[:200]}")
    return out


def rgw_nodelay(rgw):
    """radosgw started again with beast's tcp_nodelay=1 (off by default; see tier-store)."""
    with open(rgw.conf) as f:
        text = f.read()
    line = next(x for x in text.splitlines() if x.startswith("rgw_frontends = "))
    with open(rgw.conf, "w") as f:
        f.write(text.replace(line, line + " tcp_nodelay=1"))
    rgw.kill("rgw", signal.SIGTERM)
    rgw.start("rgw")


def run(kp_mod, ceph_rgw, a, report, failures):
    with tempfile.TemporaryDirectory(prefix="kp-tier-playback-", dir=a.dir) as d:
        base = os.path.join(d, "ceph")
        os.makedirs(base)
        t0 = time.monotonic()
        with ceph_rgw.CephRgw(base, bucket="tier-playback") as rgw:
            if a.rgw_nodelay:
                rgw_nodelay(rgw)
            report["ceph_up_s"] = round(time.monotonic() - t0, 1)
            report["ceph"] = subprocess.run(["ceph", "--version"], capture_output=True, text=True).stdout.strip()
            print(f"tier-playback: Ceph up in {report['ceph_up_s']} s ({report['ceph']})", flush=True)
            cam = kp_mod.TestCamera(d, CAM, "h264", "baichuan", "aes")
            k = None
            try:
                k = kp_mod.Keeppeek(config=CONFIG.format(store=rgw.tier_keys(d), url=cam.url(),
                                                         keep_local=a.keep_local, cam=CAM),
                                    env=rgw.tier_env())
                k.wait_running()
                kp_mod.wait_streaming(k, CAM, timeout=10.0)
                report["data_fs"] = pc.fs_type(k.dir)
                b = Bench(k, a, failures)
                t1 = time.monotonic()
                # Recordings close every ~10 s; the first is stripped ~after + keep_local s
                # after it closed. Twice that, and a minute more, is a failure.
                b.exports(t1 + 2 * (10 * (a.runs + a.warmup + 1) + 2 + a.keep_local) + 60)
                report["exports_s"] = round(time.monotonic() - t1, 1)
                if a.thumbs and not failures:
                    t2 = time.monotonic()
                    b.thumbnails()
                    report["thumbnails_s"] = round(time.monotonic() - t2, 1)
                report["final_metrics"] = b.metrics()
                report["resident_pages_after_drop"] = b.resident_after_drop
                report["samples"] = b.samples
                report["requests"] = b.rows
                report["references"] = ffprobe_refs(b.recs, d, failures)
            except (AssertionError, RuntimeError, OSError) as e:
                failures.append(f"{type(e).__name__}: {e}")
            finally:
                try:
                    if k is not None:
                        k.stop()  # before the camera: its loss is then no warning in the log
                finally:
                    cam.kill()
                if k is not None:
                    bad = k.unexpected_restarts()
                    if bad:
                        failures.append(f"workers restarted: {bad}")
                    log = k.log_text()
                    stop = log.find("stopping all workers")
                    report["keeppeekd_problems"] = [{"line": m.group(0)[:400], "at_stop": 0 <= stop < m.start()}
                                                    for m in PROBLEM.finditer(log)][:200]
                    report["keeppeekd_log_lines"] = log.count("\n")
                    if failures:
                        print("---- keeppeekd log (tail) ----\n" + log[-6000:], file=sys.stderr)
                        print(rgw.log_tail("rgw", 1500), file=sys.stderr)
                    if a.keep and failures:
                        print(f"tier-playback: kept {k.dir}", file=sys.stderr)
                    else:
                        k.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (programs, fixtures, reports)")
    ap.add_argument("--source", default=SRC, help="source tree (test/integration, the revision)")
    ap.add_argument("--runs", type=int, default=15, help="recordings exported cold (measured), each once")
    ap.add_argument("--warmup", type=int, default=1, help="recordings exported first, checked, not counted")
    ap.add_argument("--warm", type=int, default=3, help="warm exports of each recording after its cold one")
    ap.add_argument("--thumbs", type=int, default=15, help="thumbnails of each kind (0: none)")
    ap.add_argument("--keep-local", type=int, default=20,
                    help="[tier] keep_local in s: the window for the local exports of a copied recording")
    ap.add_argument("--rgw-nodelay", action="store_true",
                    help="radosgw with beast's tcp_nodelay=1 (the tests' harness leaves it off, the default)")
    ap.add_argument("--quick", action="store_true", help="5 runs, 2 warm exports each, 5 thumbnails of each kind")
    ap.add_argument("--dir", default="/tmp", help="where the Ceph cluster goes (a disk, not tmpfs)")
    ap.add_argument("--wait-quiet", type=float, default=30.0,
                    help="before starting, wait at most this long for the machine to be idle")
    ap.add_argument("--max-other", type=float, default=0.5, help="busy cores that count as idle")
    ap.add_argument("--keep", action="store_true", help="keep keeppeekd's directory of a failed run")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.warm, a.thumbs = 5, 2, 5
    if a.runs < 1 or a.warmup < 0 or a.warm < 1 or a.thumbs < 0:
        ap.error("--runs and --warm at least 1, --warmup and --thumbs at least 0")
    build = os.path.abspath(a.build)
    for p in ("supervisor/keeppeekd", "tierd/keeppeek-tierd", "test/camera/keeppeek-test-camera",
              "test/fixtures/main.h264"):
        if not os.path.exists(os.path.join(build, p)):
            raise SystemExit(f"tier-playback: {os.path.join(build, p)} missing: run `ninja -C {a.build}` first")
    os.environ["KP_BUILD_ROOT"] = build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import ceph_rgw  # noqa: E402
    import kp  # noqa: E402  (test/integration/kp.py: starts the real programs from the build tree)
    missing = ceph_rgw.missing()
    if missing:
        raise SystemExit(f"tier-playback: Ceph programs missing: {', '.join(missing)} (scripts/install-deps)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: stopping keeppeekd and the Ceph daemons"))

    failures = []
    report = {"benchmark": "tier-playback", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "build": build, "buildtype": buildtype(build),
              "dir_fs": pc.fs_type(a.dir), "nice": os.nice(0),
              "params": {"runs": a.runs, "warmup": a.warmup, "warm": a.warm, "thumbs": a.thumbs,
                         "keep_local_s": a.keep_local, "rollover_s": 10, "rgw_nodelay": a.rgw_nodelay}}
    cores, waited = pc.wait_quiet(a.wait_quiet, a.max_other)
    report["quiet_check"] = {"busy_cores": cores, "waited_s": waited, "quiet": cores <= a.max_other}
    report["load_before"] = pc.loadavg()
    window = pc.Window()
    run(kp, ceph_rgw, a, report, failures)
    window.finish(report)
    samples = report.get("samples", {})
    for key, _ in CASES:
        want = {"local_dropped": None, "local_cached": None, "remote_cold": a.runs, "remote_warm": a.runs * a.warm,
                "thumb_local": a.thumbs, "thumb_remote": a.thumbs}[key]
        got = len(samples.get(key, []))
        if want is not None and got != want and not failures:
            failures.append(f"{key}: {got} measured requests, expected {want}")
    if samples and len(samples.get("local_dropped", [])) < a.runs and not failures:
        failures.append(f"only {len(samples['local_dropped'])} local exports measured, fewer than --runs")
    report["cases"] = {key: {"what": what, "ms": pc.summary(samples.get(key, [])),
                             **per_request(report.get("requests", []), key)} for key, what in CASES}
    report["failures"] = failures
    md = markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(build, "perf"), "tier-playback", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


def buildtype(build):
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            return next((o["value"] for o in json.load(f) if o["name"] == "buildtype"), "?")
    except (OSError, ValueError):
        return "?"


def per_request(rows, case):
    """Bytes answered, fetches and bytes fetched per counted request of a case (p50)."""
    rows = [r for r in rows if r["case"] == case and r["counted"] and "failed" not in r]
    if not rows:
        return {}
    return {"answer_bytes_p50": pc.nearest_rank([r["bytes"] for r in rows], 50),
            "fetches_p50": pc.nearest_rank([r["fetches"] for r in rows], 50),
            "fetches_max": max(r["fetches"] for r in rows),
            "fetched_bytes_p50": pc.nearest_rank([r["fetched_bytes"] for r in rows], 50)}


def markdown(rep):
    f = pc.fmt
    ld = rep["load_during"]
    p = rep["params"]
    lines = [f"# tier-playback ({rep['label']})", "",
             f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}, build {rep['buildtype']}. "
             f"{rep.get('ceph', '')}, one mon + "
             f"one bluestore OSD + radosgw on loopback (tcp_nodelay {'on' if p['rgw_nodelay'] else 'off, the default'}"
             f"), Ceph on {rep['dir_fs']}, keeppeekd's data on {rep.get('data_fs', '?')}; nice {rep['nice']}.",
             f"Load average (1 min): {f(rep['load_before'][0])} before, {f(rep['load_after'][0])} after, "
             f"p50 {f(ld.get('p50'))} / max {f(ld.get('max'))} sampled every second over {f(rep['window_s'], 0)} s; "
             f"whole machine busy {f(rep['machine_busy_cores'])} cores of {rep['machine']['nproc']} "
             f"(steal {f(rep['steal_cores'])}), of them this run (keeppeekd, the camera, Ceph) "
             f"{f(rep.get('own_cores'))} and **other work {f(rep.get('other_cores'))} cores**. Quiet check before: "
             f"{f(rep['quiet_check']['busy_cores'])} busy cores after {f(rep['quiet_check']['waited_s'], 0)} s of "
             f"waiting{'' if rep['quiet_check']['quiet'] else ' (not quiet)'}. Ceph up in "
             f"{f(rep.get('ceph_up_s'), 1)} s; exports {f(rep.get('exports_s'), 0)} s, thumbnails "
             f"{f(rep.get('thumbnails_s'), 1)} s.", "",
             f"One H.264 test camera, 1920x1080 main; recordings of ~10 s (rollover_secs = 10), copied 2 s after "
             f"they close, stripped {p['keep_local_s']} s after their copy. {p['runs']} recordings exported cold "
             f"after {p['warmup']} warm-up, each then {p['warm']} times warm; every request on a new TCP connection. "
             "ms from the request to the last byte of the answer; nearest rank.", "",
             "| case | n | p50 ms | p95 ms | min | max | answer bytes p50 | fetches p50 (max) | fetched bytes p50 "
             "| p50 / local dropped p50 |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    cases = rep.get("cases", {})
    base = cases.get("local_dropped", {}).get("ms", {}).get("p50")
    tbase = cases.get("thumb_local", {}).get("ms", {}).get("p50")
    for key, c in cases.items():
        s = c["ms"]
        if not s.get("n"):
            continue
        b = tbase if key.startswith("thumb") else base
        lines.append(f"| {c['what']} | {s['n']} | {f(s['p50'])} | {f(s['p95'])} | {f(s['min'])} | {f(s['max'])} "
                     f"| {f(c.get('answer_bytes_p50'))} | {f(c.get('fetches_p50'))} ({f(c.get('fetches_max'))}) "
                     f"| {f(c.get('fetched_bytes_p50'))} | {f(s['p50'] / b if b else None, 1)}x |")
    refs = rep.get("references", [])
    if refs:
        lines += ["", f"{len(refs)} recordings exported while local (the references): "
                  f"{f(min(r['bytes'] for r in refs))}–{f(max(r['bytes'] for r in refs))} bytes, "
                  f"{min(r['packets'] for r in refs)}–{max(r['packets'] for r in refs)} video packets, "
                  "ffprobe-clean; "
                  f"every remote export byte-equal to its reference. Pages of a local file still cached after "
                  f"DONTNEED: {rep.get('resident_pages_after_drop', 0)} in all."]
    rows = rep.get("requests", [])
    if rows:
        waited = [r["settle_ms"] for r in rows if r["waited_for_copy"]]
        lines += ["", f"{len(rows)} requests in all (warm-up included); {len(waited)} waited for a copy to end first "
                  f"(at most {f(max(waited, default=0.0), 0)} ms); during {sum(1 for r in rows if r['copies_during'])} "
                  f"a copy was queued or ended, during {sum(1 for r in rows if r['strips_during'])} a file was "
                  "stripped."]
    fm = rep.get("final_metrics")
    if fm:
        lines += ["", "At the end: " + ", ".join(f"{k} {f(int(v))}" for k, v in fm.items()) + "."]
    probs = rep.get("keeppeekd_problems", [])
    lines += ["", f"keeppeekd's log: {rep.get('keeppeekd_log_lines', 0)} lines, {len(probs)} warnings or errors"
              + (":" if probs else ".")]
    lines += [f"    {x['line']}{'  (after keeppeekd began to stop)' if x['at_stop'] else ''}" for x in probs[:20]]
    if rep["failures"]:
        lines += ["", "## Failures", ""] + [f"* {x}" for x in rep["failures"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
