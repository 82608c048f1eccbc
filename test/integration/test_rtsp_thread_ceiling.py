"""ingestd at its camera ceiling: 128 RTSP cameras (KP_MAX_CAMERAS) with main and sub
streams, 256 reading threads at once, all inside ingestd's own limits. The cameras' server
accepts every connection and never answers (a camera that hangs mid-handshake), so every
thread stays in its OPTIONS request. Every stream shows `connecting`, none `cannot start`
(pthread_create refused by RLIMIT_NPROC or RLIMIT_AS, as Debian 13's CI saw at 22 cameras
before the stacks and arenas were bounded), ingestd's address space stays under half its
1 GiB limit, and no worker restarts.

One past the ceiling: a 129th camera makes the configuration invalid and keeppeekd refuses
it at a reload, naming the ceiling, and keeps the 128 it has."""
import os
import socket
import threading

from kp import cameras, check, proc_status, run, sanitized, wait_for

CAMERAS = 128  # KP_MAX_CAMERAS (common/kp_limits.h)
AS_LIMIT_KIB = 1024 * 1024  # ingestd's RLIMIT_AS (ingestd/main.c)

HEAD = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def camera(i, port):
    return (f'[camera "c{i:03d}"]\nurl = rtsp://127.0.0.1:{port}/c{i}/main\n'
            f"sub_url = rtsp://127.0.0.1:{port}/c{i}/sub\nstreams = main, sub\nrecord = off\n")


class Silent:
    """Accepts connections and holds them without a byte of answer."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.held.append(c)

    def count(self):
        with self.lock:
            return len(self.held)

    def close(self):
        self.sock.close()
        with self.lock:
            for c in self.held:
                c.close()


def test(make):
    srv = Silent()
    try:
        config = HEAD + "".join(camera(i, srv.port) for i in range(CAMERAS))
        kp = make(config=config)
        kp.wait_running()
        pid = kp.status()["ingestd"]["pid"]
        check(wait_for(lambda: srv.count() >= 2 * CAMERAS, 30, 0.2),
              f"all {2 * CAMERAS} streams connected to the silent server ({srv.count()})")
        threads = len(os.listdir(f"/proc/{pid}/task"))
        check(threads >= 2 * CAMERAS, f"ingestd runs a thread per stream: {threads} threads")
        c = cameras(kp)
        states = {s["state"] for cam in c.values() for s in cam["streams"]}
        check(len(c) == CAMERAS and states == {"connecting"},
              f"{len(c)} cameras, every stream connecting: {states}")
        peak = int(proc_status(pid)["VmPeak"].split()[0])
        if sanitized():
            print(f"note: sanitizer build (its shadow memory, no RLIMIT_AS): VmPeak {peak // 1024} MiB not checked")
        else:
            check(peak < AS_LIMIT_KIB // 2,
                  f"ingestd's address space peaked at {peak // 1024} MiB of its {AS_LIMIT_KIB // 1024} MiB "
                  f"limit with {threads} threads (under half)")
        log = kp.log_text()
        check("cannot start" not in log, "no stream thread was refused")

        with open(kp.config_path, "a") as f:
            f.write(camera(CAMERAS, srv.port))
        rc, out, err = kp.ctl("reload")
        check(rc != 0 and "more than 128 cameras" in err + out,
              f"a 129th camera is refused at reload, naming the ceiling: {(err + out).strip()}")
        check(len(cameras(kp) or {}) == CAMERAS, "the 128 cameras are kept")
        check(kp.status()["ingestd"]["pid"] == pid and not kp.unexpected_restarts(),
              f"no worker restarted: {kp.unexpected_restarts()}")
    finally:
        srv.close()


if __name__ == "__main__":
    run(test)
