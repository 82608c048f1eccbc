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
import time

from kp import check, run
from kp_rtc import Signaling, Viewer, close_all, with_two_cameras

ROUNDS = 50
CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 43000-43999
"""


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
        await close_all()


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
            await sig.close()
        elif order == "socket-then-peers":
            await sig.close()
            await asyncio.sleep(0.1)
            for v in vs:
                await v.close()
        elif order == "bye-then-peers":
            for v in vs:
                sig.send({"type": "bye", "sid": v.sid})
            await asyncio.sleep(0.1)
            for v in vs:
                await v.close()
            await sig.close()
        elif order == "peers-then-bye":
            for v in vs:
                await v.close()
            await asyncio.sleep(0.3)
            for v in vs:
                sig.send({"type": "bye", "sid": v.sid})
            await asyncio.sleep(0.1)
            await sig.close()
        elif order == "replace-after-peer-closed":
            await vs[0].close()
            m = await sig.next(vs[0].sid, ("closed",))
            check_quiet(m["reason"] == "the browser closed the connection", f"round {r}: closed message {m}")
            again = Viewer(sig, vs[0].sid, "hevc")
            await again.open()
            check(await again.playing(), f"round {r}: a new offer for a closed sid plays")
            for v in [again] + vs[1:]:
                await v.close()
            await sig.close()
        else:  # the peers vanish without a word; the page's socket closes
            for v in vs:
                if v.task:
                    v.task.cancel()
            await sig.close()
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
    await steady_sig.close()
    await asyncio.sleep(0.3)
    check(rtcd_ok(kp, rtcd), "rtcd still the same process, 0 restarts")
    st = kp.status()
    check(all(st[w]["restarts"] == 0 for w in st), f"no worker restarted: {st}")


def test(make):
    with_two_cameras(make, CONFIG, "kp-rtc-td-",
                     lambda kp: asyncio.run(scenario(kp, [kp.token("viewer") for _ in range(3)])))


if __name__ == "__main__":
    run(test)
