"""AAC cameras heard over WebRTC: their audio made Opus by the transcoder process
(keeppeek-transcoder, decisions 0014 and 0015), against aiortc (Debian's python3-aiortc,
an independent peer with its own Opus decoder) through webd's /api/v1/rtc with the real
supervisor. Camera "aac" is an RTSP test camera whose main stream carries AAC (RFC 3640,
the tone of test/fixtures' audio.aac); camera "adpcm" is a Baichuan test camera sending
DVI-4 ADPCM (BAICHUAN.md, converted to Opus by ingestd, decision 0034).
* Live: two viewers of "aac" hear the tone (Opus sendonly, decoded peak above silence)
  through one shared AAC -> Opus job; a viewer of "adpcm" hears it too, with no job (rtcd
  passes ingestd's Opus through): one audio job in all.
* Playback of the AAC recording: heard at rate 1, silent while paused, heard again.
* SIGKILL to the transcoder: the sessions stay open and their video goes on; the
  "adpcm" viewer's sound goes on (it never went through the transcoder); the sound of the others
  comes back once the transcoder is started again (the job reopened after
  RTC_AUDIO_REOPEN_MS), and /metrics counts the lost job; keeppeekctl status shows one
  transcoder restart and none for the four workers.
No worker restarts."""
import asyncio
import os
import signal
import time

import kp_rtc
from kp_rtc import audio_grows, control, section
from kp import FIXTURES, WORKERS, TestCamera, cameras, check, metric, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 45000-45499
"""
TONE_PEAK = 1000  # s16: the fixtures' tones peak near 4096 (1/8 full scale); silence is 0






async def heard(v, what, within=10):
    check("a=sendonly" in section(v.answer_sdp, "audio"), f"{what}: audio answered sendonly")
    check(await audio_grows(v, within), f"{what}: aiortc decodes Opus ({v.audio_frames} frames)")
    await asyncio.sleep(1.0)
    check(v.audio_peak > TONE_PEAK, f"{what}: the camera's tone, not silence (peak {v.audio_peak})")




async def scenario(kp, token, admin, t0):
    try:
        sig = kp_rtc.Signaling(kp, token, asyncio.get_running_loop())
        a1 = kp_rtc.Viewer(sig, "aac-1", "aac", audio=True)
        a2 = kp_rtc.Viewer(sig, "aac-2", "aac", audio=True)
        b = kp_rtc.Viewer(sig, "adpcm-1", "adpcm", audio=True)
        for v in (a1, a2, b):
            await v.open()
            check(await v.playing(timeout=15), f"{v.sid}: video decodes")
        await heard(a1, "live AAC, first viewer")
        await heard(a2, "live AAC, second viewer")
        await heard(b, "live Baichuan ADPCM")
        jobs = metric(kp, admin, 'keeppeek_transcoder_jobs{kind="audio"}')
        check(jobs == 1, f"one AAC -> Opus job, shared by the AAC camera's viewers; none for the ADPCM camera, "
              f"whose audio ingestd makes Opus ({jobs})")

        p = kp_rtc.Viewer(sig, "pb-aac", "aac", stream="main", mode="playback", at_ms=t0 + 1000, audio=True)
        await p.open()
        check(await p.playing(timeout=15), "playback video decodes")
        await heard(p, "playback of the AAC recording")
        await control(sig, p.sid, op="pause")
        await asyncio.sleep(1.0)
        before = p.audio_frames
        await asyncio.sleep(1.5)
        check(p.audio_frames == before, "no audio while paused")
        await control(sig, p.sid, op="play")
        check(await audio_grows(p, 6), "audio again after play")

        # The transcoder dies: sound stops, comes back; the sessions stay.
        tx = kp.status()["transcoder"]
        kp.expect_restarts("transcoder")
        os.kill(tx["pid"], signal.SIGKILL)
        check(wait_for(lambda: (metric(kp, admin, "keeppeek_rtc_audio_transcode_lost_total") or 0) >= 1, 10),
              "the lost AAC -> Opus jobs are counted")
        check(await audio_grows(b, 5), "the ADPCM camera's sound goes on without the transcoder")
        frames = a1.frames
        check(await a1.playing(more_than=frames + 25), "the live session's video goes on")
        check(await audio_grows(a1, 15), "live sound comes back with the next transcoder")
        check(await audio_grows(p, 15), "playback sound comes back too")
        st = kp.status()
        check(st["transcoder"]["restarts"] == 1, f"status: one transcoder restart ({st['transcoder']})")
        check(all(st[w]["restarts"] == 0 for w in WORKERS), f"no worker restarted: {[(w, st[w]['restarts']) for w in WORKERS]}")
        for v in (a2, b, p):
            frames = v.frames
            check(await v.playing(more_than=frames + 10), f"{v.sid} stays open: its video goes on")
    finally:
        await kp_rtc.close_all()


def test(make):
    import tempfile
    work = tempfile.mkdtemp(prefix="kp-rtc-aac-")
    aac = TestCamera(work, "aac", "h264", "rtsp", extra=("--audio", os.path.join(FIXTURES, "audio.aac")))
    adpcm = TestCamera(work, "adpcm", "h264", "baichuan", extra=("--audio", os.path.join(FIXTURES, "audio_adpcm.wav")))
    try:
        config = CONFIG
        for c in (aac, adpcm):
            config += f'[camera "{c.name}"]\nurl = {c.url()}\n'
            if c is aac:
                config += f"sub_url = {c.sub_url()}\n"
        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(c[n]["streams"][0]["state"] == "streaming"
                                                         for n in ("aac", "adpcm")), 20), "cameras streaming")
        t0 = int(time.time() * 1000)
        time.sleep(7.0)
        asyncio.run(scenario(kp, kp.token("viewer"), kp.token("admin"), t0))
    finally:
        aac.kill()
        adpcm.kill()


if __name__ == "__main__":
    run(test)
