#!/usr/bin/env python3
"""rtcd's per-session ceilings of SPEC 12 (keeppeek-rtcd(8) LIMITS), with an independent
WebRTC peer (Debian's python3-aiortc) and the real supervisor, one H.264 and one
H.265-only test camera:
- stored-media cursors, at most KP_RTC_CURSORS_PER_SESSION (16) per session: one
  connected session switches from playback to live and seeks back 17 times (each seek
  from live opens a cursor, one past the 16) and then seeks 17 times within playback;
  rtcd holds none for it while live and never more than one (keeppeek_rtc_cursors), refuses none
  (keeppeek_rtc_cursor_rejected_total) and the session goes on decoding frames;
- threads, 4 MiB of stack each "if sessions use threads": sessions do not have threads
  (17 more sessions add no thread to rtcd), and the
  transcode (an H.265 camera watched by a peer without H.265) adds no thread to rtcd:
  its one thread runs in keeppeek-transcoder (decision 0014), started for it, on a
  KP_RTC_THREAD_STACK stack (4 MiB) with a guard page below it."""
import asyncio
import os
import re
import sys
import time

from kp import check, metric, run, wait_for
from kp_rtc import Signaling, Viewer, close_all, with_two_cameras

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 44000-44499
"""
MIB = 1024 * 1024

def limit(name):
    with open(os.path.join(os.environ["KP_SOURCE_ROOT"], "common", "kp_limits.h")) as f:
        m = re.search(r"^#define " + name + r"\s+\(?(\d+)(?: \* KP_MIB\))?", f.read(), re.M)
    return int(m.group(1)) * (MIB if "KP_MIB" in m.group(0) else 1)


PER_SESSION = limit("KP_RTC_CURSORS_PER_SESSION")
STACK = limit("KP_RTC_THREAD_STACK")


def stacks(pid):
    """Stack mapping sizes of rtcd's threads other than the main one, by thread id, with
    whether a guard page lies below; threads not blocked in a system call are left out."""
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            a, b = (int(x, 16) for x in line.split()[0].split("-"))
            maps.append((a, b, line.split()[1], "[stack]" in line))
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                fields = f.read().split()
        except FileNotFoundError:
            continue
        if len(fields) < 3:
            continue
        sp = int(fields[-2], 16)
        for i, (a, b, perms, main) in enumerate(maps):
            if a <= sp < b and not main:
                out[int(tid)] = (b - a, i > 0 and maps[i - 1][1] == a and maps[i - 1][2] == "---p")
    return out


async def scenario(kp, token, admin):
    loop = asyncio.get_running_loop()
    rtcd = kp.status()["rtcd"]["pid"]
    sig = Signaling(kp, token, loop)
    try:
        # ---- cursors per session ----
        at_ms = int(time.time() * 1000) - 5000
        pb = Viewer(sig, "pb", "avc", mode="playback", at_ms=at_ms)
        await pb.open()
        check(await pb.playing(), "a playback session decodes frames")
        # rtcd's libnice thread (a 4 MiB stack) starts with its session module at the first
        # offer (decision 0024): threads are counted from here.
        threads0 = set(int(t) for t in os.listdir(f"/proc/{rtcd}/task"))
        check(metric(kp, admin, "keeppeek_rtc_cursors") == 1, "it holds one cursor")
        most, least_after_seek, most_after_live, modes = 0, 99, 0, []
        for i in range(PER_SESSION + 1):
            sig.send({"type": "control", "sid": "pb", "op": "live"})
            m = await sig.next("pb", lambda m: m["type"] in ("state", "error") and
                               (m["type"] == "error" or m["mode"] == "live"))
            modes.append(m.get("mode", m.get("code")))
            most_after_live = max(most_after_live, metric(kp, admin, "keeppeek_rtc_cursors"))
            sig.send({"type": "control", "sid": "pb", "op": "seek", "at_ms": at_ms + 100 * i})
            m = await sig.next("pb", lambda m: m["type"] in ("state", "error") and
                               (m["type"] == "error" or m["mode"] == "playback"))
            modes.append(m.get("mode", m.get("code")))
            n = metric(kp, admin, "keeppeek_rtc_cursors")
            most, least_after_seek = max(most, n), min(least_after_seek, n)
        check(modes == ["live", "playback"] * (PER_SESSION + 1),
              f"{PER_SESSION + 1} times from playback to live and back by a seek, each opening a cursor "
              f"(one past the {PER_SESSION} of a session): every switch done ({modes[-4:]} ...)")
        check(most_after_live == 0, f"live closes the cursor, so that each seek opened a new one ({most_after_live})")
        check(most == 1 and least_after_seek == 1,
              f"the session never held more than one cursor (most {most}, after each seek {least_after_seek})")
        for i in range(PER_SESSION + 1):
            sig.send({"type": "control", "sid": "pb", "op": "seek", "at_ms": at_ms - 100 * i})
            await sig.next("pb", lambda m: m["type"] in ("state", "error"))
            most = max(most, metric(kp, admin, "keeppeek_rtc_cursors"))
        check(most == 1, f"{PER_SESSION + 1} seeks within playback keep that one cursor (most {most})")
        check(metric(kp, admin, "keeppeek_rtc_cursor_rejected_total") == 0, "no cursor was refused")
        frames = pb.frames
        check(await pb.playing(more_than=frames), f"the session still decodes frames ({frames} -> {pb.frames})")

        # ---- threads ----
        threads1 = set(int(t) for t in os.listdir(f"/proc/{rtcd}/task"))
        more = []
        for i in range(PER_SESSION + 1):
            v = Viewer(sig, f"live{i}", "avc")
            more.append(v)
            await v.open()
        playing = [await v.playing() for v in more]
        check(all(playing), f"{len(more)} more live sessions decode frames ({playing.count(True)})")
        check(metric(kp, admin, "keeppeek_rtc_sessions") == PER_SESSION + 2,
              f"{PER_SESSION + 2} sessions open")
        threads2 = set(int(t) for t in os.listdir(f"/proc/{rtcd}/task"))
        check(threads2 == threads1, f"sessions have no threads: {len(threads1)} threads in rtcd before "
              f"{PER_SESSION + 1} more sessions, {len(threads2)} after (new: {sorted(threads2 - threads1)})")
        new = {t: s for t, s in stacks(rtcd).items() if t not in threads0}
        check(not [t for t, (size, guard) in new.items() if size == STACK],
              f"no {STACK // MIB} MiB stack since the first session (threads since, stacks in KiB: "
              f"{ {t: s // 1024 for t, (s, g) in new.items()} }: libuv's pool)")
        # Every thread that exists now, blocked or running: stacks() leaves out a thread
        # caught running (the ICE thread, also on a 4 MiB stack, would count as new).
        before = set(int(t) for t in os.listdir(f"/proc/{rtcd}/task"))
        check(kp.status()["transcoder"]["pid"] == 0, "no transcoder runs before a transcode is asked for")
        tc = Viewer(sig, "tc", "hevc")
        await tc.open()
        check(await tc.playing(), "a peer without H.265 watching the H.265 camera decodes frames")
        m = await sig.next("tc", lambda m: m["type"] == "state")
        check(m["fallback"] == "transcode", f"through a transcode ({m['fallback']})")
        after = set(int(t) for t in os.listdir(f"/proc/{rtcd}/task"))
        check(after <= before, f"the transcode adds no thread to rtcd (new: {sorted(after - before)})")
        tx = kp.status()["transcoder"]["pid"]
        check(tx > 0, "keeppeek-transcoder runs for it")
        added = wait_for(lambda: {t: s for t, s in stacks(tx).items() if s[0] == STACK}, 5, 0.1)
        check(len(added) == 1 and all(g for s, g in added.values()),
              f"the transcode runs in the transcoder on one thread with a {STACK // MIB} MiB stack and a guard "
              f"page below it ({ {t: (s // 1024, g) for t, (s, g) in added.items()} })")
    finally:
        await close_all()


def test(make):
    with_two_cameras(make, CONFIG, "kp-rtc-sl-",
                     lambda kp: asyncio.run(scenario(kp, kp.token("viewer"), kp.token("admin"))))


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: reading rtcd's /proc/PID/task/TID/syscall needs root")
        sys.exit(77)
    run(test)
