"""Sound over WebRTC and the answer's details, against aiortc (Debian's python3-aiortc,
an independent peer: its own SDP, ICE, DTLS, SRTP and Opus decoder) through webd's
/api/v1/rtc, with the real supervisor. Camera "opus" is an RTSP test camera whose main
stream carries Opus (RFC 7587, the 440 Hz tone of test/fixtures' audio.opus: Axis
cameras offer Opus over RTSP); camera "gst" is GStreamer's RTSP server
(rtsp_external_server.py --audio opus: opusenc and rtpopuspay, an independent sender);
camera "mute" sends no audio.
* Live, an offer with audio and video (audio first, as aiortc and most non-browser
  clients write it): the audio m-line is answered with Opus/48000/2 sendonly in the
  BUNDLE group (never port 0), aiortc accepts the answer, decodes video and decodes
  audio frames whose peak is the tone's, not silence. The H.264 profile-level-id in the
  answer is the sub stream's SPS (42c01e), not the offer's; the answer names only the
  RTCP feedback the offer named (aiortc offers no ccm fir). Time from offer to the first
  decoded video frame is printed.
* "gst": aiortc hears GStreamer's Opus tone through rtcd.
* "mute": the audio m-line is answered a=inactive with Opus listed; aiortc accepts and
  plays the video.
* Playback of the recording (Opus as track 2): audio arrives at rate 1, stops on pause,
  resumes on play, follows a seek, and stops at rate 2.
* Every signaling error names its sid (null when the message named none readable).
No worker restarts."""
import asyncio
import os
import re
import subprocess
import tempfile
import time

import kp_rtc
from kp_rtc import audio_grows, control, section
from kp import FIXTURES, TestCamera, cameras, check, free_port, run, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 44000-44499
"""
TONE_PEAK = 1000  # s16 samples: the tone peaks near 4096 (ffmpeg's sine at 1/8 full scale); silence is 0




def sps_profile_level_id(path):
    data = open(path, "rb").read()
    i = data.find(b"\x00\x00\x01\x67")
    return data[i + 4:i + 7].hex()


def video_pt(answer):
    return section(answer, "video")[0].split()[3]


def offered_fb(offer, pt):
    return {line.split(" ", 1)[1] for line in section(offer, "video")
            if line.startswith(f"a=rtcp-fb:{pt} ") or line.startswith("a=rtcp-fb:* ")}




async def audio_still(v, settle=1.0, quiet=1.5):
    await asyncio.sleep(settle)
    before = v.audio_frames
    await asyncio.sleep(quiet)
    return v.audio_frames - before


async def error_for(sig, sid):
    """The next error message whose sid is sid (None: null); a failed check if none comes."""
    try:
        return await sig.next(sid, ("error",), timeout=5)
    except asyncio.TimeoutError:
        check(False, f"an error naming sid {sid!r} within 5 s")




async def scenario(kp, token, t0):
    try:
        sig = kp_rtc.Signaling(kp, token, asyncio.get_running_loop())

        # Live, audio and video.
        v = kp_rtc.Viewer(sig, "live-av", "opus", audio=True)
        await v.open()
        audio = section(v.answer_sdp, "audio")
        check(audio and audio[0].startswith("m=audio 9 "), f"audio m-line answered with a port, not 0: {audio[:1]}")
        opus = re.search(r"a=rtpmap:(\d+) opus/48000/2", v.offer_sdp)
        check(f"a=rtpmap:{opus.group(1)} opus/48000/2" in audio, f"audio answered with Opus: {audio}")
        check("a=sendonly" in audio, f"audio sendonly: {audio}")
        bundle = [line for line in v.answer_sdp.splitlines() if line.startswith("a=group:BUNDLE")]
        check(bundle and len(bundle[0].split()) == 3, f"audio and video in one BUNDLE group: {bundle}")
        check(await v.playing(timeout=15), "aiortc accepted the answer and decodes video")
        print(f"offer to first decoded frame: {(v.first_frame_at - v.offered_at) * 1000:.0f} ms (aiortc)")
        check(await audio_grows(v, 8), f"aiortc decodes Opus audio ({v.audio_frames} frames)")
        await asyncio.sleep(1.0)
        check(v.audio_peak > TONE_PEAK, f"the audio is the camera's tone, not silence (peak {v.audio_peak})")
        pt = video_pt(v.answer_sdp)
        want = sps_profile_level_id(os.path.join(FIXTURES, "sub.h264"))
        fmtp = [line for line in section(v.answer_sdp, "video") if line.startswith(f"a=fmtp:{pt} ")]
        check(fmtp and f"profile-level-id={want}" in fmtp[0], f"profile-level-id of the SPS sent ({want}): {fmtp}")
        answered = {line.split(" ", 1)[1] for line in section(v.answer_sdp, "video") if line.startswith("a=rtcp-fb:")}
        offered = offered_fb(v.offer_sdp, pt)
        check(answered and answered <= offered, f"only offered feedback answered: {answered} of {offered}")
        check("ccm fir" not in answered, "no ccm fir (aiortc offers none)")

        # Opus from an RTSP server that is not ours.
        g = kp_rtc.Viewer(sig, "gst-av", "gst", stream="main", audio=True)
        await g.open()
        check("a=sendonly" in section(g.answer_sdp, "audio"), "GStreamer's Opus: audio sendonly")
        check(await g.playing(timeout=15), "GStreamer camera: video decodes")
        check(await audio_grows(g, 8), f"GStreamer camera: aiortc decodes its Opus ({g.audio_frames} frames)")
        await asyncio.sleep(1.0)
        check(g.audio_peak > TONE_PEAK, f"GStreamer's tone, not silence (peak {g.audio_peak})")

        # A camera without audio: inactive with a codec.
        m = kp_rtc.Viewer(sig, "mute-av", "mute", audio=True)
        await m.open()
        audio = section(m.answer_sdp, "audio")
        check(audio and audio[0].startswith("m=audio 9 ") and "a=inactive" in audio and
              any(x.startswith("a=rtpmap:") and "opus/48000/2" in x for x in audio),
              f"no audio: inactive with Opus listed: {audio}")
        check(await m.playing(timeout=15), "aiortc accepts the inactive audio answer and plays video")

        # Playback with audio: rate 1, pause, play, seek, rate 2.
        p = kp_rtc.Viewer(sig, "pb-av", "opus", stream="main", mode="playback", at_ms=t0 + 1000, audio=True)
        await p.open()
        check("a=sendonly" in section(p.answer_sdp, "audio"), "playback audio sendonly")
        check(await p.playing(timeout=15), "playback video decodes")
        check(await audio_grows(p, 8), f"playback audio decodes ({p.audio_frames} frames)")
        await control(sig, p.sid, op="pause")
        check(await audio_still(p) == 0, "no audio while paused")
        await control(sig, p.sid, op="play")
        check(await audio_grows(p, 5), "audio again after play")
        await control(sig, p.sid, op="seek", at_ms=t0 + 3000)
        check(await audio_grows(p, 6), "audio after a seek")
        await control(sig, p.sid, op="rate", rate=2)
        check(await audio_still(p) == 0, "no audio at rate 2")
        await control(sig, p.sid, op="rate", rate=1)
        check(await audio_grows(p, 6), "audio again at rate 1")

        # Errors name their sid.
        sig.send({"sid": "e-notype"})
        e = await error_for(sig, "e-notype")
        check(e["sid"] == "e-notype", f"an error names the sid: {e}")
        sig.send({"type": "offer", "sid": "e-sdp", "sdp": "v=0\r\nbad", "camera": "opus"})
        e = await error_for(sig, "e-sdp")
        check(e["code"] == "bad_sdp" and e["sid"] == "e-sdp", f"bad SDP error names the sid: {e}")
        sig.ws.send_text("{not json")
        e = await error_for(sig, None)
        check("sid" in e and e["sid"] is None, f"an unreadable message's error has sid null: {e}")
    finally:
        await kp_rtc.close_all()  # an open peer connection would keep the process from exiting

def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtc-audio-")
    opus = TestCamera(work, "opus", "h264", "rtsp", extra=("--audio", os.path.join(FIXTURES, "audio.opus")))
    mute = TestCamera(work, "mute", "h264", "rtsp")
    gst_port = free_port()
    gst = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "rtsp_external_server.py"),
                            os.path.join(FIXTURES, "main.h264"), str(gst_port), "--audio", "opus"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = gst.stdout.readline()
        check(line.strip() == "ready", f"GStreamer RTSP server started: {line!r}")
        config = CONFIG
        for c in (opus, mute):
            config += f'[camera "{c.name}"]\nurl = {c.url()}\nsub_url = {c.sub_url()}\n'
        config += f'[camera "gst"]\nurl = rtsp://127.0.0.1:{gst_port}/stream\n'
        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(c[n]["streams"][1]["state"] == "streaming"
                                                         for n in ("opus", "mute")) and
                       c["gst"]["streams"][0]["state"] == "streaming", 20), "cameras streaming")
        t0 = int(time.time() * 1000)
        time.sleep(7.0)
        asyncio.run(scenario(kp, kp.token("viewer"), t0))
    finally:
        opus.kill()
        mute.kill()
        gst.terminate()
        gst.wait(10)


if __name__ == "__main__":
    run(test)
