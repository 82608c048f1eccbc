#!/usr/bin/env python3
"""rtcd's session engine (ICE, DTLS, SRTP: keeppeek-rtcd-session.so, with libnice and
through it GLib, OpenSSL and libsrtp2) is loaded at the first WebRTC offer, not at start
(decision 0024). With an H.264 camera streaming and no viewer, rtcd maps none of those
libraries (/proc/PID/maps) and its metric says the module is not loaded; an offer with a
malformed SDP does not load it either. An independent peer (aiortc) then opens a live
session and decodes frames: the same rtcd (same pid, no restart) now maps the module and
its libraries, every one of its threads runs under the seccomp filter (Seccomp: 2 in
/proc/PID/task/TID/status: libnice's thread, started with the module after confinement,
too), and libnice's thread runs on a KP_RTC_THREAD_STACK stack with a guard page below it.
Then a second server whose rtcd has no module next to it (--libexec-dir with a copy of
keeppeek-rtcd alone): two well-formed offers are each refused with "unavailable" and a
sentence, the failures are counted on /metrics, the log names the file, an MSE session
(which needs no module) still streams, and rtcd keeps running (no restart, same pid)."""
import asyncio
import json
import os
import shutil
import tempfile

from kp_rtc import Signaling, Viewer, close_all  # noqa: I100 (re-executes in Debian's python3 for aiortc)
from kp import BUILD, TestCamera, cameras, check, metric, proc_status, run, thread_stacks, wait_for
from test_rtc_mse import collect
from test_rtc_signaling import connect, offer

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 45000-45999
"""
# The module and what it brings; libcrypto is left out: only rtcd's copy of libseccomp
# or the sanitizer runtime could bring it, and the module brings libssl with it anyway.
ENGINE_LIBS = ("keeppeek-rtcd-session", "libnice", "libglib-2.0", "libgobject-2.0", "libgio-2.0", "libssl",
               "libsrtp2")
STACK = 4 * 1024 * 1024  # KP_RTC_THREAD_STACK (common/kp_limits.h)
LOADED = "keeppeek_rtc_session_module_loaded"
FAILURES = "keeppeek_rtc_session_module_failures_total"


def mapped(pid):
    with open(f"/proc/{pid}/maps") as f:
        names = {os.path.basename(line.split()[5]) for line in f if len(line.split()) > 5}
    return sorted({lib for lib in ENGINE_LIBS if any(n.startswith(lib) for n in names)})


def unconfined_threads(pid):
    """Threads of pid not under a seccomp filter: [(tid, comm, Seccomp field)]."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        st = proc_status(f"{pid}/task/{tid}")
        if st and st.get("Seccomp") != "2":
            out.append((tid, st.get("Name"), st.get("Seccomp")))
    return out


def with_camera(make, args, scenario):
    work = tempfile.mkdtemp(prefix="kp-rtc-mod-")
    cam = TestCamera(work, "cam", "h264", "rtsp")
    try:
        kp = make(config=CONFIG + f'[camera "cam"]\nurl = {cam.url()}\nsub_url = {cam.sub_url()}\n', args=args)
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and c["cam"]["streams"][1]["state"] == "streaming", 20),
              "camera streaming")
        scenario(kp)
    finally:
        cam.kill()


async def one_session(kp, token):
    sig = Signaling(kp, token, asyncio.get_running_loop())
    try:
        v = Viewer(sig, "v1", "cam")
        await v.open()
        return await v.playing()
    finally:
        await close_all()


def loaded_on_first_offer(kp):
    admin = kp.token("admin")
    rtcd = kp.status()["rtcd"]["pid"]
    check(mapped(rtcd) == [], f"rtcd idle maps none of {', '.join(ENGINE_LIBS)} (mapped: {mapped(rtcd)})")
    check(metric(kp, admin, LOADED) == 0, "rtcd's metrics say the session module is not loaded")
    ws = connect(kp, kp.token("viewer"))
    m = offer(ws, "bad", sdp="v=0\r\nm=video 9 UDP 96\r\na=fingerprint:sha-256 01:02\r\n")
    check(m["type"] == "error" and m["code"] == "bad_sdp", f"a malformed offer is refused: {m}")
    ws.close()
    check(mapped(rtcd) == [], f"a malformed offer loads nothing (mapped: {mapped(rtcd)})")

    check(asyncio.run(one_session(kp, kp.token("viewer"))), "aiortc decodes frames of a live session")
    check(kp.status()["rtcd"]["pid"] == rtcd, "the same rtcd served it")
    check(mapped(rtcd) == sorted(ENGINE_LIBS),
          f"after the first offer rtcd maps the module and its libraries ({mapped(rtcd)})")
    check(metric(kp, admin, LOADED) == 1, "rtcd's metrics say the session module is loaded")
    check(metric(kp, admin, FAILURES) == 0, "no failed load counted")
    bad = unconfined_threads(rtcd)
    check(not bad, f"every thread of rtcd runs under its seccomp filter, libnice's too (not: {bad})")
    stacks = thread_stacks(rtcd)
    found = [t for t, (size, guard, main) in stacks.items() if size == STACK and guard and not main]
    check(len(found) == 1, f"rtcd's libnice thread runs on a 4 MiB stack with a guard page below it "
          f"(stack KiB by thread: { {t: s[0] // 1024 for t, s in stacks.items()} })")
    check("keeppeek-rtcd-session.so (ICE, DTLS, SRTP) in" in kp.log_text(), "the load is logged with its time")


def missing_module(make):
    libexec = tempfile.mkdtemp(prefix="kp-rtc-libexec-")
    os.chmod(libexec, 0o755)
    shutil.copy2(os.path.join(BUILD, "rtcd", "keeppeek-rtcd"), libexec)  # a copy: /proc/self/exe is here
    for w in ("ingestd", "recorderd", "webd", "transcoder"):
        os.symlink(os.path.join(BUILD, w, f"keeppeek-{w}"), os.path.join(libexec, f"keeppeek-{w}"))

    def scenario(kp):
        admin = kp.token("admin")
        rtcd = kp.status()["rtcd"]["pid"]
        ws = connect(kp, kp.token("viewer"))
        for sid in ("m1", "m2"):
            m = offer(ws, sid, stream="sub")
            check(m["type"] == "error" and m["code"] == "unavailable" and "session module" in m["message"],
                  f"offer {sid} without the module is refused with a sentence: {m}")
        ws.send_text(json.dumps({"type": "mse", "sid": "mse1", "camera": "cam", "stream": "sub"}))
        answer, pieces = collect(ws, "mse1", 4)
        check(answer and answer["type"] == "mse" and pieces,
              f"an MSE session, which needs no module, still streams ({answer}, {len(pieces)} pieces)")
        ws.close()
        check(metric(kp, admin, FAILURES) == 2, "both failed loads are counted")
        check(metric(kp, admin, LOADED) == 0, "the module is not loaded")
        st = kp.status()["rtcd"]
        check(st["pid"] == rtcd and st["restarts"] == 0 and st["state"] == "running",
              f"rtcd keeps running without its module ({st['state']}, {st['restarts']} restarts)")
        check(mapped(rtcd) == [], f"and maps none of the module's libraries ({mapped(rtcd)})")
        check(f"loading {libexec}/keeppeek-rtcd-session.so failed" in kp.log_text(),
              "the log names the missing file")
    try:
        with_camera(make, ["--libexec-dir", libexec], scenario)
    finally:
        shutil.rmtree(libexec, ignore_errors=True)


def test(make):
    with_camera(make, None, loaded_on_first_offer)
    missing_module(make)


if __name__ == "__main__":
    run(test)
