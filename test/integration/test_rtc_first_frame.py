"""Time from offer to the first decrypted RTP packet for peers that start DTLS at once,
on loopback, with the real supervisor and an H.264 RTSP test camera: GStreamer's
webrtcbin (kp_webrtcbin.py: its DTLS client sends the ClientHello as soon as its ICE has
a working pair, often before rtcd's libnice has selected one; rtcd's reply then found no
pair and waited for OpenSSL's 1 s retransmission) and aiortc (kp_rtc.py). 30 sessions of
each, one after another: no session waits for OpenSSL's retransmission (900 ms or more);
the times and their 95th percentile are printed (issue 15's 150 ms is a figure for
docs/perf/RESULTS.md, not a timed check: a loaded CI machine must not fail it). Then,
deterministically, kp_early_dtls.py: a peer whose ClientHello reaches rtcd while its own
ICE check is held 100 ms, so that libnice cannot select the pair yet: rtcd's first DTLS
record arrives well before OpenSSL's 1 s retransmission (within 600 ms: the held flight
is sent the moment the pair is selected), five times, and rtcd's metrics count the
resent flights. No worker restarts.
Measured before the fix (flight dropped on -EAGAIN): one aiortc session in 20 took
1,052 ms; after: webrtcbin 111-145 ms, aiortc 34-75 ms."""
import asyncio
import math
import os
import subprocess
import tempfile
import time

import kp_webrtcbin  # noqa: F401  (re-execs under /usr/bin/python3 for python3-gi)
import kp_early_dtls
import kp_rtc
import kp_ws
from kp import TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 44500-44999
addresses = 127.0.0.1{more}
"""
RUNS = 30
P95_MS = 150
STALL_MS = 900  # a flight lost and recovered by OpenSSL's 1 s retransmission timer


def global_ipv4():
    """This machine's first global IPv4 address: libnice (webrtcbin's) leaves out loopback,
    so rtcd offers this one too."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        return line.split()[3].split("/")[0]
    return None


def p95(xs):
    """Nearest-rank 95th percentile."""
    xs = sorted(xs)
    return xs[math.ceil(len(xs) * 0.95) - 1]


async def aiortc_runs(kp, token):
    sig = kp_rtc.Signaling(kp, token, asyncio.get_running_loop())
    out = []
    for i in range(RUNS):
        v = kp_rtc.Viewer(sig, f"a{i}", "cam")
        await v.open()
        check(await v.playing(timeout=5), f"aiortc session {i} decodes")
        out.append((v.first_frame_at - v.offered_at) * 1000)
        await v.close()
    await kp_rtc.close_all()
    return out


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtc-first-")
    cam = TestCamera(work, "cam", "h264", "rtsp")
    try:
        ip = global_ipv4()
        check(ip is not None, "this machine has a global IPv4 address for webrtcbin's candidates")
        kp = make(config=CONFIG.replace("{more}", "," + ip) + f'[camera "cam"]\nurl = {cam.url()}\nsub_url = {cam.sub_url()}\n')
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and c["cam"]["streams"][1]["state"] == "streaming", 20),
              "camera streaming")
        time.sleep(2.0)
        token = kp.token("viewer")
        gst = []
        for i in range(RUNS):
            p = kp_webrtcbin.Peer(kp, token, f"g{i}", "cam")
            ms = p.first_rtp_ms()
            p.close()
            check(ms is not None, f"webrtcbin session {i} received RTP")
            gst.append(ms)
        print("webrtcbin offer to first RTP, ms:", " ".join(f"{x:.0f}" for x in gst))
        print(f"webrtcbin: p95 {p95(gst):.0f} ms (issue 15's figure: {P95_MS} ms)")
        check(max(gst) < STALL_MS, f"webrtcbin: no session waited for a DTLS retransmission ({max(gst):.0f} ms)")
        ai = asyncio.run(aiortc_runs(kp, token))
        print("aiortc offer to first decoded frame, ms:", " ".join(f"{x:.0f}" for x in ai))
        print(f"aiortc: p95 {p95(ai):.0f} ms (issue 15's figure: {P95_MS} ms)")
        check(max(ai) < STALL_MS, f"aiortc: no session waited for a DTLS retransmission ({max(ai):.0f} ms)")
        ws = kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + token})
        early = [kp_early_dtls.handshake_ms(ws, f"e{i}", "cam") for i in range(5)]
        ws.close()
        print("ClientHello before ICE selection: to rtcd's first DTLS record, ms:",
              " ".join("none" if x is None else f"{x:.0f}" for x in early))
        bound = kp_early_dtls.HOLD_MS + 500
        check(all(x is not None and x < bound for x in early),
              f"the held flight leaves as soon as ICE selects a pair (< {bound} ms, not OpenSSL's 1 s)")
        st, _, body = kp.http("GET", "/metrics", headers={"Authorization": "Bearer " + kp.token("admin")})
        resent = [int(line.split()[1]) for line in body.decode().splitlines()
                  if line.startswith("keeppeek_rtc_dtls_flights_resent_total ")]
        check(resent and resent[0] >= len(early), f"rtcd counted the flights it held and resent: {resent}")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
