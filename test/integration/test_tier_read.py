"""The read path of tiering (docs/tier.md, step 7) with keeppeekd, a test camera and a real
Ceph RADOS Gateway (ceph_rgw.py). With `[tier] after = 2s` and `keep_local = 12s`, each closed
recording is copied, kept whole 12 s more, then marked remote (a sidecar `<file>.tier` says
where its object is) and stripped to its init segment and fragment headers: the file keeps
its size but not its disk blocks. An export of a recording made while it was local and the
same export once it is remote are the same bytes (the samples read back from the store with
ranged GETs into the read cache); the second export of it is answered from the cache, a
thumbnail of it is decoded from a keyframe read back too. With the OSD stalled, an export of
a remote recording not cached is answered 503 within recorderd's wait, while the API answers
and recording goes on; with the OSD running again it is served. The OSD killed for 10 s and
started again: every recording closed meanwhile is copied and stripped, none lost. A catalog
rebuilt from the files knows the remote recordings from their sidecars and still plays them;
a backup with the media copies a stripped file as sparse as it is. Then everything is
restarted (keeppeekd stopped, radosgw killed and started, keeppeekd started on the same
data): the remote recording is read back again, the same bytes, and tiering goes on.
Stored playback of a remote recording over WebRTC (rtcd's cursor, aiortc) with its first
fragment alone cached (a thumbnail read it back) and the OSD stalled: that fragment plays at
once and the continuation waits for the store; with the OSD running again the rest is read
back and the position goes seconds past that fragment; the frames decode without error
(aiortc, and ffmpeg from the access units received). No worker restarts."""
import asyncio
import atexit
import json
import logging
import os
import re
import signal
import subprocess
import threading
import time

import ceph_rgw
import kp_rtc  # before anything starts: it runs the test again under Debian's python3 (aiortc)
from kp import TIME_SCALE, TestCamera, check, metric, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {{dir}}/data
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
[tier]
{store}after = 2s
keep_local = 12s
cache_size = 16
part_size = 5
timeout = 10
[camera "read-cam"]
url = {url}
rollover_secs = 10
"""

STORED = re.compile(r"recording (\d+): (recordings/read-cam/main/(\d+)\.mp4) stored, (\d+) bytes")
STRIPPED = re.compile(r"recording (\d+): (recordings/read-cam/main/\d+\.mp4) now holds its headers only")


def recording_of(kp, tok, name_ms):
    """The main recording whose file is named name_ms (its start, or up to 15 ms after)."""
    st, _, body = kp.http("GET", f"/api/v1/recordings?camera=read-cam&stream=main&from={name_ms - 60000}"
                                 f"&to={name_ms + 60000}", None, {"Authorization": "Bearer " + tok})
    check(st == 200, f"recordings: {st} {body[:200]!r}")
    for r in json.loads(body)["recordings"]:
        if 0 <= name_ms - r["start_ms"] <= 15:
            return r
    return None


def recorded_until(kp, tok):
    """The end of the newest main recording (the open one grows with each fragment)."""
    now = int(time.time() * 1000)
    st, _, body = kp.http("GET", f"/api/v1/recordings?camera=read-cam&stream=main&from={now - 120000}&to={now}",
                          None, {"Authorization": "Bearer " + tok})
    return max((r["end_ms"] for r in json.loads(body)["recordings"]), default=0) if st == 200 else 0


def export(kp, tok, rec, timeout=30):
    """(status, body) of the export of the whole recording rec."""
    st, _, body = kp.http("GET", f"/api/v1/export?camera=read-cam&stream=main&from={rec['start_ms']}"
                                 f"&to={rec['end_ms']}", None, {"Authorization": "Bearer " + tok},
                          timeout=timeout)
    return st, body


def plays(work, body):
    path = os.path.join(work, "clip.mp4")
    with open(path, "wb") as f:
        f.write(body)
    p = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True,
                       text=True)
    return p.returncode == 0 and not p.stderr.strip(), p.stderr[:300]


class AccessUnits(logging.Handler):
    """While open: the access units (Annex B) aiortc's H.264 decoder is given, in order, and
    the decode failures it logs (it skips such a frame without telling the track)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.units, self.failures = [], []

    def __enter__(self):
        import aiortc.codecs.h264 as h264
        self.cls, self.plain = h264.H264Decoder, h264.H264Decoder.decode
        self.log = logging.getLogger(h264.__name__)
        self.log.addHandler(self)

        def decode(decoder, frame):
            self.units.append(bytes(frame.data))
            return self.plain(decoder, frame)
        self.cls.decode = decode
        return self

    def emit(self, record):
        self.failures.append(record.getMessage())

    def __exit__(self, *exc):
        self.cls.decode = self.plain
        self.log.removeHandler(self)


async def play(kp, tok, at_ms, osd):
    """A stored playback session of read-cam's main stream from at_ms: 3 s of it with the
    OSD stalled, then with it running again until its position is 5 s past at_ms (15 s at
    most). Its decoded frames, the positions of its states and its errors (an "ended" state
    too) in each part, and the reads waiting for the store at the end of the first."""
    sig = kp_rtc.Signaling(kp, tok, asyncio.get_running_loop())
    parts = []

    async def follow(v, seconds, until_ms=None):
        positions, errors = [], []
        end = time.monotonic() + seconds
        while time.monotonic() < end and not errors and not (until_ms and positions and positions[-1] >= until_ms):
            try:
                m = await sig.next("pb-remote", ("state", "error", "closed"), timeout=end - time.monotonic())
            except asyncio.TimeoutError:
                break
            if m["type"] != "state" or m.get("ended"):
                errors.append(m)
            elif m.get("connected") and m.get("playing"):
                positions.append(m["position_ms"])
        parts.append((v.frames, positions, errors))

    try:
        v = kp_rtc.Viewer(sig, "pb-remote", "read-cam", stream="main", mode="playback", at_ms=at_ms)
        os.kill(osd.pid, signal.SIGSTOP)
        try:
            await v.open()
            await follow(v, 3.0)
            waiting = metric(kp, tok, "keeppeek_tier_reads_waiting")
        finally:
            os.kill(osd.pid, signal.SIGCONT)
        await follow(v, 15.0, at_ms + 5000)
        return parts, waiting
    finally:
        await kp_rtc.close_all()


def test(make, rgw, work):
    cam = TestCamera(work, "read-cam", "h264", "baichuan", "aes")
    atexit.register(cam.kill)  # also when a check fails before the end
    config = CONFIG.format(store=rgw.tier_keys(work), url=cam.url())
    kp = make(config=config, env=rgw.tier_env())
    kp.wait_running()
    wait_streaming(kp, "read-cam", timeout=10.0)
    tok = kp.token()

    # The first main recording copied: exported while it is still local (keep_local).
    first = wait_for(lambda: STORED.search(kp.log_text()), 90, 0.05)
    check(first, "a closed main recording is copied to the store")
    rid, key, name_ms = first.group(1), first.group(2), int(first.group(3))
    rec = recording_of(kp, tok, name_ms)
    check(rec, f"{key} is listed")
    st, before = export(kp, tok, rec)
    check(st == 200 and len(before) > 100000, f"export of {key} while local: {st}, {len(before)} bytes")
    ok, why = plays(work, before)
    check(ok, f"it plays ({why})")
    local = os.path.join(kp.data, key)
    size = os.path.getsize(local)

    # Marked remote and stripped once keep_local has passed.
    stripped = wait_for(lambda: re.search(r"recording " + rid + r": \S+ now holds its headers only",
                                          kp.log_text()), 60, 0.1)
    check(stripped, f"{key} is stripped 12 s after its copy")
    side = open(local + ".tier").read()
    check(f"key={key}\n" in side and f"size={size}\n" in side and "etag=" in side,
          f"its sidecar says where its object is ({side!r})")
    stt = os.stat(local)
    check(stt.st_size == size and stt.st_blocks * 512 < size // 4,
          f"the local file keeps its size ({stt.st_size} of {size}) but not its blocks ({stt.st_blocks * 512} bytes)")

    # Stored playback of the remote recording, through rtcd's cursor (MediaOpen spans of 60 s,
    # then continuations). A thumbnail at its start reads back its first fragment alone. With
    # the OSD stalled, the cursor's first answer is that fragment at once (cut before the
    # first piece not cached) and its continuation waits for the store; with the OSD running
    # again the rest of the recording is read back and the playback goes on.
    at = rec["start_ms"] + 200
    fetches0 = metric(kp, tok, "keeppeek_tier_fetches_total") or 0
    st, _, jpeg = kp.http("GET", f"/api/v1/cameras/read-cam/thumbnail?t={at}&stream=main", None,
                          {"Authorization": "Bearer " + tok}, timeout=30)
    fetches1 = metric(kp, tok, "keeppeek_tier_fetches_total")
    cached = metric(kp, tok, "keeppeek_tier_cache_bytes")
    check(st == 200 and jpeg[:2] == b"\xff\xd8" and fetches1 == fetches0 + 1 and cached < size // 2,
          f"a thumbnail at the start of the remote {key} reads back one fragment ({st}, fetches {fetches0} -> "
          f"{fetches1}, {cached} of its {size} bytes cached)")
    t0 = time.monotonic()
    with AccessUnits() as aus:
        ((frames0, stalled, errors0), (frames, positions, errors)), waiting = asyncio.run(
            play(kp, tok, at, rgw.procs["osd"]))
    took = time.monotonic() - t0
    fetches2 = metric(kp, tok, "keeppeek_tier_fetches_total")
    print(f"     playback of the remote recording in {took:.1f} s: with the OSD stalled {frames0} frames, positions "
          f"{[p - rec['start_ms'] for p in stalled]}, {waiting} reads waiting; then {frames} frames, positions "
          f"{[p - rec['start_ms'] for p in positions]} ms from its start; fetches {fetches1} -> {fetches2}")
    check(not errors0 and not errors, f"the playback of the remote {key} goes on without an error or an end "
                                      f"({errors0 + errors})")
    check(frames0 >= 15 and stalled and stalled[-1] >= at + 300 and max(stalled) < rec["start_ms"] + 2000 and
          waiting and waiting >= 1,
          f"with the store stalled its cached first fragment (1 s) plays at once ({frames0} frames, positions "
          f"{[p - rec['start_ms'] for p in stalled]} ms from its start) and the continuation waits for the "
          f"store ({waiting} reads waiting)")
    check(positions and positions[-1] >= at + 5000,
          f"with the store back the continuation is answered and the position goes 5 s in, past the fragment "
          f"cached before ({[p - rec['start_ms'] for p in positions]} ms from its start)")
    check(fetches2 > fetches1, f"its samples were read back from the store ({fetches1} -> {fetches2})")
    check(frames >= 100 and len(aus.units) >= 100 and not aus.failures,
          f"aiortc decodes {frames} frames of it without a failure ({len(aus.units)} access units; "
          f"{aus.failures[:3]})")
    path = os.path.join(work, "playback.h264")
    with open(path, "wb") as f:
        f.write(b"".join(aus.units))
    p = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "h264", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and not p.stderr.strip(),
          f"ffmpeg decodes the {len(aus.units)} access units received without a message ({p.stderr[-300:]!r})")

    rc, out, err = kp.ctl("check")
    check(rc == 0 and "byte total" not in out,
          f"keeppeekctl check finds nothing wrong with a remote recording (its byte total, its headers) "
          f"({rc} {out.strip()[-400:]}{err.strip()})")

    # The thumbnail and the playback read its samples back (a playback answer asks for up to
    # 8 MiB): its export is answered from the read cache, and is the same bytes. (On a slow
    # machine the session may end before the player asked for the last piece: what it did
    # not read is fetched now.)
    hits0 = metric(kp, tok, "keeppeek_tier_cache_hits_total")
    st, after = export(kp, tok, rec)
    check(st == 200 and after == before,
          f"the export of the remote {key} is the same {len(before)} bytes as when it was local "
          f"({st}, {len(after)} bytes{', differing' if st == 200 and after != before else ''})")
    check(metric(kp, tok, "keeppeek_tier_cache_hits_total") > hits0,
          "it is answered from what the playback read back from the store")
    fetches1 = metric(kp, tok, "keeppeek_tier_fetches_total")
    hits0 = metric(kp, tok, "keeppeek_tier_cache_hits_total")
    st, again = export(kp, tok, rec)
    check(st == 200 and again == before and metric(kp, tok, "keeppeek_tier_fetches_total") == fetches1 and
          metric(kp, tok, "keeppeek_tier_cache_hits_total") > hits0,
          "a second export is answered from the read cache, no fetch")
    mid = (rec["start_ms"] + rec["end_ms"]) // 2
    st, h, jpeg = kp.http("GET", f"/api/v1/cameras/read-cam/thumbnail?t={mid}", None,
                          {"Authorization": "Bearer " + tok}, timeout=30)
    check(st == 200 and h.get("content-type") == "image/jpeg" and jpeg[:2] == b"\xff\xd8",
          f"a thumbnail of the remote recording decodes from a keyframe read back ({st} {jpeg[:80]!r})")
    cache = metric(kp, tok, "keeppeek_tier_cache_bytes")
    limit = metric(kp, tok, "keeppeek_tier_cache_limit_bytes")
    check(cache and limit == 16 * 1024 * 1024 and cache <= limit, f"the read cache holds {cache} of {limit} bytes")
    rc, out, err = kp.ctl("tier", "status")
    check(rc == 0 and "files stripped to their headers" in out and "read cache:" in out,
          f"keeppeekctl tier status tells the strips and the cache ({out.strip()}{err.strip()})")

    # The OSD stalled: a remote recording not cached is answered 503 within recorderd's
    # wait (8 s), the API answers meanwhile and recording goes on.
    seen = {rid}
    other = wait_for(lambda: next((m for m in STRIPPED.finditer(kp.log_text()) if m.group(1) not in seen), None),
                     60, 0.1)
    check(other, "another main recording is stripped")
    rec2 = recording_of(kp, tok, int(os.path.basename(other.group(2)).split(".")[0]))
    osd = rgw.procs["osd"]
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        got = {}

        def slow():
            t0 = time.monotonic()
            got["st"], got["body"] = export(kp, tok, rec2, timeout=60)
            got["s"] = time.monotonic() - t0
        th = threading.Thread(target=slow)
        th.start()
        time.sleep(1)
        t0 = time.monotonic()
        st, _, _ = kp.http("GET", "/api/v1/cameras", None, {"Authorization": "Bearer " + tok})
        fast = time.monotonic() - t0
        check(st == 200 and fast < 1.0 * TIME_SCALE, f"the API answers while the store stalls ({st} in {fast:.2f} s)")
        end0 = recorded_until(kp, tok)
        th.join(60)
        check(got.get("st") == 503 and got["s"] < 12 * TIME_SCALE,
              f"the export of a remote recording with the store stalled is refused 503 in {got.get('s', 0):.1f} s "
              f"({got.get('st')} {got.get('body', b'')[:160]!r})")
        check(b"store_unavailable" in got["body"], f"and says why ({got['body'][:200]!r})")
        later = wait_for(lambda: end0 and recorded_until(kp, tok) > end0 + 2000, 20, 0.5)
        check(later, f"recording goes on while the store stalls ({end0} -> {recorded_until(kp, tok)})")
    finally:
        os.kill(osd.pid, signal.SIGCONT)
    refused = metric(kp, tok, "keeppeek_tier_reads_refused_total")
    check(refused and refused >= 1, f"keeppeek_tier_reads_refused_total counts it ({refused})")
    # The OSD resumed may take a few seconds (its heartbeats) before it answers again: an
    # export meanwhile is refused 503 like the one above, and the next one is served.
    st, body = wait_for(lambda: (a := export(kp, tok, rec2))[0] == 200 and a, 40, 0.5) or export(kp, tok, rec2)
    ok, why = plays(work, body) if st == 200 else (False, "")
    check(st == 200 and ok, f"with the OSD running again it is served ({st}, {len(body)} bytes) and plays ({why})")

    # The OSD killed for 10 s: a copy under way waits for it or fails and is retried; once
    # it is back every closed main recording is copied and stripped.
    # Killed 2.5 s after a main recording closes: its copy (after = 2s) is under way.
    opened = len(re.findall(r"read-cam/main: recording to ", kp.log_text()))
    check(wait_for(lambda: len(re.findall(r"read-cam/main: recording to ", kp.log_text())) > opened, 30, 0.05),
          "a main recording closes")
    time.sleep(2.5)
    rgw.kill("osd")
    killed_at = int(time.time() * 1000)
    time.sleep(10)
    rgw.start("osd")
    resumed_after = int(time.time() * 1000)

    def all_stripped():
        root = os.path.join(kp.data, "recordings", "read-cam", "main")
        names = sorted((f for f in os.listdir(root) if f.endswith(".mp4")), key=lambda f: int(f.split(".")[0]))
        closed = [f for f in names[:-1] if int(f.split(".")[0]) < resumed_after]
        spanned = [f for f in closed if int(f.split(".")[0]) > killed_at - 10000]
        if len(spanned) < 2:
            return None
        return all(os.path.exists(os.path.join(root, f + ".tier")) for f in closed) and closed
    done = wait_for(all_stripped, 180, 1.0)
    check(done, "with the OSD back, every recording closed before and during its 10 s down is copied and stripped")
    print(f"     copies failed and retried meanwhile: {metric(kp, tok, 'keeppeek_tier_failures_total')}")

    # A catalog rebuilt from the files: the remote recordings are known from their sidecars.
    rc, out, err = kp.ctl("check", "--rebuild")
    m = re.search(r"recordings: \d+ from \d+ files \(\d+ fragments, (\d+) with their media in the store\)", out)
    check(rc == 0 and m and int(m.group(1)) >= len(done),
          f"the rebuild finds the remote recordings' sidecars ({out.strip()}{err.strip()})")
    rec = wait_for(lambda: recording_of(kp, tok, name_ms), 20, 0.5)
    st, rebuilt = export(kp, tok, rec) if rec else (0, b"")
    check(st == 200 and rebuilt == before, f"after the rebuild the first recording still exports the same bytes "
                                           f"({st}, {len(rebuilt)} bytes)")

    # A backup with the media keeps a stripped file as sparse as it is, and its sidecar.
    backup = os.path.join(work, "backup")
    rc, out, err = kp.ctl("backup", backup, "--media")
    copy = os.path.join(backup, "data", key)
    check(rc == 0 and os.path.isfile(copy) and os.path.isfile(copy + ".tier"),
          f"keeppeekctl backup --media copies the stripped file and its sidecar ({rc} {err.strip()})")
    with open(local, "rb") as a, open(copy, "rb") as b:
        same = a.read() == b.read()
    cst = os.stat(copy)
    check(same and cst.st_size == size and cst.st_blocks * 512 < size // 4,
          f"the copy has the same bytes and size ({cst.st_size}) and stays sparse ({cst.st_blocks * 512} bytes "
          f"of blocks)")

    # Everything restarted: keeppeekd stopped, radosgw killed and started again, keeppeekd
    # started again on the same data directory. The read cache starts empty; the remote
    # recording is read back from the store again, the same bytes; the catalog checks clean.
    check(kp.stop() is not None, "keeppeekd stops")
    rgw.kill("rgw")
    rgw.start("rgw")
    again = make(config=config.replace("data_dir = {dir}/data", f"data_dir = {kp.data}"),
                 env=rgw.tier_env())
    again.wait_running()
    tok2 = again.token()
    # (A strip's work file, strip-ID, may be there: recordings closed meanwhile are stripped.)
    cached = [f for f in os.listdir(os.path.join(kp.data, "tier-cache")) if not f.startswith("strip-")]
    check(not cached, f"the read cache starts empty ({cached})")
    rec = wait_for(lambda: recording_of(again, tok2, name_ms), 20, 0.5)
    f0 = metric(again, tok2, "keeppeek_tier_fetches_total") or 0
    st, restarted = export(again, tok2, rec) if rec else (0, b"")
    check(st == 200 and restarted == before and metric(again, tok2, "keeppeek_tier_fetches_total") > f0,
          f"after the restart the first recording is read back from the store, the same bytes ({st}, "
          f"{len(restarted)} bytes)")
    rc, out, err = again.ctl("check")
    check(rc == 0 and " 0 problems" in out, f"keeppeekctl check finds no problem after it ({out.strip()[-200:]})")
    newer = wait_for(lambda: re.search(r"recording \d+: \S+ now holds its headers only", again.log_text()), 60, 0.5)
    check(newer, "the restarted server goes on copying and stripping")
    cam.kill()


def main():
    ceph_rgw.with_cluster("kp-tier-read-", lambda rgw, d: run(lambda make: test(make, rgw, d)))


if __name__ == "__main__":
    main()
