#!/usr/bin/env python3
"""How keeppeekd starts (keeppeekd(8) START, issue 16).

1. Socket activation, as systemd does it (dist/keeppeek.socket): the test binds the web port,
   hands it in as descriptor 3 with LISTEN_FDS=1 and LISTEN_PID, and a client opens and closes
   connections in a loop from before keeppeekd is exec'd until webd answers (and at least 10
   times after the exec; the listen queue holds them all until webd accepts): no connection is
   ever refused (ECONNREFUSED). webd is then killed with SIGKILL and the client loops again
   until the new webd answers: still none refused (keeppeekd keeps the socket across webd's restart).
2. webd and recorderd start first; ingestd and rtcd are started once both run and are linked
   (log order: after keeppeekd's "ready" line). webd, without a webhook, maps no libcurl
   (it is loaded at the first webhook, test_webhooks).
3. ingestd, with only a Baichuan camera configured, maps no FFmpeg library; a camera test of an
   rtsp:// URL runs ingestd's own RTSP client (decision 0030) and still maps none; ingestd
   answers the test and does not restart. (ingestd links and loads no FFmpeg at all since
   decision 0034; test_audio_record checks it while converting ADPCM and G.711 to Opus.)"""
import os
import signal
import socket
import stat
import threading
import time

import kp
from kp import check, run, wait_for


def ffmpeg_mapped(pid):
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read()
    return {lib for lib in ("libavformat", "libavcodec", "libavutil", "libswresample") if lib in maps}


class Prober(threading.Thread):
    """Opens and closes a TCP connection to port in a loop (every 0.5 ms) until told to stop;
    counts refusals."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.refused, self.attempts, self.other = port, 0, 0, {}
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            self.attempts += 1
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
            except ConnectionRefusedError:
                self.refused += 1
            except OSError as e:
                self.other[type(e).__name__] = self.other.get(type(e).__name__, 0) + 1
            time.sleep(0.0005)

    def until(self, pred, timeout):
        ok = wait_for(pred, timeout, 0.01)
        self.done.set()
        self.join(5)
        return ok


def healthz_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.settimeout(5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/1.1 ")
    except OSError:
        return False


def test(make):
    workdir = os.environ.get("TMPDIR", "/tmp")
    cam = kp.TestCamera(workdir, "start-cam", "h264", "baichuan", "aes")
    config = ("[keeppeek]\ndata_dir = {dir}/data\nrun_dir = {dir}/run\n[web]\nlisten = 127.0.0.1:{port}\n"
              f'[camera "c1"]\nurl = {cam.url()}\nstreams = sub\n')
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    # Room for every connection the prober opens before webd accepts (the kernel caps it
    # at net.core.somaxconn): with a short queue its connects stall once the queue fills.
    lsock.listen(4096)
    port = lsock.getsockname()[1]
    wrapper = os.path.join(workdir, f"kp-activate-{os.getpid()}.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec 3<&{lsock.fileno()} {lsock.fileno()}<&-\n'
                f'LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=web exec "{kp.KEEPPEEKD}" "$@"\n')
    os.chmod(wrapper, stat.S_IRWXU)
    real = kp.KEEPPEEKD
    kp.KEEPPEEKD = wrapper
    try:
        probe = Prober(port)
        probe.start()  # before the fork, and seen connecting
        check(wait_for(lambda: probe.attempts >= 5, 10, 0.01), f"the prober connects ({probe.attempts} times)")
        forked_at = probe.attempts
        k = make(config=config, pass_fds=(lsock.fileno(),))
    finally:
        kp.KEEPPEEKD = real
    lsock.close()
    # Until webd answers and the prober connected 10 times more since the fork (however
    # little CPU it got while keeppeekd started).
    answered = probe.until(lambda: healthz_answers(port) and probe.attempts >= forked_at + 10, 30)
    check(answered, f"webd answers on the socket-activated port ({forked_at} connections before the fork, "
          f"{probe.attempts} in all, {probe.other})")
    check(probe.refused == 0 and probe.attempts >= forked_at + 10,
          f"no connection refused from the fork on: {probe.refused} of {probe.attempts}")
    k.web_port = port
    st = k.wait_running(timeout=30)
    log = k.log_text()
    check("socket activation: 1 listening socket" in log, "keeppeekd logs the socket it was handed")

    # 2. Start order.
    def at(line):
        i = log.find(line)
        return i if i >= 0 else 1 << 30
    first = max(at("webd running"), at("recorderd running"))
    check(first < at("ingestd started") and first < at("rtcd started"),
          "ingestd and rtcd are started after webd and recorderd run")
    linked = at("ready: webd and recorderd running and linked")
    check(linked < at("ingestd started") and linked < at("rtcd started"),
          "ingestd and rtcd are started once webd and recorderd are linked")
    with open(f"/proc/{st['webd']['pid']}/maps") as f:
        check("libcurl" not in f.read(), "webd without a webhook maps no libcurl")

    # 1b. webd restarts behind the same socket.
    k.expect_restarts("webd")
    probe = Prober(port)
    os.kill(st["webd"]["pid"], signal.SIGKILL)
    probe.start()
    pid0 = st["webd"]["pid"]
    answered = probe.until(lambda: (k.status() or {}).get("webd", {}).get("pid") not in (None, 0, pid0)
                           and healthz_answers(port) and probe.attempts > 10, 30)
    check(answered and probe.refused == 0 and probe.attempts > 10,
          f"while webd restarts no connection is refused ({probe.refused} of {probe.attempts}; the new webd "
          f"answers: {answered})")

    # 3. No FFmpeg in ingestd.
    check(wait_for(lambda: (kp.cameras(k) or {}).get("c1", {}).get("streams", [{}])[0].get("state") == "streaming",
                   20, 0.2), "the Baichuan camera streams")
    ing = k.status()["ingestd"]["pid"]
    check(not ffmpeg_mapped(ing), f"ingestd with a Baichuan camera maps no FFmpeg library ({ffmpeg_mapped(ing)})")
    rc, out, err = k.ctl("camera", "test", "rtsp://127.0.0.1:1/none")
    check(rc == 1 and "rtsp://127.0.0.1:1/none" in err, f"the rtsp:// camera test answers ({err.strip()})")
    mapped = ffmpeg_mapped(ing)
    check(not mapped, f"the rtsp:// test maps no FFmpeg library: ingestd's RTSP client is its own ({mapped})")
    check(k.status()["ingestd"]["pid"] == ing, "ingestd did not restart")
    cam.kill()


if __name__ == "__main__":
    run(test)
