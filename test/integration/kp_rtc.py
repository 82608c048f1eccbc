"""An independent WebRTC peer for integration tests: Debian's python3-aiortc (its own ICE,
DTLS and SRTP, not ours) talking to rtcd through webd's /api/v1/rtc signaling. On
loopback only: aioice would gather every interface's address, and aiortc asks a public
STUN server unless given an empty list.

    sig = Signaling(kp, token, asyncio.get_running_loop())
    v = Viewer(sig, "s1", "cam")          # live sub stream; mode="playback", at_ms=... too
    await v.open(); await v.playing()     # frames decoded
    await close_all()                     # every Signaling and Viewer made so far
"""
import asyncio
import json
import os
import sys
import threading
import time

try:
    import aioice.ice
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])  # Debian's python3-aiortc
    raise

import kp_ws
from kp import TestCamera, cameras, check, wait_for

aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []
NO_STUN = RTCConfiguration(iceServers=[])
OPEN = []  # every peer connection and signaling connection, for close_all


class Signaling:
    """webd's /api/v1/rtc WebSocket; a reader thread hands messages to the asyncio loop."""

    def __init__(self, kp, token, loop):
        OPEN.append(self)
        self.ws = kp_ws.connect("127.0.0.1", kp.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + token})
        self.loop = loop
        self.queues = {}
        self.closed = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _queue(self, sid):
        return self.queues.setdefault(sid, asyncio.Queue())

    def _read(self):
        while not self.closed:
            try:
                kind, data = self.ws.recv(timeout=0.5)
            except TimeoutError:
                continue
            except (ConnectionError, OSError, kp_ws.ProtocolError):
                return
            if kind != "text":
                return
            m = json.loads(data)
            self.loop.call_soon_threadsafe(lambda m=m: self._queue(m.get("sid")).put_nowait(m))

    def send(self, obj):
        self.ws.send_text(json.dumps(obj))

    async def next(self, sid, want, timeout=15):
        """The next message for sid whose type is in want (a tuple), or for which want(m)."""
        match = want if callable(want) else (lambda m: m["type"] in want)
        q = self._queue(sid)
        end = time.monotonic() + timeout
        while True:
            m = await asyncio.wait_for(q.get(), max(0.1, end - time.monotonic()))
            if match(m):
                return m

    async def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.ws.close()
        except OSError:
            pass
        self.thread.join(2)


class Viewer:
    """One aiortc RTCPeerConnection receiving one rtcd session; counts decoded frames.
    With audio=True the offer has an audio m-line first (recvonly, Opus and G.711, as
    aiortc writes it); decoded audio frames are counted with their peak sample."""

    def __init__(self, sig, sid, camera, stream="sub", mode="live", at_ms=None, audio=False):
        OPEN.append(self)
        self.sig, self.sid, self.camera, self.stream, self.mode, self.at_ms = sig, sid, camera, stream, mode, at_ms
        self.audio = audio
        self.pc = RTCPeerConnection(NO_STUN)
        self.frames = 0
        self.audio_frames = 0
        self.audio_peak = 0
        self.offer_sdp = self.answer_sdp = None
        self.offered_at = self.first_frame_at = None
        self.task = None
        self.tasks = []

        @self.pc.on("track")
        def on_track(track):
            t = asyncio.ensure_future(self._count_audio(track) if track.kind == "audio" else self._count(track))
            self.tasks.append(t)
            if track.kind != "audio":
                self.task = t

    async def _count(self, track):
        try:
            while True:
                await track.recv()
                if self.first_frame_at is None:
                    self.first_frame_at = time.monotonic()
                self.frames += 1
        except Exception:  # MediaStreamError when the connection ends
            return

    async def _count_audio(self, track):
        try:
            while True:
                f = await track.recv()
                self.audio_frames += 1
                self.audio_peak = max(self.audio_peak, int(abs(f.to_ndarray()).max()))
        except Exception:
            return

    async def open(self):
        if self.audio:
            self.pc.addTransceiver("audio", direction="recvonly")
        self.pc.addTransceiver("video", direction="recvonly")
        await self.pc.setLocalDescription(await self.pc.createOffer())
        self.offer_sdp = self.pc.localDescription.sdp
        self.offered_at = time.monotonic()
        msg = {"type": "offer", "sid": self.sid, "sdp": self.pc.localDescription.sdp, "camera": self.camera,
               "stream": self.stream, "mode": self.mode}
        if self.at_ms is not None:
            msg["at_ms"] = self.at_ms
        self.sig.send(msg)
        m = await self.sig.next(self.sid, ("answer", "error", "closed"))
        if m["type"] != "answer":
            check(False, f"session {self.sid} on {self.camera} answered: {m}")
        self.answer_sdp = m["sdp"]
        await self.pc.setRemoteDescription(RTCSessionDescription(m["sdp"], "answer"))

    async def playing(self, more_than=0, timeout=15):
        end = time.monotonic() + timeout
        while self.frames <= more_than and time.monotonic() < end:
            await asyncio.sleep(0.05)
        return self.frames > more_than

    async def close(self):
        """Ends the peer connection (DTLS close_notify first) and the frame counting."""
        try:
            await asyncio.wait_for(self.pc.close(), 3)
        except Exception:
            pass
        for t in self.tasks:
            t.cancel()


def with_two_cameras(make, config, prefix, scenario):
    """Runs scenario(kp) against keeppeekd with two RTSP test cameras, "avc" (H.264, sent
    as is) and "hevc" (H.265 only, so transcoded for aiortc, which offers no H.265), once
    both sub streams stream and a few seconds are recorded (for playback sessions)."""
    import tempfile
    work = tempfile.mkdtemp(prefix=prefix)
    avc = TestCamera(work, "avc", "h264", "rtsp")
    hevc = TestCamera(work, "hevc", "h265", "rtsp")
    try:
        for c in (avc, hevc):
            config += f'[camera "{c.name}"]\nurl = {c.url()}\nsub_url = {c.sub_url()}\n'
        kp = make(config=config)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(c[n]["streams"][1]["state"] == "streaming"
                                                         for n in ("avc", "hevc")), 20),
              "both cameras' sub streams streaming")
        time.sleep(7.0)
        scenario(kp)
    finally:
        avc.kill()
        hevc.kill()


def section(sdp, kind):
    """The lines of the first m-line of kind, from its m= line to the next."""
    out, inside = [], False
    for line in sdp.splitlines():
        if line.startswith("m="):
            inside = line.startswith(f"m={kind} ")
        if inside:
            out.append(line)
    return out


async def audio_grows(v, within=3.0):
    before = v.audio_frames
    end = time.monotonic() + within
    while time.monotonic() < end:
        await asyncio.sleep(0.1)
        if v.audio_frames > before + 5:
            return True
    return False


async def control(sig, sid, **kw):
    sig.send({"type": "control", "sid": sid, **kw})
    m = await sig.next(sid, ("state", "error"))
    check(m["type"] == "state", f"control {kw} answered {m}")


async def close_all():
    for o in OPEN:
        await o.close()
    OPEN.clear()
