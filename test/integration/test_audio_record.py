"""Audio recorded as the second track of the main stream's recording (issue 13 item 8):
the test camera sends AAC (a 440 Hz tone, 16 kHz mono) over RTSP as RFC 3640 AAC-hbr
and over Baichuan as 05wb records of ADTS frames, Opus over RTSP (RFC 7587, stored as
it comes), IMA ADPCM over Baichuan as 01wb records and G.711 mu-law over RTSP (both
8 kHz, converted to Opus by ingestd, decision 0034). Every recording file of a camera
with audio has an H.264 and an AAC or Opus stream (ffprobe), decodes with `ffmpeg -v
error` without a message, holds every frame the camera sent (the converted ones: the
samples sent, less the part of a 20 ms frame the converter still held at the end and
the packets timed after the video's end), and
starts its audio within one audio frame of where the camera started it relative to the
video (the converted RTSP camera's packets on the grid of its first sample less the
Opus encoder's 6.5 ms lookahead); ingestd, converting, maps libopus and no FFmpeg
library; an export keeps both streams; a camera with `audio = no` records video only;
rtcd plays a two-track recording back (its video, decoded by aiortc); `keeppeekctl
check` finds no problem in the two-track files and `check --rebuild` gives back the
same recordings from them. No worker restarts."""
import asyncio
import glob
import json
import os
import subprocess
import tempfile
import time

import kp_rtc
from kp import FIXTURES, KEEPPEEKCTL, TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""

AUDIO = os.path.join(FIXTURES, "audio.aac")
FRAME_S = 1024 / 16000  # one AAC frame of the fixture
# Converted audio (to Opus, 20 ms packets: 160 samples of the camera's 8 kHz each):
# samples per unit the camera sends, and how far the encoder's frame grid may lie from
# the camera's first sample less the lookahead (None: not checked; Baichuan audio has no
# timestamp and is placed by its arrival after the video, which the test camera sends
# on a 20 ms timer, so its grid is anywhere within a 20 ms frame).
CONVERTED = {"bc-adpcm": ("baichuan", 505, None), "rtsp-g711": ("rtsp", 160, 0.002)}
CONV_FRAME_S = 0.020
CONV_FRAME_IN = 160  # camera samples in one packet
LOOKAHEAD_S = 0.0065  # libopus's at 8 kHz: 52 samples (2.5 ms + 4 ms of delay compensation)
BC_PLACEMENT_S = 0.025  # how far arrival may place Baichuan audio from the camera's time
# Opus is stored as it comes: 20 ms packets of the fixture.
OPUS = {"rtsp-opus"}
OPUS_FRAME_S = 0.020


def frame_of(name):
    return CONV_FRAME_S if name in CONVERTED else OPUS_FRAME_S if name in OPUS else FRAME_S


def codec_of(name):
    return "opus" if name in OPUS or name in CONVERTED else "aac"


def recordings(kp, tok, names):
    """{(camera, start_ms): (end_ms, bytes, fragments)} of the cameras' main recordings."""
    rows = {}
    for name in names:
        st, _, body = kp.http("GET", f"/api/v1/recordings?camera={name}&stream=main&from=0&to={2 ** 50}", None,
                              {"Authorization": f"Bearer {tok}"})
        check(st == 200, f"{name}: recordings: {st} {body[:200]!r}")
        for r in json.loads(body)["recordings"]:
            rows[(name, r["start_ms"])] = (r["end_ms"], r["bytes"], r["fragments"])
    return rows


def streams(path):
    """[(codec_type, codec_name, start_time, packets)] of a file, from ffprobe."""
    r = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                        "stream=codec_type,codec_name,start_time,nb_read_packets", "-of", "json", path],
                       capture_output=True, text=True)
    check(r.returncode == 0 and not r.stderr.strip(), f"ffprobe reads {path} without errors: {r.stderr[:500]}")
    return [(s["codec_type"], s["codec_name"], float(s.get("start_time", "nan")), int(s["nb_read_packets"]))
            for s in json.loads(r.stdout)["streams"]]


def decode_clean(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and not r.stderr.strip(), f"{path} decodes without a message: {r.stderr[:500]}")


def test(make):
    work = tempfile.mkdtemp(prefix="kp-audio-")
    cams = {
        "rtsp-aac": TestCamera(work, "rtsp-aac", "h264", "rtsp", extra=("--audio", AUDIO)),
        "rtsp-mute": TestCamera(work, "rtsp-mute", "h264", "rtsp", extra=("--audio", AUDIO)),
        "bc-aac": TestCamera(work, "bc-aac", "h264", "baichuan", extra=("--audio", AUDIO)),
        "bc-adpcm": TestCamera(work, "bc-adpcm", "h264", "baichuan",
                               extra=("--audio", os.path.join(FIXTURES, "audio_adpcm.wav"))),
        "rtsp-g711": TestCamera(work, "rtsp-g711", "h264", "rtsp",
                                extra=("--audio", os.path.join(FIXTURES, "audio_ulaw.wav"))),
        "rtsp-opus": TestCamera(work, "rtsp-opus", "h264", "rtsp",
                                extra=("--audio", os.path.join(FIXTURES, "audio.opus"))),
    }
    with_audio = {"rtsp-aac": "rtsp", "bc-aac": "baichuan", "rtsp-opus": "rtsp",
                  **{k: v[0] for k, v in CONVERTED.items()}}
    try:
        config = CONFIG
        for name, cam in cams.items():
            config += f'[camera "{name}"]\nurl = {cam.url()}\nstreams = main\n'
            if name not in with_audio:
                config += "audio = no\n"
        kp = make(config=config)
        kp.wait_running()

        def all_streaming():
            c = cameras(kp)
            return c and len(c) == len(cams) and all(
                s["state"] == "streaming" for cam in c.values() for s in cam["streams"] if s["name"] == "main")
        check(wait_for(all_streaming, 15.0, 0.1), f"all cameras streaming: {cameras(kp)}")
        t0 = int(time.time() * 1000)
        time.sleep(12.0)

        # ingestd converts ADPCM and G.711 with libopus and maps no FFmpeg library.
        with open(f"/proc/{kp.status()['ingestd']['pid']}/maps") as f:
            libs = {os.path.basename(l.split()[-1]) for l in f if ".so" in l}
        check(any(l.startswith("libopus.so") for l in libs) and not any(l.startswith("libav") for l in libs),
              f"ingestd maps libopus and no libav* library: {sorted(libs)}")

        # An export from the middle keeps the audio track.
        tok = kp.token("admin")
        frm, to = t0 + 3000, t0 + 9000
        for name in with_audio:
            st, h, body = kp.http("GET", f"/api/v1/export?camera={name}&stream=main&from={frm}&to={to}", None,
                                  {"Authorization": f"Bearer {tok}"}, timeout=60)
            check(st == 200 and len(body) > 10000, f"{name}: export: 200 ({st} {body[:200]!r})")
            clip = os.path.join(work, f"{name}-clip.mp4")
            with open(clip, "wb") as f:
                f.write(body)
            got = streams(clip)
            check([s[:2] for s in got] == [("video", "h264"), ("audio", codec_of(name))],
                  f"{name}: the export has both streams: {got}")
            frame = frame_of(name)
            check(got[1][3] >= int(5.0 / frame), f"{name}: the export holds about 6 s of audio: {got}")
            check(abs(got[1][2] - got[0][2]) <= frame, f"{name}: the export's audio starts with its video: {got}")
            decode_clean(clip)

        # rtcd's stored playback reads the video track of two-track files (aiortc decodes it).
        async def playback():
            sig = kp_rtc.Signaling(kp, tok, asyncio.get_running_loop())
            v = kp_rtc.Viewer(sig, "pb", "rtsp-aac", stream="main", mode="playback", at_ms=t0 + 2000)
            await v.open()
            ok = await v.playing(more_than=25, timeout=20)
            await kp_rtc.close_all()
            return ok, v.frames
        ok, frames = asyncio.run(playback())
        check(ok, f"playback of a two-track recording: {frames} video frames decoded")

        sent = {name: cam.pause() for name, cam in cams.items()}
        time.sleep(1.5)
        check(kp.stop() is not None, "keeppeekd stops (recorderd writes what it holds)")

        for name, cam in cams.items():
            files = sorted(glob.glob(os.path.join(kp.data, "recordings", name, "main", "*.mp4")))
            check(files, f"{name}: recordings exist")
            audio_packets = 0
            for i, path in enumerate(files):
                got = streams(path)
                decode_clean(path)
                if name not in with_audio:
                    check([s[:2] for s in got] == [("video", "h264")], f"{name}: video only with audio = no: {got}")
                    continue
                check([s[:2] for s in got] == [("video", "h264"), ("audio", codec_of(name))],
                      f"{name}: {os.path.basename(path)} has an H.264 and an {codec_of(name)} stream: {got}")
                audio_packets += got[1][3]
                frame = frame_of(name)
                if i == 0:
                    src = sent[name]["audio"][with_audio[name]]["first_offset_us"] / 1e6
                    rec = got[1][2] - got[0][2]
                    # Converted: the lookahead taken off; Baichuan's converted audio, placed
                    # by its arrival, within that placement's 25 ms rather than a 20 ms frame.
                    # A whole frame is allowed (the packet that starts the lookahead before
                    # the video's first keyframe is not recorded, the next one is, exactly
                    # a frame later), with 1 ms for the times' rounding to the timescales.
                    la = LOOKAHEAD_S if name in CONVERTED else 0.0
                    tol = (max(frame, BC_PLACEMENT_S) if with_audio[name] == "baichuan" else frame) + 0.001
                    check(abs(rec - src + la) <= tol,
                          f"{name}: audio starts {rec * 1000:.1f} ms after the video, the camera's "
                          f"{src * 1000:.1f} ms{' less the lookahead' if la else ''} (within {tol * 1000:.0f} ms)")
                    if name in CONVERTED and CONVERTED[name][2] is not None:
                        # The encoder's frames start at the camera's first sample, their
                        # times less the lookahead: on that grid.
                        grid = (rec - src + LOOKAHEAD_S) % frame
                        grid = min(grid, frame - grid)
                        check(grid <= CONVERTED[name][2],
                              f"{name}: converted frames {grid * 1000:.1f} ms off the camera's first sample "
                              f"less the lookahead ({(rec - src) * 1000:.1f} ms)")
            if name in CONVERTED:
                samples = sent[name]["audio"][with_audio[name]]["frames_sent"] * CONVERTED[name][1]
                # At the end: the converter holds less than one 20 ms frame, and packets
                # timed after the video's last frame (Baichuan audio is placed by its
                # arrival) fall in no fragment: seen 1 (ASan build), allowed 3 frames.
                check(samples > 8000 * 12 and 0 <= samples - audio_packets * CONV_FRAME_IN < 4 * CONV_FRAME_IN,
                      f"{name}: {samples} samples sent, {audio_packets * CONV_FRAME_IN} recorded (at most a "
                      f"partial frame in the converter and 3 packets after the video's end are not)")
            elif name in with_audio:
                n = sent[name]["audio"][with_audio[name]]["frames_sent"]
                check(n > 150 and audio_packets == n, f"{name}: audio frames sent {n} = recorded {audio_packets}")

        # The catalog's readers of two-track files: keeppeekctl check and a rebuild from
        # the files, by a keeppeekd without cameras on the same data directory.
        kp2 = make(config=CONFIG.replace("{dir}/data", kp.data))
        kp2.wait_running()
        tok2 = kp2.token("admin")
        before = recordings(kp2, tok2, cams)
        files = glob.glob(os.path.join(kp.data, "recordings", "*", "main", "*.mp4"))
        check(len(before) == len(files) >= len(cams), f"one recording per file: {before} / {files}")
        rc, out, _ = kp2.ctl("check")
        check(rc == 0 and " 0 problems" in out, f"check finds no problem in two-track files: {out.strip()[-300:]}")
        r = subprocess.run([KEEPPEEKCTL, "-s", kp2.sock, "--json", "check", "--rebuild"], capture_output=True,
                           text=True, timeout=120)
        res = json.loads(r.stdout) if r.returncode == 0 else {}
        check(res.get("rebuilt") and res["files"] == len(before) and res["files_set_aside"] == 0,
              f"the catalog is rebuilt from every two-track file: {r.stdout}{r.stderr}")
        after = wait_for(lambda: (a := recordings(kp2, tok2, cams)) == before and a, 15.0, 0.5)
        check(after, f"the rebuilt recordings are the same: {before} / {recordings(kp2, tok2, cams)}")
    finally:
        for cam in cams.values():
            cam.kill()


if __name__ == "__main__":
    run(test)
