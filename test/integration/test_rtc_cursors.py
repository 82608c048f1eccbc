"""rtcd's server-wide ceiling of 1,024 stored-playback cursors (SPEC 12), end to end over
webd's /api/v1/rtc WebSocket with the real supervisor and a recording H.264 test camera.
A playback session holds its cursor from the offer on (opened paused until DTLS-SRTP is
up), so 1,024 playback offers hold 1,024 cursors. The per-principal (64) and per-address
(128) admission limits are kept: 16 principals with 64 sessions each, two per loopback
address 127.0.0.2..127.0.0.9. All 1,024 offers are answered and rtcd reports 1,024
cursors; the 1,025th playback offer (a 17th principal from a 9th address) is refused
with an "admission" error naming the ceiling, as the 65th session of one principal is;
a live offer is still admitted; a bye frees a cursor and the next playback offer is
answered. Sessions that never connect are closed 30 s after their offer, so the offers
are sent pipelined and the test times itself against that deadline."""
import json
import os
import socket
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
udp_ports = 42000-43199
"""

FP = ":".join(["AB"] * 32)
PRINCIPALS = 16
PER_PRINCIPAL = 64


def offer_sdp(ufrag):
    return ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
            "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\n"
            f"a=ice-ufrag:{ufrag}\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
            f"a=fingerprint:sha-256 {FP}\r\na=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
            "a=rtpmap:102 H264/90000\r\n"
            "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n")


def connect_from(kp, token, source):
    """A signaling WebSocket whose TCP connection comes from the loopback address source
    (webd hands rtcd the peer address, which admission counts per address)."""
    plain = socket.create_connection

    def bound(address, timeout=None, source_address=None):
        return plain(address, timeout, (source, 0))
    socket.create_connection = bound
    try:
        return kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + token})
    finally:
        socket.create_connection = plain


def playback_offer(sid, at_ms, mode="playback"):
    return json.dumps({"type": "offer", "sid": sid, "sdp": offer_sdp(f"u{sid}"), "camera": "cam",
                       "stream": "sub", "mode": mode, "at_ms": at_ms})


def replies(ws, sids, deadline):
    """The first answer or error for each of sids (state messages are skipped)."""
    got = {}
    while len(got) < len(sids):
        kind, data = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
        if kind != "text":
            check(False, f"signaling message is text, got {kind} {data!r}")
        m = json.loads(data)
        if m.get("sid") in sids and m["type"] in ("answer", "error") and m["sid"] not in got:
            got[m["sid"]] = m
    return got


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtc-cur-")
    cam = TestCamera(work, "cam", "h264", "rtsp")
    try:
        kp = make(config=CONFIG + f'[camera "cam"]\nurl = {cam.url()}\nsub_url = {cam.sub_url()}\n')
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and c["cam"]["streams"][1]["state"] == "streaming", 20),
              "camera sub stream streaming")
        admin = kp.token("admin")
        tokens = [kp.token("viewer") for _ in range(PRINCIPALS + 1)]
        time.sleep(6.0)  # a few fragments of the sub stream recorded
        at_ms = int(time.time() * 1000) - 4000
        socks = [connect_from(kp, tokens[i], f"127.0.0.{2 + i // 2}") for i in range(PRINCIPALS)]
        rtcd = kp.status()["rtcd"]["pid"]
        rss0 = rss_kib(rtcd)

        t0 = time.monotonic()
        deadline = t0 + 25.0  # sessions that never connect close 30 s after their offer
        answered, refused = 0, []
        for i, ws in enumerate(socks):
            sids = [f"p{i}-{k}" for k in range(PER_PRINCIPAL)]
            for sid in sids:
                ws.send_text(playback_offer(sid, at_ms))
            for m in replies(ws, set(sids), deadline).values():
                if m["type"] == "answer" and "a=setup:passive" in m["sdp"]:
                    answered += 1
                else:
                    refused.append(m)
        took = time.monotonic() - t0
        check(not refused and answered == PRINCIPALS * PER_PRINCIPAL,
              f"1,024 playback offers from 16 principals on 8 addresses answered ({answered}; refused "
              f"{len(refused)}, first {refused[:1]})")
        check(time.monotonic() - t0 < 28.0, f"the 1,024 offers were answered before the first expired ({took:.1f} s)")
        cursors = metric(kp, admin, "keeppeek_rtc_cursors")
        check(cursors == 1024, f"rtcd holds 1,024 playback cursors (reports {cursors})")
        check(metric(kp, admin, "keeppeek_rtc_sessions") == 1024, "rtcd holds 1,024 sessions")
        print(f"1,024 playback sessions answered in {took:.1f} s; rtcd RSS {rss0 // 1024} -> "
              f"{rss_kib(rtcd) // 1024} MiB, {len(os.listdir(f'/proc/{rtcd}/fd'))} descriptors open")

        last = connect_from(kp, tokens[PRINCIPALS], "127.0.0.10")
        last.send_text(playback_offer("extra", at_ms))
        m = replies(last, {"extra"}, time.monotonic() + 10)["extra"]
        check(m["type"] == "error" and m["code"] == "admission" and "1,024" in m["message"],
              f"the 1,025th cursor is refused like the 65th session: {m}")
        check(metric(kp, admin, "keeppeek_rtc_cursor_rejected_total") == 1, "rtcd counts the refused cursor")
        check(metric(kp, admin, "keeppeek_rtc_cursors") == 1024, "still 1,024 cursors after the refusal")

        last.send_text(playback_offer("live", at_ms, mode="live"))
        m = replies(last, {"live"}, time.monotonic() + 10)["live"]
        check(m["type"] == "answer", f"a live offer needs no cursor and is admitted: {m.get('message')}")

        socks[0].send_text(json.dumps({"type": "bye", "sid": "p0-0"}))
        last.send_text(playback_offer("extra2", at_ms))
        m = replies(last, {"extra2"}, time.monotonic() + 10)["extra2"]
        check(m["type"] == "answer", f"after a bye frees a cursor the next playback offer is answered: {m.get('message')}")
        check(time.monotonic() - t0 < 29.0, "every check ran while the 1,024 sessions were open")
        for ws in socks + [last]:
            ws.close()
        check(wait_for(lambda: metric(kp, admin, "keeppeek_rtc_cursors") == 0, 10, 0.2),
              "closing the WebSockets releases every cursor")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
