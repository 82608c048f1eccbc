"""rtsps:// (RTSP over TLS, RFC 7826 22.14) with ingestd's own client (decision 0030): a
TLS relay in this test (Python's ssl module, OpenSSL underneath, a self-signed
certificate made for the run as cameras have) terminates TLS in front of the test
camera's RTSP port. ingestd streams the camera's H.264 over rtsps:// with digest
authentication (every request and reply crosses the TLS connection), records every frame
the camera sent, and maps no FFmpeg library; a wrong password over rtsps:// gives
auth-failed; the recording decodes with `ffmpeg -v error`; no worker restarts."""
import glob
import os
import select
import socket
import ssl
import subprocess
import tempfile
import threading

from kp import TestCamera, cameras, check, free_port, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


class TlsRelay(threading.Thread):
    """Accepts TLS on 127.0.0.1:port and relays each connection's plaintext to the camera."""

    def __init__(self, port, target, cert, key):
        super().__init__(daemon=True)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.create_server(("127.0.0.1", port))
        self.sock.settimeout(0.2)
        self.target, self.stopped, self.handshakes, self.bytes = target, threading.Event(), 0, 0

    def run(self):
        while not self.stopped.is_set():
            try:
                raw, _ = self.sock.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self.relay, args=(raw,), daemon=True).start()

    def relay(self, raw):
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        self.handshakes += 1
        cam = socket.create_connection(self.target)
        try:
            while not self.stopped.is_set():
                r, _, _ = select.select([tls, cam], [], [], 0.2)
                if tls in r or tls.pending():
                    data = tls.recv(65536)
                    if not data:
                        break
                    cam.sendall(data)
                if cam in r:
                    data = cam.recv(65536)
                    if not data:
                        break
                    self.bytes += len(data)
                    tls.sendall(data)
        except (ssl.SSLError, OSError):
            pass
        finally:
            cam.close()
            tls.close()

    def stop(self):
        self.stopped.set()
        self.sock.close()


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtsps-")
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    cam = TestCamera(work, "tls", "h264", "rtsp")
    relay = TlsRelay(free_port(), ("127.0.0.1", cam.port), cert, key)
    relay.start()
    port = relay.sock.getsockname()[1]
    try:
        config = CONFIG
        config += f'[camera "tls"]\nurl = rtsps://{cam.user}:{cam.password}@127.0.0.1:{port}/main\n'
        config += f'[camera "tls-wrong"]\nurl = rtsps://{cam.user}:nope@127.0.0.1:{port}/main\n'
        kp = make(config=config)
        kp.wait_running()

        c = wait_for(lambda: (lambda c: c if c and c["tls"]["state"] == "streaming" else None)(cameras(kp)), 15.0, 0.2)
        check(c is not None, f"tls streaming within 15 s: {cameras(kp)}")
        w = wait_for(lambda: (lambda c: c if c and c["tls-wrong"]["state"] == "auth-failed" else None)(cameras(kp)),
                     15.0, 0.2)
        check(w is not None, f"a wrong password over rtsps://: auth-failed ({cameras(kp)['tls-wrong']})")
        check(relay.handshakes >= 2 and relay.bytes > 100000,
              f"the media crossed TLS ({relay.handshakes} handshakes, {relay.bytes} bytes relayed)")
        ing = kp.status()["ingestd"]["pid"]
        with open(f"/proc/{ing}/maps") as f:
            maps = f.read()
        check("libavformat" not in maps and "libavcodec" not in maps, "ingestd reads rtsps:// without FFmpeg")
        wait_for(lambda: None, 3.0, 0.5)
        sent = cam.pause()["rtsp"]["main"]["frames_sent"]

        def settled():
            cc = cameras(kp)
            return cc if cc["tls"]["streams"][0]["recorded_frames"] >= sent else None
        final = wait_for(settled, 8.0, 0.2) or cameras(kp)
        s = final["tls"]["streams"][0]
        check(sent > 50 and s["recorded_frames"] == sent and s["recorded_gaps"] == 0 and s["reconnects"] == 0,
              f"tls: recorderd received {s['recorded_frames']} of {sent} frames, no gap, no reconnect ({s})")
        check(kp.stop() is not None, "keeppeekd stops")
        files = sorted(glob.glob(os.path.join(kp.data, "recordings", "tls", "main", "*.mp4")))
        check(files, "tls: recorded files")
        for f in files:
            r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", f, "-f", "null", "-"],
                               capture_output=True, text=True)
            check(r.returncode == 0 and r.stderr == "", f"{f}: ffmpeg -v error is clean ({r.stderr.strip()[:300]!r})")
    finally:
        relay.stop()
        cam.kill()


run(test)
