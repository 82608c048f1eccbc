"""rtcd signaling through webd's /api/v1/rtc WebSocket (docs/rtc-signaling.md), with the
real supervisor and an H.264 test camera: malformed JSON, a malformed SDP and an unknown
camera get an error with a sentence (rtcd stays up); a well-formed offer gets an answer
(a=setup:passive, sha-256 fingerprint, sendonly, loopback candidates) and a state
message; 64 sessions of one principal are admitted and the 65th refused ("admission");
a second principal from the same address fills the 128 per address and a third is
refused naming the address; rtcd's metrics count the refusals. Then kill -9 of rtcd:
it is back within 1 s and webd closes the signaling WebSockets (1012) so browsers
reconnect, and the new rtcd answers again."""
import json
import os
import signal
import socket
import tempfile
import time

import kp_ws
from kp import TestCamera, cameras, check, free_port_run, metric, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = UDP_PORTS
"""

FP = ":".join(["AB"] * 32)


def offer_sdp(ufrag="abcd"):
    return ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
            "m=video 9 UDP/TLS/RTP/SAVPF 102 96\r\nc=IN IP4 0.0.0.0\r\n"
            f"a=ice-ufrag:{ufrag}\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
            f"a=fingerprint:sha-256 {FP}\r\na=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
            "a=rtpmap:96 VP8/90000\r\n"
            "a=rtpmap:102 H264/90000\r\n"
            "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n")


def connect(kp, token):
    return kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + token})


def reply(ws, sid, types=("answer", "error"), timeout=10):
    """The next message for sid of one of types (others, e.g. state, are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        kind, data = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
        if kind != "text":
            check(False, f"signaling message is text, got {kind} {data!r}")
        m = json.loads(data)
        if m.get("sid") in (sid, None) and m["type"] in types:
            return m


def offer(ws, sid, camera="cam", sdp=None, stream="main"):
    ws.send_text(json.dumps({"type": "offer", "sid": sid, "sdp": sdp or offer_sdp(), "camera": camera,
                             "stream": stream, "mode": "live"}))
    return reply(ws, sid)


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtc-")
    cam = TestCamera(work, "cam", "h264", "rtsp")
    try:
        lo = free_port_run(1000, socket.SOCK_DGRAM)  # 128 sessions; tests run four at once
        kp = make(config=CONFIG.replace("UDP_PORTS", f"{lo}-{lo + 999}") + f'[camera "cam"]\nurl = {cam.url()}\nsub_url = {cam.sub_url()}\n')
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and c["cam"]["streams"][0]["state"] == "streaming", 20),
              "camera streaming")
        admin = kp.token("admin")
        ta, tb, tc = kp.token("viewer"), kp.token("viewer"), kp.token("viewer")
        ws = connect(kp, ta)

        ws.send_text("{not json")
        m = reply(ws, None, ("error",))
        check(m["code"] == "bad_request" and "JSON" in m["message"], f"malformed JSON refused: {m}")
        m = offer(ws, "bad", sdp="v=0\r\nm=video 9 UDP 96\r\na=fingerprint:sha-256 01:02\r\n")
        check(m["type"] == "error" and m["code"] == "bad_sdp" and "fingerprint" in m["message"],
              f"malformed SDP refused with a sentence: {m}")
        m = offer(ws, "nocam", camera="no-such-camera")
        check(m["type"] == "error" and m["code"] == "not_found", f"unknown camera refused: {m}")
        m = offer(ws, "vp8", sdp=offer_sdp().replace("a=rtpmap:102 H264/90000\r\n", ""))
        check(m["type"] == "error" and m["code"] == "no_h264", f"an offer without H.264 is refused: {m}")

        # Camera video reaches rtcd a moment after the stream is up.
        def answered():
            m = offer(ws, "s1")
            return m if m["type"] == "answer" else None
        m = wait_for(answered, 15, 0.2)
        check(m is not None, "an offer for the camera's main stream is answered")
        sdp = m["sdp"]
        for want in ("a=setup:passive", "a=fingerprint:sha-256 ", "a=sendonly", "a=rtcp-mux",
                     "a=rtpmap:102 H264/90000", "a=mid:0", "a=group:BUNDLE 0", "a=end-of-candidates"):
            check(want in sdp, f"answer has {want}")
        check(" 127.0.0.1 " in sdp and "typ host" in sdp, "answer carries a loopback host candidate")
        st = reply(ws, "s1", ("state",))
        check(st["codec"] == "h264" and st["fallback"] is None and st["mode"] == "live",
              f"state message: {st}")

        refused = [m for m in (offer(ws, f"s{i}") for i in range(2, 65)) if m["type"] != "answer"]
        check(not refused, f"sessions 2..64 of one principal admitted (refused: {refused[:1]})")
        m = offer(ws, "s65")
        check(m["type"] == "error" and m["code"] == "admission" and "64" in m["message"],
              f"65th session of one principal refused: {m}")

        ws2 = connect(kp, tb)
        refused = [m for m in (offer(ws2, f"b{i}") for i in range(1, 65)) if m["type"] != "answer"]
        check(not refused, f"64 sessions of a second principal admitted (refused: {refused[:1]})")
        ws3 = connect(kp, tc)
        m = offer(ws3, "c1")
        check(m["type"] == "error" and m["code"] == "admission" and "address" in m["message"],
              f"129th session from one address refused: {m}")
        check(metric(kp, admin, "keeppeek_rtc_admission_rejected_total") == 2, "rtcd counts 2 refusals")
        check(metric(kp, admin, "keeppeek_rtc_sessions") == 128, "rtcd reports 128 sessions")

        # A bye frees a slot at once.
        ws.send_text(json.dumps({"type": "bye", "sid": "s64"}))
        m = offer(ws3, "c2")
        check(m["type"] == "answer", f"after a bye the third principal is admitted: {m}")

        # kill -9 rtcd: back after the first backoff step; the signaling WebSockets are closed so pages reconnect.
        pid = kp.status()["rtcd"]["pid"]
        kp.expect_restarts("rtcd")
        os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        st = wait_for(lambda: (s := kp.status()) and s["rtcd"]["pid"] != pid and s["rtcd"]["state"] == "running"
                      and s, 10, 0.02)
        back = time.monotonic() - t0
        check(st, f"rtcd back after kill -9 ({back:.2f} s)")
        check("rtcd: restarting in" not in kp.log_text(), "rtcd restarted after the first backoff step")
        kind, data = ws.recv(timeout=5)
        while kind == "text":
            kind, data = ws.recv(timeout=5)
        check(kind == "close" and data[0] == 1012, f"webd closes the signaling WebSocket with 1012: {kind} {data}")
        ws = connect(kp, ta)
        m = wait_for(lambda: (r := offer(ws, "again")) and r["type"] == "answer" and r, 5, 0.1)
        check(m, "the restarted rtcd answers a new offer")
        for w in (ws, ws2, ws3):
            w.close()
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
