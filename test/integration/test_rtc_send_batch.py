"""rtcd's batched media send (decision 0031) loses and reorders nothing, on each of its
three paths, checked by an independent peer: aiortc (its own ICE, SRTP and jitter
buffer) receives the H.264 RTSP test camera's sub stream through the real supervisor,
with KEEPPEEK_RTC_SEND set in keeppeekd's environment:

* gso (the default): sendmmsg on the selected pair's socket with UDP_SEGMENT messages
  (a keyframe's FU-A fragments, and a frame of one full and one shorter datagram, are
  runs of equal-sized datagrams);
* mmsg: sendmmsg, one message per datagram;
* nice: the fallback a pair without a UDP socket of its own takes (relayed, TCP):
  nice_agent_send per datagram.

For each, aiortc decodes FRAMES frames; aiortc sends a NACK for every sequence gap it
sees (a lost packet, or one that came out of order), so rtcd must have answered none
and resent nothing, and aiortc must count no packet lost. rtcd's counters must show the
path taken (batched datagrams and GSO messages, or only unbatched ones), no send error
and nothing dropped. No worker restarts. The sub stream (640x360), not the 1080p main
one: aiortc decodes in Python, and on a loaded machine it fell behind the main stream,
its socket overflowed and it NACKed what its own receive buffer had dropped."""
import asyncio
import socket
import tempfile
import time

import kp_rtc
from kp import TestCamera, cameras, check, free_port_run, metric, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = UDP_PORTS
addresses = 127.0.0.1
"""
FRAMES = 100  # 4 s at 25 fps: 4 keyframes
NAMES = ["keeppeek_rtc_send_batched_total", "keeppeek_rtc_send_unbatched_total", "keeppeek_rtc_send_syscalls_total",
         "keeppeek_rtc_send_gso_messages_total", 'keeppeek_rtc_send_errors_total{reason="full"}',
         'keeppeek_rtc_send_errors_total{reason="other"}', "keeppeek_rtc_send_dropped_total",
         "keeppeek_rtc_nacks_answered_total", "keeppeek_rtc_retransmits_total", "keeppeek_rtc_keyframe_drops_total",
         "keeppeek_rtc_packets_sent_total", "keeppeek_rtc_send_gso_off_total"]


async def watch(kp, token):
    sig = kp_rtc.Signaling(kp, token, asyncio.get_running_loop())
    v = kp_rtc.Viewer(sig, "b1", "cam", stream="sub")
    await v.open()
    ok = await v.playing(more_than=FRAMES, timeout=60)
    lost = received = None
    for st in (await v.pc.getStats()).values():
        if st.type == "inbound-rtp" and getattr(st, "kind", "video") == "video":
            lost, received = st.packetsLost, st.packetsReceived
    frames = v.frames
    await kp_rtc.close_all()
    return ok, frames, lost, received


def one_mode(make, cam, mode):
    lo = free_port_run(100, socket.SOCK_DGRAM)
    env = {"KEEPPEEK_RTC_SEND": mode}
    kp = make(config=CONFIG.replace("UDP_PORTS", f"{lo}-{lo + 99}") + f'[camera "cam"]\nurl = {cam.url()}\n'
              f'sub_url = {cam.sub_url()}\n', env=env)
    kp.wait_running()
    check(wait_for(lambda: (c := cameras(kp)) and c["cam"]["streams"][1]["state"] == "streaming", 20),
          "camera sub stream streaming")
    time.sleep(1.5)  # a keyframe in rtcd's GOP cache
    ok, frames, lost, received = asyncio.run(watch(kp, kp.token("viewer")))
    admin = kp.token("admin")
    m = {n: metric(kp, admin, n) for n in NAMES}
    print(f"{mode}: {frames} frames decoded, aiortc received {received} packets, lost {lost}; rtcd: "
          + ", ".join(f"{n.replace('keeppeek_rtc_', '')}={m[n]:.0f}" for n in NAMES))
    check(ok, f"{mode}: aiortc decoded more than {FRAMES} frames ({frames})")
    check(lost == 0 and received and received > FRAMES, f"{mode}: aiortc lost no packet ({lost} of {received})")
    check(m["keeppeek_rtc_nacks_answered_total"] == 0, f"{mode}: aiortc sent no NACK (no gap, nothing out of order)")
    check(m["keeppeek_rtc_retransmits_total"] == 0, f"{mode}: rtcd resent nothing")
    check(m["keeppeek_rtc_keyframe_drops_total"] == 0, f"{mode}: no viewer skipped to a keyframe")
    for n in ('keeppeek_rtc_send_errors_total{reason="full"}', 'keeppeek_rtc_send_errors_total{reason="other"}',
              "keeppeek_rtc_send_dropped_total", "keeppeek_rtc_send_gso_off_total"):
        check(m[n] == 0, f"{mode}: {n} is 0 ({m[n]})")
    batched, unbatched = m["keeppeek_rtc_send_batched_total"], m["keeppeek_rtc_send_unbatched_total"]
    check(batched + unbatched <= m["keeppeek_rtc_packets_sent_total"] + 200,
          "every counted datagram is a packet rtcd sent (DTLS flights aside)")
    if mode == "nice":
        check(batched == 0 and m["keeppeek_rtc_send_syscalls_total"] == 0,
              f"nice: nothing went through sendmmsg ({batched})")
        check(unbatched > received * 0.9, f"nice: the media went through nice_agent_send ({unbatched})")
    else:
        check(batched > received * 0.9, f"{mode}: the media went through sendmmsg ({batched} of {received})")
        check(m["keeppeek_rtc_send_syscalls_total"] < batched, f"{mode}: fewer sendmmsg calls than datagrams")
        gso = m["keeppeek_rtc_send_gso_messages_total"]
        check(gso > 0 if mode == "gso" else gso == 0, f"{mode}: UDP GSO messages {gso}")
    kp.stop()


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtc-batch-")
    cam = TestCamera(work, "cam", "h264", "rtsp")
    try:
        for mode in ("gso", "mmsg", "nice"):
            one_mode(make, cam, mode)
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
