#!/usr/bin/env python3
"""The transcoder process (keeppeek-transcoder, decision 0014) with an independent WebRTC
peer (Debian's python3-aiortc, which offers no H.265) and the real supervisor, one H.264
and one H.265-only test camera, [rtc] max_transcodes = 1:
- no transcoder runs while rtcd has no transcode job; the first transcoded session
  starts it, confined (its own seccomp filter, no_new_privs, nice KP_TRANSCODER_NICE,
  address space KP_TRANSCODER_AS), and rtcd itself maps no libavcodec;
- a job past the ceiling (the H.265 camera's other stream) is refused with an error
  naming its sid ("transcode_busy");
- SIGKILL to the transcoder ends only the session it served, visibly (an error
  "transcode_lost" naming its sid, then "closed"); the plain H.264 session goes on,
  rtcd keeps its pid, keeppeekctl status shows one transcoder restart and none for the
  four workers, /metrics counts the lost link; the same sid offers again and plays;
- when its last session ends the transcoder stops after KP_TRANSCODER_LINGER_MS, which
  counts as no restart."""
import asyncio
import os
import re
import signal
import sys
import time

from kp import WORKERS, check, metric, proc_status, run, sanitized, wait_for
from kp_rtc import Signaling, Viewer, close_all, with_two_cameras

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 44500-44999
max_transcodes = 1
"""


def limit(name):
    with open(os.path.join(os.environ["KP_SOURCE_ROOT"], "common", "kp_limits.h")) as f:
        m = re.search(r"^#define " + name + r"\s+\(?(\d+)(?:ull)?(?: \* KP_MIB\))?", f.read(), re.M)
    return int(m.group(1)) * (1024 * 1024 if "KP_MIB" in m.group(0) else 1)


LINGER_MS = limit("KP_TRANSCODER_LINGER_MS")
NICE = limit("KP_TRANSCODER_NICE")
AS_BYTES = limit("KP_TRANSCODER_AS")



def maps_libav(pid):
    with open(f"/proc/{pid}/maps") as f:
        return sorted({l.split()[-1] for l in f if "libav" in l})


async def offer_expecting_error(sig, sid, camera, stream):
    """An offer answered by an error: the message."""
    v = Viewer(sig, sid, camera, stream=stream)
    v.pc.addTransceiver("video", direction="recvonly")
    await v.pc.setLocalDescription(await v.pc.createOffer())
    sig.send({"type": "offer", "sid": sid, "sdp": v.pc.localDescription.sdp, "camera": camera, "stream": stream,
              "mode": "live"})
    return await sig.next(sid, ("answer", "error", "closed"))


async def scenario(kp, token, admin):
    try:
        await steps(kp, token, admin)
    finally:
        await close_all()


async def steps(kp, token, admin):
    loop = asyncio.get_running_loop()
    st = kp.status()
    rtcd = st["rtcd"]["pid"]
    check(st["transcoder"]["pid"] == 0 and st["transcoder"]["state"] == "stopped",
          f"no transcoder runs before a transcode is asked for ({st['transcoder']['state']})")
    check(maps_libav(rtcd) == [], f"rtcd maps no FFmpeg library ({maps_libav(rtcd)})")

    sig = Signaling(kp, token, loop)
    tc, plain = Viewer(sig, "tc", "hevc"), Viewer(sig, "plain", "avc")
    for v in (tc, plain):
        await v.open()
    for v in (tc, plain):
        check(await v.playing(), f"session {v.sid} decodes frames")
    m = await sig.next("tc", ("state",))
    check(m["fallback"] == "transcode", f"the H.265 camera is transcoded ({m})")
    tx = kp.status()["transcoder"]
    check(tx["state"] == "running" and tx["pid"] > 0, f"the transcoder runs for it ({tx['state']})")
    s = proc_status(tx["pid"])
    check(s["Seccomp"] == "2" and s["NoNewPrivs"] == "1", "the transcoder is confined (seccomp filter, no_new_privs)")
    with open(f"/proc/{tx['pid']}/stat") as f:
        nice = int(f.read().rsplit(")", 1)[1].split()[16])
    check(nice == NICE, f"the transcoder runs at nice {NICE} ({nice})")
    with open(f"/proc/{tx['pid']}/limits") as f:
        lim = re.search(r"^Max address space\s+(\d+)", f.read(), re.M)
    if sanitized():
        print("note: sanitizer build: the transcoder's RLIMIT_AS is not applied (common/sandbox.c)")
    else:
        check(lim and int(lim.group(1)) == AS_BYTES,
              f"its address space is capped at {AS_BYTES} bytes ({lim and lim.group(1)})")

    # One past the ceiling: the H.265 camera's other stream needs a second job.
    m = await offer_expecting_error(sig, "tc-main", "hevc", "main")
    check(m["type"] == "error" and m.get("code") == "transcode_busy" and m.get("sid") == "tc-main",
          f"a second transcode is refused, naming its sid: {m}")
    check(metric(kp, admin, "keeppeek_transcoder_jobs_refused_total") == 1, "the refusal is counted")

    # The transcoder dies: only its session ends, visibly.
    kp.expect_restarts("transcoder")
    os.kill(tx["pid"], signal.SIGKILL)
    m = await sig.next("tc", ("error", "closed"))
    check(m["type"] == "error" and m.get("code") == "transcode_lost" and m.get("sid") == "tc",
          f"the transcoded session gets an error naming its sid: {m}")
    m = await sig.next("tc", ("closed",))
    check(m.get("sid") == "tc", f"and is closed: {m}")
    frames = plain.frames
    check(await plain.playing(more_than=frames + 25), "the H.264 session goes on decoding frames")
    st = wait_for(lambda: (s := kp.status())["transcoder"]["restarts"] == 1 and s, 10, 0.05)
    check(st, "keeppeekctl status shows the transcoder's restart")
    check(st["rtcd"]["pid"] == rtcd, "rtcd keeps its pid")
    check(all(st[w]["restarts"] == 0 and st[w]["state"] == "running" for w in WORKERS),
          f"no worker restarted: {[(w, st[w]['restarts']) for w in WORKERS]}")
    check(metric(kp, admin, "keeppeek_transcoder_links_lost_total") == 1, "/metrics counts the lost link")
    check(metric(kp, admin, 'keeppeek_worker_restarts_total{worker="transcoder"}') == 1,
          "/metrics counts the transcoder's restart")

    # The client offers again on the same sid.
    await tc.close()
    again = Viewer(sig, "tc", "hevc")
    await again.open()
    check(await again.playing(), "the same sid offered again decodes frames")
    check(metric(kp, admin, 'keeppeek_transcoder_jobs{kind="video"}') == 1, "one video job is open")

    # The last job ends: the transcoder stops after the linger, not counted as a restart.
    for v in (again, plain):
        await v.close()
    await sig.close()
    t0 = time.monotonic()
    st = wait_for(lambda: (s := kp.status())["transcoder"]["state"] == "stopped" and s, LINGER_MS / 1000 + 15, 0.1)
    took = time.monotonic() - t0
    check(st and st["transcoder"]["pid"] == 0, f"the transcoder stops once nobody needs it ({took:.1f} s)")
    check(took >= LINGER_MS / 1000 - 1, f"after its linger of {LINGER_MS} ms ({took:.1f} s)")
    check(st["transcoder"]["restarts"] == 1, "its stop is no restart")
    check("transcoder stopped as nobody needs it" in kp.log_text(), "keeppeekd says why it stopped")


def test(make):
    with_two_cameras(make, CONFIG, "kp-tx-",
                     lambda kp: asyncio.run(scenario(kp, kp.token("viewer"), kp.token("admin"))))


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: reading the transcoder's /proc entries needs root")
        sys.exit(77)
    run(test)
