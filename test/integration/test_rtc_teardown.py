"""rtcd session teardown in every order, with an independent WebRTC peer (Debian's
python3-aiortc: its own ICE, DTLS and SRTP stacks, not ours). Two cameras: an H.264 one
(sent as is) and an H.265-only one (aiortc offers no H.265, so rtcd transcodes). Two
steady viewers, one of each, watch throughout. Then 50 rounds each open a signaling
connection with a transcoded live session, a plain live session and a stored playback
session, wait until every one has decoded a frame, and end them in one of the orders a
page or a client can: the peer connections close first (DTLS close_notify, "the browser
closed the connection") and then the WebSocket, the WebSocket first, a bye, a new offer
replacing a session whose peer connection is gone, or the peer simply vanishing. After
every round rtcd must not have restarted, and the steady viewers must keep decoding.
(Issue: a session ended by DTLS stayed linked in its signaling connection and was read
after it was freed when the connection closed.)"""
import asyncio
import json
import os
import queue
import sys
import tempfile
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
from kp import TestCamera, cameras, check, run, wait_for

ROUNDS = 50
CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 43000-43999
"""

# Loopback only: aiortc would otherwise gather every interface's address, and asks a
# public STUN server unless given an empty list.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []
NO_STUN = RTCConfiguration(iceServers=[])


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

    async def next(self, sid, types, timeout=15):
        q = self._queue(sid)
        end = time.monotonic() + timeout
        while True:
            m = await asyncio.wait_for(q.get(), max(0.1, end - time.monotonic()))
            if m["type"] in types:
                return m

    async def close_quietly(self):
        self.close()

    def close(self):
        self.closed = True
        try:
            self.ws.close()
        except OSError:
            pass
        self.thread.join(2)


OPEN = []  # every peer connection and signaling connection, closed on the way out


class Viewer:
    """One aiortc RTCPeerConnection receiving one rtcd session; counts decoded frames."""

    def __init__(self, sig, sid, camera, stream="sub", mode="live", at_ms=None):
        OPEN.append(self)
        self.sig, self.sid, self.camera, self.stream, self.mode, self.at_ms = sig, sid, camera, stream, mode, at_ms
        self.pc = RTCPeerConnection(NO_STUN)
        self.frames = 0
        self.task = None
        self.state = None

        @self.pc.on("track")
        def on_track(track):
            self.task = asyncio.ensure_future(self._count(track))

    async def _count(self, track):
        try:
            while True:
                await track.recv()
                self.frames += 1
        except Exception:  # MediaStreamError when the connection ends
            return

    async def open(self):
        self.pc.addTransceiver("video", direction="recvonly")
        await self.pc.setLocalDescription(await self.pc.createOffer())
        msg = {"type": "offer", "sid": self.sid, "sdp": self.pc.localDescription.sdp, "camera": self.camera,
               "stream": self.stream, "mode": self.mode}
        if self.at_ms is not None:
            msg["at_ms"] = self.at_ms
        self.sig.send(msg)
        m = await self.sig.next(self.sid, ("answer", "error", "closed"))
        if m["type"] != "answer":
            check(False, f"session {self.sid} on {self.camera} answered: {m}")
        await self.pc.setRemoteDescription(RTCSessionDescription(m["sdp"], "answer"))

    async def playing(self, timeout=15):
        end = time.monotonic() + timeout
        while self.frames == 0 and time.monotonic() < end:
            await asyncio.sleep(0.05)
        return self.frames > 0

    async def close(self):
        await self.pc.close()
        if self.task:
            self.task.cancel()

    async def close_quietly(self):
        try:
            await asyncio.wait_for(self.close(), 3)
        except Exception:
            pass


def check_quiet(cond, msg):
    if not cond:
        check(False, msg)


def rtcd_ok(kp, pid):
    st = kp.status()
    return st is not None and st["rtcd"]["pid"] == pid and st["rtcd"]["restarts"] == 0 and \
        st["rtcd"]["state"] == "running"


async def scenario(kp, tokens):
    try:
        await rounds(kp, tokens)
    finally:
        for o in OPEN:
            await o.close_quietly()


async def rounds(kp, tokens):
    loop = asyncio.get_running_loop()
    rtcd = kp.status()["rtcd"]["pid"]
    steady_sig = Signaling(kp, tokens[0], loop)
    steady = [Viewer(steady_sig, "steady-tc", "hevc"), Viewer(steady_sig, "steady-264", "avc")]
    for v in steady:
        await v.open()
    for v in steady:
        check(await v.playing(), f"steady viewer {v.sid} decodes frames")
    m = await steady_sig.next("steady-tc", ("state",))
    check(m["fallback"] == "transcode" and m["codec"] == "h264", f"the H.265 camera is transcoded: {m}")

    orders = ["peers-then-socket", "socket-then-peers", "bye-then-peers", "peers-then-bye",
              "replace-after-peer-closed", "peers-vanish-socket-closes"]
    before = [v.frames for v in steady]
    for r in range(ROUNDS):
        order = orders[r % len(orders)]
        sig = Signaling(kp, tokens[1 + r % 2], loop)
        at_ms = int(time.time() * 1000) - 5000
        vs = [Viewer(sig, f"r{r}-tc", "hevc"), Viewer(sig, f"r{r}-264", "avc"),
              Viewer(sig, f"r{r}-pb", "avc", mode="playback", at_ms=at_ms)]
        for v in vs:
            await v.open()
        for v in vs:
            if not await v.playing():
                check(False, f"round {r}: session {v.sid} decodes a frame")
        if order == "peers-then-socket":
            for v in vs:
                await v.close()
            await asyncio.sleep(0.3)  # rtcd ends them on close_notify first
            sig.close()
        elif order == "socket-then-peers":
            sig.close()
            await asyncio.sleep(0.1)
            for v in vs:
                await v.close()
        elif order == "bye-then-peers":
            for v in vs:
                sig.send({"type": "bye", "sid": v.sid})
            await asyncio.sleep(0.1)
            for v in vs:
                await v.close()
            sig.close()
        elif order == "peers-then-bye":
            for v in vs:
                await v.close()
            await asyncio.sleep(0.3)
            for v in vs:
                sig.send({"type": "bye", "sid": v.sid})
            await asyncio.sleep(0.1)
            sig.close()
        elif order == "replace-after-peer-closed":
            await vs[0].close()
            m = await sig.next(vs[0].sid, ("closed",))
            check_quiet(m["reason"] == "the browser closed the connection", f"round {r}: closed message {m}")
            again = Viewer(sig, vs[0].sid, "hevc")
            await again.open()
            check(await again.playing(), f"round {r}: a new offer for a closed sid plays")
            for v in [again] + vs[1:]:
                await v.close()
            sig.close()
        else:  # the peers vanish without a word; the page's socket closes
            for v in vs:
                if v.task:
                    v.task.cancel()
            sig.close()
            await asyncio.sleep(0.2)
            for v in vs:
                await v.close()
        await asyncio.sleep(0.2)
        if not rtcd_ok(kp, rtcd):
            check(False, f"round {r} ({order}): rtcd still runs with 0 restarts: {kp.status()['rtcd']}")
        if r % 10 == 9:
            now = [v.frames for v in steady]
            if not all(n > b for n, b in zip(now, before)):
                check(False, f"round {r}: steady viewers keep decoding ({before} -> {now})")
            before = now
    check(True, f"{ROUNDS} rounds of 3 sessions ended in {len(orders)} orders; rtcd never restarted")
    await asyncio.sleep(1.0)
    now = [v.frames for v in steady]
    check(all(n > b for n, b in zip(now, before)), f"steady viewers still decode at the end ({now} frames)")
    for v in steady:
        await v.close()
    steady_sig.close()
    await asyncio.sleep(0.3)
    check(rtcd_ok(kp, rtcd), "rtcd still the same process, 0 restarts")
    st = kp.status()
    check(all(st[w]["restarts"] == 0 for w in st), f"no worker restarted: {st}")


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtc-td-")
    avc = TestCamera(work, "avc", "h264", "rtsp")
    hevc = TestCamera(work, "hevc", "h265", "rtsp")
    try:
        conf = CONFIG
        for c in (avc, hevc):
            conf += f'[camera "{c.name}"]\nurl = {c.url()}\nsub_url = {c.sub_url()}\n'
        kp = make(config=conf)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(c[n]["streams"][1]["state"] == "streaming"
                                                         for n in ("avc", "hevc")), 20),
              "both cameras' sub streams streaming")
        tokens = [kp.token("viewer") for _ in range(3)]
        time.sleep(7.0)  # a few seconds recorded, for the playback sessions
        asyncio.run(scenario(kp, tokens))
    finally:
        avc.kill()
        hevc.kill()


if __name__ == "__main__":
    run(test)
