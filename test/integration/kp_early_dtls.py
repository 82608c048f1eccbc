"""A peer that sends its DTLS ClientHello before rtcd's ICE agent can select a pair, made
on purpose rather than by chance: a controlling ICE agent of a few STUN messages (RFC
8445, aioice's STUN codec) and a DTLS client (pyOpenSSL through aiortc's certificate,
the use_srtp extension of RFC 5764), both on one UDP socket on loopback.

It nominates the pair at once (a binding request with USE-CANDIDATE, answered by rtcd's
libnice) and sends its ClientHello right after, but holds rtcd's own connectivity check
for HOLD_MS before answering it: until then libnice has no valid pair to select
(RFC 8445 7.3.1.5: a nomination counts once the pair's own check succeeded), so rtcd's
ServerHello flight finds no pair to leave on. The time from ClientHello to the first
DTLS record from rtcd is HOLD_MS plus a few ms when rtcd sends the held flight as soon
as the pair is selected, and about a second when only OpenSSL's retransmission timer
sends it again.

    ms = handshake_ms(sig_ws, sid, camera)    # ClientHello to rtcd's first DTLS record
"""
import inspect
import json
import os
import socket
import time

from aioice import stun
from aiortc import rtcdtlstransport
from aiortc.rtcdtlstransport import RTCCertificate
from OpenSSL import SSL

from kp import check

HOLD_MS = 100


def _offer(ufrag, pwd, fingerprint, port):
    return ("v=0\r\no=- 7 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
            "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\n"
            f"a=ice-ufrag:{ufrag}\r\na=ice-pwd:{pwd}\r\n"
            f"a=fingerprint:sha-256 {fingerprint}\r\na=setup:active\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
            "a=rtpmap:102 H264/90000\r\na=rtcp-fb:102 nack pli\r\n"
            "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
            f"a=candidate:1 1 udp 2130706431 127.0.0.1 {port} typ host\r\n")


def _answer_field(sdp, name):
    for line in sdp.splitlines():
        if line.startswith(f"a={name}:"):
            return line.split(":", 1)[1]
    return None


def _answer_candidate(sdp):
    for line in sdp.splitlines():
        f = line.split()
        if line.startswith("a=candidate:") and f[4] == "127.0.0.1":
            return ("127.0.0.1", int(f[5]))
    return None


def _ssl_context(cert):
    """aiortc's DTLS context: Debian 12's aiortc (1.3) takes no argument, Debian 13's (1.9)
    wants the SRTP profiles to offer."""
    if "srtp_profiles" in inspect.signature(cert._create_ssl_context).parameters:
        return cert._create_ssl_context(srtp_profiles=rtcdtlstransport.SRTP_PROFILES)
    return cert._create_ssl_context()


def handshake_ms(ws, sid, camera, timeout=3.0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    try:
        cert = RTCCertificate.generateCertificate()
        ufrag, pwd = os.urandom(4).hex(), os.urandom(12).hex()
        ws.send_text(json.dumps({"type": "offer", "sid": sid, "camera": camera, "stream": "sub", "mode": "live",
                                 "sdp": _offer(ufrag, pwd, cert.getFingerprints()[0].value,
                                               sock.getsockname()[1])}))
        deadline = time.monotonic() + 10
        while True:
            kind, data = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            m = json.loads(data)
            if m.get("sid") == sid and m["type"] in ("answer", "error", "closed"):
                break
        check(m["type"] == "answer", f"early-DTLS peer {sid} answered: {m}")
        r_ufrag, r_pwd = _answer_field(m["sdp"], "ice-ufrag"), _answer_field(m["sdp"], "ice-pwd")
        rtcd = _answer_candidate(m["sdp"])
        check(rtcd is not None, "rtcd's answer has a loopback candidate")

        # Nominate at once.
        req = stun.Message(stun.Method.BINDING, stun.Class.REQUEST)
        req.attributes["USERNAME"] = f"{r_ufrag}:{ufrag}"
        req.attributes["PRIORITY"] = 1853824767
        req.attributes["ICE-CONTROLLING"] = int.from_bytes(os.urandom(8), "big")
        req.attributes["USE-CANDIDATE"] = None
        req.add_message_integrity(r_pwd.encode())
        sock.sendto(bytes(req), rtcd)
        held = []
        sock.settimeout(0.05)
        nominated = False
        while not nominated and time.monotonic() < deadline:
            try:
                data, addr = sock.recvfrom(2048)
            except socket.timeout:
                sock.sendto(bytes(req), rtcd)
                continue
            msg = stun.parse_message(data)
            if msg.message_class == stun.Class.REQUEST:
                held.append((msg, addr))  # rtcd's own check: answered only after HOLD_MS
            elif msg.transaction_id == req.transaction_id and msg.message_class == stun.Class.RESPONSE:
                nominated = True
        check(nominated, "rtcd's libnice answered the nomination")

        # ClientHello at once.
        ctx = _ssl_context(cert)
        conn = SSL.Connection(ctx)
        conn.set_connect_state()
        try:
            conn.do_handshake()
        except SSL.WantReadError:
            pass
        sent = time.monotonic()
        sock.sendto(conn.bio_read(8192), rtcd)

        def answer(msg, addr):
            resp = stun.Message(stun.Method.BINDING, stun.Class.RESPONSE, transaction_id=msg.transaction_id)
            resp.attributes["XOR-MAPPED-ADDRESS"] = addr
            resp.add_message_integrity(pwd.encode())
            sock.sendto(bytes(resp), addr)

        released = False
        while time.monotonic() < sent + timeout:
            if not released and time.monotonic() >= sent + HOLD_MS / 1000:
                released = True
                for msg, addr in held:
                    answer(msg, addr)
            try:
                data, addr = sock.recvfrom(4096)
            except socket.timeout:
                continue
            if 20 <= data[0] <= 63:
                return (time.monotonic() - sent) * 1000
            msg = stun.parse_message(data)
            if msg.message_class == stun.Class.REQUEST:
                if released:
                    answer(msg, addr)
                else:
                    held.append((msg, addr))
        return None
    finally:
        ws.send_text(json.dumps({"type": "bye", "sid": sid}))
        sock.close()
