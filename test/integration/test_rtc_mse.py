"""The MSE fallback (docs/decisions/0016-mse-fallback.md) through webd's /api/v1/rtc
WebSocket with the real supervisor and RTSP test cameras: {"type":"mse"} is answered with
the MIME type, then binary messages (one byte of sid length, the sid, fMP4) that make an
init segment and fragments ffprobe and ffmpeg decode without error, H.264 at the
camera's frame rate; an H.265 camera is sent as H.265 to a browser whose MSE plays it
and falls back to its H.264 sub stream otherwise; an unknown camera gets an error naming
the sid; the 17th MSE session on one WebSocket is refused ("admission"); bye stops the
pieces; rtcd's and webd's metrics count sessions, bytes and pieces. A browser that reads
nothing for 8 s loses pieces in webd (counted) while another WebSocket's MSE session
keeps its frame rate, and what the slow one then reads of a session decodes without
error and resumes after each gap at a keyframe. The MIME type of every answer names the
codecs of the record in the init segment (RFC 6381, ISO/IEC 14496-15 annex E), whose
profile and level are those ffprobe reads from the stream. Cameras with B-frames (the
bframes fixtures: x264, 2; x265, 3) are sent in decode order with their composition
offsets: strictly increasing DTS, the source's PTS - DTS, and ffmpeg shows the frames in
strictly increasing PTS without a message. An H.265-only camera goes to an H.264-only
MSE as the transcoder's H.264 ("transcode", counted); past [rtc] max_transcodes the
next one is refused with transcode_busy, counted. No worker restarts."""
import json
import os
import subprocess
import tempfile
import time

import kp_ws
from kp import TestCamera, cameras, check, metric, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
max_transcodes = 1
"""
HEVC_PROFILES = {1: "Main", 2: "Main 10"}
AVC_PROFILES = {66: ("Baseline", "Constrained Baseline"), 77: ("Main",), 100: ("High",)}


def collect(ws, sid, seconds):
    """The "mse" answer (or error) for sid and the fMP4 bytes of its pieces for seconds."""
    answer, pieces = None, []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            kind, data = ws.recv(timeout=max(0.05, deadline - time.monotonic()))
        except TimeoutError:
            break
        if kind == "text":
            m = json.loads(data)
            if m.get("sid") == sid and m["type"] in ("mse", "error"):
                answer = m
                if m["type"] == "error":
                    return answer, pieces
        elif kind == "binary":
            n = data[0]
            if len(data) <= 1 + n:
                check(False, f"a binary piece holds more than its sid ({data!r})")
            if data[1:1 + n].decode() == sid:
                pieces.append(bytes(data[1 + n:]))
        else:
            check(False, f"the WebSocket stays open ({kind} {data})")
    return answer, pieces


def probe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=codec_name,width,height,nb_read_frames,profile,level", "-of", "json", path],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0 and not out.stderr.strip(), f"ffprobe reads {path} without error: {out.stderr[-400:]}")
    return json.loads(out.stdout)["streams"][0]


def decodes(path):
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True, text=True,
                         timeout=60)
    check(out.returncode == 0 and not out.stderr.strip(), f"ffmpeg decodes {path} without error: {out.stderr[-400:]}")


def record_codecs(init):
    """The codecs parameter the sample entry's avcC/hvcC record in init says (RFC 6381;
    ISO/IEC 14496-15 E.3 for hev1), read here without our C code."""
    i = init.find(b"avcC")
    if i >= 0:
        return "avc1.%02x%02x%02x" % tuple(init[i + 5:i + 8])
    i = init.find(b"hvcC")
    check(i >= 0 and init.find(b"hev1") >= 0, "the init segment has an avcC or an hev1 sample entry with hvcC")
    c = init[i + 4:i + 4 + 13]
    flags = int.from_bytes(c[2:6], "big")
    rev = int(format(flags, "032b")[::-1], 2)
    cons = list(c[6:12])
    while cons and cons[-1] == 0:
        cons.pop()
    s = "hev1.%s%d.%X.%s%d" % (["", "A", "B", "C"][c[1] >> 6], c[1] & 0x1F, rev, "H" if c[1] & 0x20 else "L", c[12])
    return s + "".join(".%X" % b for b in cons)


def check_codecs(sid, answer, init, st):
    """The answer's MIME type against the init segment's record and ffprobe's profile and level."""
    codecs = answer["mime"].split('codecs="')[1].rstrip('"')
    check(codecs == record_codecs(init), f"{sid}: the MIME type names the init segment's record "
          f"({codecs}, record {record_codecs(init)})")
    if codecs.startswith("avc1."):
        prof, level = int(codecs[5:7], 16), int(codecs[9:11], 16)
        check(st.get("profile") in AVC_PROFILES.get(prof, ()) and level == st.get("level"),
              f"{sid}: {codecs} is the stream's profile and level (ffprobe: {st.get('profile')}, {st.get('level')})")
    else:
        parts = codecs.split(".")
        prof, level = int(parts[1].lstrip("ABC")), int(parts[3][1:])
        check(HEVC_PROFILES.get(prof) == st.get("profile") and level == st.get("level"),
              f"{sid}: {codecs} is the stream's profile and level (ffprobe: {st.get('profile')}, {st.get('level')})")


def check_bframes(path):
    """Decode order with composition offsets: DTS strictly increasing and not negative,
    some PTS != DTS, frames out of the decoder in strictly increasing PTS, no message."""
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,dts",
                        "-of", "csv=p=0", path], capture_output=True, text=True, timeout=60)
    pk = [tuple(int(x) for x in line.split(",")[:2]) for line in r.stdout.split()]
    dts = [d for _, d in pk]
    check(r.returncode == 0 and not r.stderr.strip() and len(pk) > 20, f"{path}: packets ({r.stderr[:300]!r})")
    check(min(dts) >= 0 and all(b > a for a, b in zip(dts, dts[1:])),
          f"{path}: DTS strictly increasing, none negative ({dts[:12]})")
    check(sum(p != d for p, d in pk) > len(pk) // 2, f"{path}: composition offsets are sent ({pk[:8]})")
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=pts",
                        "-of", "csv=p=0", path], capture_output=True, text=True, timeout=60)
    pts = [int(x.split(",")[0]) for x in r.stdout.split()]
    check(len(pts) >= len(pk) - 3 and all(b > a for a, b in zip(pts, pts[1:])),
          f"{path}: {len(pts)} frames shown in strictly increasing PTS ({pts[:12]})")
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "warning", "-i", path, "-f", "null", "-"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and not r.stderr.strip(), f"{path}: decodes without a message ({r.stderr[-400:]!r})")


def drain(ws):
    while True:
        try:
            ws.recv(timeout=0.3)
        except TimeoutError:
            return


def gaps_start_at_keyframes(path):
    """The number of gaps in the decode timeline (pieces webd dropped); fails when a
    packet after a gap is not a keyframe."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "packet=dts_time,flags", "-of", "csv=p=0", path], capture_output=True, text=True, timeout=60)
    pk = [(float(a), b) for a, b in (line.split(",")[:2] for line in out.stdout.split())]
    steps = sorted(b[0] - a[0] for a, b in zip(pk, pk[1:]))
    usual = steps[len(steps) // 2]
    gaps = [(a, b) for a, b in zip(pk, pk[1:]) if b[0] - a[0] > 2 * usual]
    bad = [b for _, b in gaps if "K" not in b[1]]
    check(not bad, f"every gap left by dropped pieces ends at a keyframe ({len(gaps)} gaps; not: {bad[:3]})")
    return len(gaps)


def check_stream(work, ws, sid, codec, seconds=3.0, **req):
    drain(ws)
    ws.send_text(json.dumps({"type": "mse", "sid": sid, **req}))
    answer, pieces = collect(ws, sid, seconds)
    check(answer and answer["type"] == "mse", f"{sid}: answered with type mse ({answer})")
    check(answer["codec"] == codec, f"{sid}: codec {codec} ({answer})")
    check(answer["mime"].startswith('video/mp4; codecs="' + ("avc1." if codec == "h264" else "hev1.")),
          f"{sid}: a MIME type MediaSource.isTypeSupported understands ({answer['mime']})")
    check(len(pieces) > 20, f"{sid}: more than 20 pieces in {seconds} s ({len(pieces)})")
    if len(pieces) < 2:
        return answer, pieces
    check(pieces[0][4:8] == b"ftyp", f"{sid}: the first piece is an init segment ({pieces[0][:16]!r})")
    check(all(p[4:8] == b"prft" for p in pieces[1:]), f"{sid}: every later piece is a fragment")
    path = os.path.join(work, sid + ".mp4")
    with open(path, "wb") as f:
        f.write(b"".join(pieces))
    st = probe(path)
    check(st["codec_name"] == ("h264" if codec == "h264" else "hevc"), f"{sid}: ffprobe sees {codec} ({st})")
    frames = int(st["nb_read_frames"])
    check(frames >= len(pieces) - 1 - 2, f"{sid}: a frame per fragment ({frames} frames, {len(pieces) - 1} fragments)")
    decodes(path)
    check_codecs(sid, answer, pieces[0], st)
    return answer, pieces, path


def test(make):
    work = tempfile.mkdtemp(prefix="kp-mse-")
    cam = TestCamera(work, "cam", "h264", "rtsp")
    hevc = TestCamera(work, "hevc", "h265", "rtsp", main="main.h265", sub="sub.h264")
    # Main streams only: B-frames (H.264 and H.265), and H.265 without an H.264 sub stream.
    only = {"bf264": TestCamera(work, "bf264", "h264", "rtsp", main="bframes.h264.ts"),
            "bf265": TestCamera(work, "bf265", "h265", "rtsp", main="bframes.h265.ts"),
            "h265only": TestCamera(work, "h265only", "h265", "rtsp", main="main.h265")}
    try:
        kp = make(config=CONFIG + f'[camera "cam"]\nurl = {cam.url()}\nsub_url = {cam.sub_url()}\n'
                  f'[camera "hevc"]\nurl = {hevc.url()}\nsub_url = {hevc.sub_url()}\n'
                  + "".join(f'[camera "{n}"]\nurl = {c.url()}\nstreams = main\n' for n, c in only.items()))
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(
            c[n]["streams"][i]["state"] == "streaming" for n in ("cam", "hevc") for i in (0, 1)) and all(
            c[n]["streams"][0]["state"] == "streaming" for n in only), 30),
            "cameras streaming")
        admin, viewer = kp.token("admin"), kp.token("viewer")
        ws = kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + viewer})
        time.sleep(1.5)  # rtcd learns each stream's codec from its first access unit

        check_stream(work, ws, "m1", "h264", camera="cam", stream="main")
        check(metric(kp, admin, "keeppeek_rtc_mse_sessions") == 1, "rtcd counts one MSE session")
        check(metric(kp, admin, "keeppeek_rtc_mse_bytes_total") > 10000, "rtcd counts MSE bytes")
        check(metric(kp, admin, "keeppeek_webd_mse_pieces_total") > 20, "webd counts MSE pieces")
        check(metric(kp, admin, "keeppeek_webd_mse_dropped_total") == 0, "webd dropped no piece")
        ws.send_text(json.dumps({"type": "bye", "sid": "m1"}))
        # What was sent while ffprobe ran is still in the socket: read it, then expect none.
        collect(ws, "m1", 2.0)
        _, late = collect(ws, "m1", 1.5)
        check(not late, f"no piece after bye ({len(late)})")
        check(metric(kp, admin, "keeppeek_rtc_mse_sessions") == 0, "the session ended with bye")

        a, _, _ = check_stream(work, ws, "h1", "h264", camera="hevc", stream="main", codecs="h264")
        check(a.get("fallback") == "sub-h264" and a["stream"] == "sub", f"H.265 to an H.264-only MSE: the sub ({a})")
        ws.send_text(json.dumps({"type": "bye", "sid": "h1"}))
        a, _, _ = check_stream(work, ws, "h2", "h265", camera="hevc", stream="main", codecs="h264,h265")
        check("fallback" not in a, f"H.265 to an MSE that plays it: as is ({a})")
        ws.send_text(json.dumps({"type": "bye", "sid": "h2"}))

        for n, codec, codecs in (("bf264", "h264", "h264"), ("bf265", "h265", "h264,h265")):
            _, _, path = check_stream(work, ws, n, codec, camera=n, stream="main", codecs=codecs)
            ws.send_text(json.dumps({"type": "bye", "sid": n}))
            check_bframes(path)

        # H.265 only, to an H.264-only MSE: the transcoder's H.264 (it starts on demand).
        a, _, _ = check_stream(work, ws, "t1", "h264", seconds=8.0, camera="h265only", stream="main",
                               codecs="h264")
        check(a.get("fallback") == "transcode" and a["stream"] == "main", f"H.265 only: transcoded ({a})")
        check(metric(kp, admin, "keeppeek_rtc_mse_transcoded_total") == 1, "rtcd counts the transcoded session")
        ws.send_text(json.dumps({"type": "mse", "sid": "t2", "camera": "bf265", "stream": "main", "codecs": "h264"}))
        a, _ = collect(ws, "t2", 3)
        check(a and a["type"] == "error" and a["code"] == "transcode_busy" and "H.265" in a["message"],
              f"past max_transcodes: transcode_busy for its sid, saying why ({a})")
        check(metric(kp, admin, "keeppeek_rtc_mse_codec_refused_total") == 1, "rtcd counts the refusal")
        ws.send_text(json.dumps({"type": "bye", "sid": "t1"}))

        # A slow browser: four main streams on a WebSocket that reads nothing for 8 s.
        slow = kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + viewer})
        for i in range(4):
            slow.send_text(json.dumps({"type": "mse", "sid": f"slow{i}", "camera": "cam", "stream": "main"}))
        time.sleep(8)
        check_stream(work, ws, "fast", "h264", camera="cam", stream="main")
        dropped = metric(kp, admin, "keeppeek_webd_mse_dropped_total")
        check(dropped > 0, f"webd dropped pieces of the slow WebSocket ({dropped})")
        for i in range(1, 4):
            slow.send_text(json.dumps({"type": "bye", "sid": f"slow{i}"}))
        ws.send_text(json.dumps({"type": "bye", "sid": "fast"}))
        # Reading again: the queued pieces, then slow0 resumes at its next keyframe.
        before = metric(kp, admin, "keeppeek_webd_mse_pieces_total")
        _, got = collect(slow, "slow0", 6)
        after = metric(kp, admin, "keeppeek_webd_mse_pieces_total")
        check(after > before + 30, f"webd forwards slow0's pieces again once the WebSocket is read "
              f"({after - before:.0f} pieces in 6 s, {len(got)} read, "
              f"{metric(kp, admin, 'keeppeek_webd_mse_dropped_total'):.0f} dropped)")
        path = os.path.join(work, "slow0.mp4")
        with open(path, "wb") as f:
            f.write(b"".join(got))
        check(len(got) > 60 and got[0][4:8] == b"ftyp",
              f"the slow WebSocket got its init segment and more ({len(got)} pieces)")
        decodes(path)
        check(gaps_start_at_keyframes(path) > 0, "slow0's pieces have a gap where webd dropped some")
        slow.close()

        ws.send_text(json.dumps({"type": "mse", "sid": "nope", "camera": "nosuch"}))
        a, _ = collect(ws, "nope", 3)
        check(a and a["type"] == "error" and a["code"] == "not_found", f"unknown camera: not_found for its sid ({a})")

        for i in range(16):
            ws.send_text(json.dumps({"type": "mse", "sid": f"s{i}", "camera": "cam", "stream": "sub"}))
        ws.send_text(json.dumps({"type": "mse", "sid": "s16", "camera": "cam", "stream": "sub"}))
        a, _ = collect(ws, "s16", 3)
        check(a and a["type"] == "error" and a["code"] == "admission", f"the 17th MSE session is refused ({a})")
        ws.close()
        check(wait_for(lambda: metric(kp, admin, "keeppeek_rtc_mse_sessions") == 0, 5),
              "closing the WebSocket ends its MSE sessions")
    finally:
        cam.kill()
        hevc.kill()
        for c in only.values():
            c.kill()


if __name__ == "__main__":
    run(test)
