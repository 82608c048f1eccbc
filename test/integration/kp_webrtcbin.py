"""A second independent WebRTC peer for integration tests: GStreamer's webrtcbin (Debian's
gstreamer1.0-plugins-bad with gir1.2-gst-plugins-bad-1.0 and gstreamer1.0-nice, through
python3-gi): its own SDP, libnice as the controlling agent, and its own DTLS client,
which sends its ClientHello as soon as ICE has a working pair, before rtcd's libnice has
selected one. One recvonly H.264 (and optionally Opus) session through webd's
/api/v1/rtc, timed from the offer to the first decrypted RTP packet out of webrtcbin.

    p = Peer(kp, token, "s1", "cam")
    ms = p.first_rtp_ms()     # None when nothing came within the timeout
    p.close()
"""
import json
import os
import sys
import threading
import time

try:
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstWebRTC", "1.0")
    gi.require_version("GstSdp", "1.0")
    from gi.repository import Gst, GstSdp, GstWebRTC
except (ImportError, ValueError):
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

import kp_ws
from kp import check

Gst.init(None)



VIDEO_CAPS = ("application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,"
              "packetization-mode=(string)1,profile-level-id=(string)42e01f")
AUDIO_CAPS = "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000"


class Peer:
    def __init__(self, kp, token, sid, camera, stream="sub", audio=False):
        self.sid = sid
        self.ws = kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + token})
        self.pipe = Gst.Pipeline.new(sid)
        self.rtc = Gst.ElementFactory.make("webrtcbin")
        self.rtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
        self.rtc.set_property("latency", 0)  # rtpbin's jitter buffer would hold the first packet 200 ms
        self.pipe.add(self.rtc)
        self.first = None
        self.lock = threading.Lock()
        self.candidates = []
        self.promises = []
        if audio:
            self.rtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY,
                          Gst.Caps.from_string(AUDIO_CAPS))
        self.rtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY,
                      Gst.Caps.from_string(VIDEO_CAPS))
        self.rtc.connect("pad-added", self._pad)
        self.rtc.connect("on-ice-candidate", self._candidate)
        self.pipe.set_state(Gst.State.PLAYING)
        self.camera, self.stream = camera, stream

    def _pad(self, rtc, pad):
        if pad.get_direction() != Gst.PadDirection.SRC:
            return
        sink = Gst.ElementFactory.make("fakesink")
        sink.set_property("async", False)
        self.pipe.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))

        def probe(p, info):
            with self.lock:
                if self.first is None:
                    self.first = time.monotonic()
            return Gst.PadProbeReturn.REMOVE
        pad.add_probe(Gst.PadProbeType.BUFFER, probe)

    def _candidate(self, rtc, mline, cand):
        # libnice leaves out loopback: its host candidates are this machine's other
        # addresses (rtcd is given the IPv4 one too).
        if " udp " in cand.lower() and " typ host" in cand and ":" not in cand.split()[4]:
            with self.lock:
                self.candidates.append(cand)

    def _flush_candidates(self):
        with self.lock:
            cands, self.candidates = self.candidates, []
        for c in cands:
            self.ws.send_text(json.dumps({"type": "candidate", "sid": self.sid, "candidate": c}))

    def _call(self, signal, *args, value=None):
        """Emits signal with a promise and waits; the reply's value of that name. The
        promise and the reply own what the value holds: both are kept as long as the peer."""
        promise = Gst.Promise.new()
        self.promises.append(promise)
        self.rtc.emit(signal, *args, promise)
        promise.wait()
        reply = promise.get_reply()
        self.promises.append(reply)
        return reply.get_value(value) if value and reply else None

    def first_rtp_ms(self, timeout=5.0):
        """Offers, answers, and returns ms from the offer to the first decrypted RTP packet."""
        offer = self._call("create-offer", None, value="offer")
        text = offer.sdp.as_text()
        self._call("set-local-description", offer)
        sent = time.monotonic()
        self.ws.send_text(json.dumps({"type": "offer", "sid": self.sid, "sdp": text,
                                      "camera": self.camera, "stream": self.stream, "mode": "live"}))
        while True:
            kind, data = self.ws.recv(timeout=max(0.1, sent + timeout - time.monotonic()))
            m = json.loads(data)
            if m.get("sid") == self.sid and m["type"] in ("answer", "error", "closed"):
                break
        check(m["type"] == "answer", f"webrtcbin session {self.sid} answered: {m}")
        ok, sdp = GstSdp.SDPMessage.new_from_text(m["sdp"])
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp)
        self._call("set-remote-description", answer)
        while time.monotonic() < sent + timeout:
            self._flush_candidates()
            with self.lock:
                if self.first is not None:
                    return (self.first - sent) * 1000
            time.sleep(0.002)
        return None

    def close(self):
        try:
            self.ws.send_text(json.dumps({"type": "bye", "sid": self.sid}))
            self.ws.close()
        except OSError:
            pass
        self.pipe.set_state(Gst.State.NULL)
