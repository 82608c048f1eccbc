"""The RTSP path against an RTSP server that is not ours: GStreamer's gst-rtsp-server
(Debian's gir1.2-gst-rtsp-server-1.0 through python3-gi) serves the H.264 and H.265
fixtures with digest authentication; ingestd streams both over TCP and the H.264 one
also over UDP (transport = udp: GStreamer's server sends to our client_port pair from
its server_port pair, RFC 2326 12.39), and recorderd receives the frames; a wrong
password gives auth-failed."""
import os
import socket
import subprocess
import time

from kp import FIXTURES, cameras, check, free_port, free_port_run, run, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def udp_ports_bound(first, last):
    """Local UDP ports within [first, last] that some socket is bound to (/proc/net/udp, udp6)."""
    ports = set()
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        with open(name) as f:
            for line in f.readlines()[1:]:
                port = int(line.split()[1].rsplit(":", 1)[1], 16)
                if first <= port <= last:
                    ports.add(port)
    return sorted(ports)


def serve(fixture, port):
    # Debian's interpreter: python3-gi is installed for it, not for other pythons on PATH.
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "rtsp_external_server.py"),
                          os.path.join(FIXTURES, fixture), str(port), "--user", "viewer", "--password", "gst-pw"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        p.kill()
        raise AssertionError(f"GStreamer RTSP server did not start: {line!r} {p.stdout.read()[:2000]}")
    return p


def test(make):
    ports = {"h264": free_port(), "h265": free_port()}
    servers = [serve("main.h264", ports["h264"]), serve("main.h265", ports["h265"])]
    try:
        config = CONFIG
        for codec, port in ports.items():
            config += f'[camera "gst-{codec}"]\nurl = rtsp://viewer:gst-pw@127.0.0.1:{port}/stream\n'
        config += f'[camera "gst-udp"]\nurl = rtsp://viewer:gst-pw@127.0.0.1:{ports["h264"]}/stream\n'
        lo = free_port_run(100, socket.SOCK_DGRAM)
        hi = lo + 99
        config += f"transport = udp\nrtp_ports = {lo}-{hi}\n"
        config += f'[camera "gst-wrong"]\nurl = rtsp://viewer:nope@127.0.0.1:{ports["h264"]}/stream\n'
        kp = make(config=config)
        kp.wait_running()

        def streaming():
            c = cameras(kp)
            ok = c and all(c[f"gst-{k}"]["state"] == "streaming" for k in (*ports, "udp"))
            return c if ok else None
        c = wait_for(streaming, 15.0, 0.2)
        check(c is not None, f"both GStreamer streams are streaming: {cameras(kp)}")
        for codec in ports:
            s = c[f"gst-{codec}"]["streams"][0]
            check(s["codec"] == codec and (s["width"], s["height"]) == (1920, 1080),
                  f"gst-{codec}: {s['codec']} {s['width']}x{s['height']}")
        for name, want in (("gst-h264", "tcp"), ("gst-h265", "tcp"), ("gst-udp", "udp")):
            got = c[name]["streams"][0]["transport"]
            check(got == want, f"{name}: RTP over {got!r}, expected {want}")
        bound = udp_ports_bound(lo, hi)
        check(len(bound) == 2 and bound[0] % 2 == 0 and bound[1] == bound[0] + 1,
              f"gst-udp: ingestd receives RTP and RTCP on an even/odd pair of rtp_ports {lo}-{hi}: {bound}")
        time.sleep(4.0)
        c = cameras(kp)
        u = c["gst-udp"]["streams"][0]
        check(u["frames"] >= 75 and u["recorded_frames"] >= u["frames"] - 30 and u["recorded_gaps"] == 0
              and u["rtp_lost_packets"] == 0 and u["reconnects"] == 0,
              f"gst-udp: {u['frames']} frames received over UDP, {u['recorded_frames']} at recorderd, "
              f"{u['rtp_lost_packets']} RTP packets lost, {u['reconnects']} reconnects")
        for codec in ports:
            s = c[f"gst-{codec}"]["streams"][0]
            check(s["frames"] >= 75 and s["recorded_frames"] >= s["frames"] - 30,
                  f"gst-{codec}: {s['frames']} frames received, {s['recorded_frames']} at recorderd")
            check(s["recorded_gaps"] == 0, f"gst-{codec}: no gaps")
        w = wait_for(lambda: (lambda c: c if c and c["gst-wrong"]["state"] == "auth-failed" else None)(cameras(kp)),
                     15.0, 0.2)
        check(w is not None, "wrong password against GStreamer: auth-failed")
    finally:
        for p in servers:
            p.kill()
            p.wait()


run(test)
