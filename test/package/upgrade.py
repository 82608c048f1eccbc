#!/usr/bin/env python3
"""The part of scripts/package-test that runs inside its chroot, as root, against the
installed package (docs/packaging.md). Standard library only; loopback only.

  upgrade.py before STATE   the older package is installed: one test camera on a loopback
                            port, an edited /etc/keeppeek/keeppeek.conf, keeppeekd started as
                            the unit does (without systemd), ~20 s recorded, a user, two
                            tokens, two events with JPEGs; what exists is written to STATE;
                            keeppeekd stopped.
  upgrade.py after STATE    the newer package is installed: everything in STATE is still
                            there (recording rows and files, events and their JPEGs byte for
                            byte, the user signs in, the tokens work, the edited
                            configuration), and recording goes on.

Each check prints "ok - ..." or "FAIL - ..."; the counts go to STATE.PHASE.counts
("PASSED FAILED"). Exits 1 when a check failed, 2 when the phase could not run to the end."""
import base64
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

CONF = "/etc/keeppeek/keeppeek.conf"
DATA = "/var/lib/keeppeek"
FIXTURES = "/usr/share/keeppeek/fixtures"
CAMERA = "pt-cam"
CAM_PASSWORD = "pt-cam-pass"
USER, USER_PASSWORD = "pt-user", "pt-user-password-1"
MAX_DAYS = "21"  # the edited value (the shipped one is 30)
WORKERS = ("ingestd", "recorderd", "webd", "rtcd")

# Two small JPEGs (96x64, ffmpeg testsrc2 and smptebars), different so that each event's
# snapshot is told apart from the other's.
JPEG_A = base64.b64decode(
    "/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgKCgsKCw0NDQ0NDRAPEBAQEBAQEBAQEBASEhIVFRUSEhIQEBISFBQV"
    "FRcXFxUVFRUXFxkZGR4eHBwjIyQrKzP/xACsAAACAwEBAQEAAAAAAAAAAAAABQcDBAYBAggBAAIDAQEAAAAAAAAAAAAAAAUGBwgEAwIQAAIABQEE"
    "BggDCAMBAAAAAAIBEgAREwMEMRQhBSJRFUFCM6NiwYEy0qIGI2FUstE08BZD03FTcoIkEQACAAQDBAUIBgsBAQAAAAABAgASEQMEMSEFMhMiM0GB"
    "UhRTcpFjYVEWFZIGYtOisbLRwUKDglTw8XNxJST/wAARCABAAGADASIAAhEAAxEA/9oADAMBAAIRAxEAPwCLiesy6nJiwcYRjdYEIChTIiM6CIrr"
    "Jpd06ng5pHbTqUF3Zhgt0rHcrbgp4oqV4bZY6UgLtHBDdPJupjhqxLMOIosgi13w9y6XUnSXwnj7P3O3TN526ROO3fuW4tsdvw+ZTjDIvau2b+Nv"
    "TNb5Q/IjniSLcCsWBJHKN3RVGm9DjJdwt28qYm6tGesrMoYo7AJQV1OY1J10EIM/NOcaYkOXLC2kS6GAkQvYxIRaa/NOfMPNucagmOPNE0LJ9DAI"
    "iI7SIiBCKXW2lO7WFAtBiCHT5APIcJuqwXMqLHG2nsXFxcabVNOlcY8xxHDqMuQ8RwAVN4WLKyyWySW0atQqrXwqQ44XDm8PZr5i9+WalKUpzb3b"
    "1wiPsXBLfkFu3Ln0aVrwp5Ky1mm5NzsrpD7t/wC5LlveOMFytvSwQUrHHbgh9aKleG2acv3L9wYCQnqqNpEvwtM0QvYxIcTTT605+llxPQ7o8dM3"
    "nbpE47d65bipWO3xh8ynGGVupOFaHEEODJjPIcBOthZMiLHG2nsXFouKW1TiSzYZqHCYfNh0SZAEh+vlJ0yI9sMVyzbVKrdY8qnPJiQDboQOdRqa"
    "kHTVREe6cNVqjYYlE0JGVYBERFVZERUERXWTS7p07lzC9Zg6Vu9WLHbtUrdu1tQU8cUNeFay60J3B5tgyQavNlyYclvGVFqlhzkea0QpfENWKFRN"
    "cRHhL+5h7J7Ps/8A0fxG4Rlcs71etR7Y7PGHzacYZkXEbf2lauSrcukT206RzRWRWN6puKeGpJU1VV01cZRmtYGy6VJpys2WZViBb3WEzAV0JOu6"
    "Y53PrOZaYkOU4WxEx6OIhISVUQkKYkn1ptSYNZzLUkxxHE0JGXRxCIiKqyIiSEUuttKWevGPFoNKAQZYszsRVLGs+VPEBE++GnxUa8SU16DHbw8w"
    "0pY7mVlge7oqFkWDKyygJKvGGvw1J+FOc42viTh5+I89aU4jUl4snEpPu0596lP3uuCiY6+1/hm/fAoKHiPQsbcxt10owPLlWvVXSG3av3Bct3ul"
    "BdrBpoLdKx3IYIPWipXhtk7V+4Llu90oLtYNNBbpWO5DBB60VK8Ns7Y8fZ+52/xvO3SJx279y3Ftjt+HzKcYZI8fZ+52/wAbzt0icdu/ctxbY7fh"
    "8ynGGRHzbF+49Jw8zueX6Tc/D6yFT4e2Z5O10XE6NN/+n6HpPx+riOtaTWpyU9X9lT5j1CTo1Rde32T5rv4nJ/5/ZU4Z9Ioa2le6Pyhxx6K2LxNf"
    "LXf0zD9ki2TQ5pn2rniFpCI16caj0QKbJsstbHX+f9z8sWO2duHdSQKivu6443LTpmp/7mPSIx5cQE2TXF/m/wB8rCxw99ZcZJW5JYLTH3x2ssff"
    "GnHlT7+E2ESalUM6hbny1kTVgyiJccOQVaoPLkTX3EenWG834cGTUExxjE0LJ8UKER2kRE0IpdbaUr1nVeKp+f8AKnpOV5MeXT6zCldMrBrFVi8o"
    "48jIxF9cPcul1KRuJuNZtlgKmqjXIAsAWOo0UGp1GWYgTawNw3Qt1WVZWNRqDRSQtQGALEBRoTU5GEmr0mfLnMhCqdKOorwpd7nJuOp/4/qD5p6u"
    "SV1cU6gCi6CnX+uJvu7Dwt249xnvVdmY0ZKVY105Iydhcz/T+kxfPJ2FzP8AT+kxfPMlajw+/wBkmn8Xu9s8ONf8D4ua15kjd+Te4nblFbfEYr5b"
    "46az/r4b+Uk3uN27scv/AEpzz9H6bT/5ZP6U55+j9Np/8sz/ACSlfEGL7lj6L/eRIHCX2/32R+L1fFQrYv8ArPpIy8NPep1STbb4ewffv/ST7uAM"
    "/sWPD5dq8NI8UMVadIHs/wBE5vDl+qLZj+oPmmRprtjWKnH3yG+WYYjU3q+cv5SftiTx9XbSNVbrlajQ0mAp3gKHX7IjhXyzWr+19YfNNL5fq1/b"
    "+oPmmYc/JTQN48lwuFAhQ14rvZ0VFxnmtXpM+lhvBBFWHpC60pX4W+tSo7SspaVmtFmA6z/gRi2Ve+re12CYTaXEcsyraLravMVWYy2r1pLjALrM"
    "qldDroYVSSSSgxJsd/qPD7/ZJp/F7vbOuSRfj/8A4fCcP+eb7c+7L2ZxTD5n/wCb4HhfxJ/WT7svZvRJkkkkx9EyR+OpJJJv/CvEmSSSSqRP8SVJ"
    "JJKtFFI//9k=")
JPEG_B = base64.b64decode(
    "/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgKCgsKCw0NDQ0NDRAPEBAQEBAQEBAQEBASEhIVFRUSEhIQEBIS"
    "FBQVFRcXFxUVFRUXFxkZGR4eHBwjIyQrKzP/xACmAAEAAwEBAQEAAAAAAAAAAAAFBwYDAgAIBAEAAgMBAQEAAAAAAAAAAAAABwYEBQMAAgEQ"
    "AAEBAwgECwcFAQAAAAAAAAABAwQCgbHBQhIzEQUxMhOColFThFSjBhTT0ha0RcMhIjYHQxVzQSMkEQAABAIDDQYFBQEAAAAAAAAAAgEDBBEG"
    "EgVRs3OyQYM1NDMhEzIxFIFxIrHDRIRFclLBQvCCYmP/wAARCABAAGADASIAAhEAAxEA/9oADAMBAAIRAxEAPwC/mTXUWSc1Mmuosk5DjdUi"
    "cC7iKPReZPFAeGvtTeoEg19qb1Al0e0rDZ29HEG3dGRGbvpAaHtrxZJhAPbXiyTD5SDVCYYuIcDFrm7hiV4sJXjSiPxmY9wFqgv1D5f3Rk2u"
    "1knDhFtdrJOHGlINbJgS45wWmuXvBz7U3qA0Sfam9QGj5R7RUNnb6cDG3dJxGbvRB9UmTXUWSc1Mmuosk4M43VInAu4iiKXmTxQHhr7U3qBI"
    "Nfam9QJdHtKw2dvRxBt3RkRm76QGh7a8WSYQD214skw+Ug1QmGLiHAxa5u4YleLCV40oj8ZmPcBaoL9Q+X90ZNrtZJw4RbXayThxpSDWyYEu"
    "OcFprl7wc+1N6gNEn2pvUBo+Ue0VDZ2+nAxt3ScRm70QfVJk11FknIF9V550zqXfwjJr2rzywv8A2cX6Lvx/xCvG0fi+yRPnY2Lv7j/gv/MV"
    "5XS1k69U/nUTeGvtTeoIU9V550vqXfwhjLs8zN92u3eLdizZ/wA2UOFq1jqwJxJpEWxLEiWLRYcMdlUTidDHnvbMmUiDSKhHLUYPCMqUrjsq"
    "quKqESoZDrNSoZehVlu6iQQ9teLJMDd+eeU4MHlKhmGcZgzemkMLbBEs4JYZrURf7gG+3IB1yFIiGJtSrvVfxP8A5C0/RC0YIqOOOwioq1fK"
    "d1Vms1yspcEhFeKd++Zly/VsvIS13F25PhR+Ywo80aB7TxJGr8KVTfy15zmiXRZ2RaDNGON2wrjnaalTgIU0uFWrVuIZuU66SlPKKi2u1knD"
    "iy50wZO2XN2rKGzHDs8FxVcMWkKL8olVNCkZd+eeU4MPlPtsEWJiCHJuRG0L5uvMZck7ofYClUBFtGORqKREOpfMVtFnJFyOrdC77U3qA0vv"
    "Y9wdc67735nt9jsNn9UbOzb2lq6igxxsppx0fIkL0pkfQ+uePFGGy7VYgYJphwrqmJXmpUKpfMcxt0zovRbgXLScSMjHXyTQp6kkNuXcQpd8"
    "pp1S6IaPHjxHCoPpvsV9uOPOPaWpdCl9ivtxx5x7S1LoUbm0P9y+ov2tmT7S+ghD8oe6eefAIQJv/KHunnnwCEBhg9XJ/bGUWrOzTv8AUfne"
    "LqKSdAYZeLqKSdAYrLQ2xfsT1URn+ZPD9VHjqHScnUOkrRHHotJydRaTk4cP/9k=")

passed = failed = 0


def log(msg):
    print(msg, flush=True)


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        log(f"ok - {what}")
    else:
        failed += 1
        log(f"FAIL - {what}" + (f": {detail}" if detail else ""))
    return bool(cond)


class Abort(Exception):
    pass


def need(cond, what, detail=""):
    """A check the rest of the phase cannot do without."""
    if not check(cond, what, detail):
        raise Abort(what)


def wait_for(pred, timeout, step=0.25):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def ctl(*args, stdin=None):
    r = subprocess.run(["keeppeekctl", *args], input=stdin, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def ctl_json(*args):
    rc, out, err = ctl(*args, "--json")
    if rc != 0:
        return None
    try:
        return json.loads(out)
    except ValueError:
        return None


def installed_version():
    return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "keeppeek"],
                          capture_output=True, text=True).stdout.strip()


class Web:
    def __init__(self, port):
        self.port = port

    def req(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, str):
                body = body.encode()
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            c.close()

    def get_json(self, path, token):
        st, _, b = self.req("GET", path, headers={"Authorization": "Bearer " + token})
        try:
            return st, json.loads(b)
        except ValueError:
            return st, b[:300]


class Camera:
    """keeppeek-test-camera from the installed package, Baichuan on a loopback port."""

    def __init__(self, port, logpath):
        self.log = open(logpath, "a")
        self.proc = subprocess.Popen(
            ["keeppeek-test-camera", "--main", f"{FIXTURES}/main.h264", "--sub", f"{FIXTURES}/sub.h264",
             "--host", "127.0.0.1", "--baichuan-port", str(port), "--password", CAM_PASSWORD,
             "--encryption", "aes"],
            stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        need(line.strip() == "ready", f"test camera on 127.0.0.1:{port} ready", repr(line))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Daemon:
    """keeppeekd as the unit starts it (ExecStart), without systemd."""

    def __init__(self, logpath):
        os.makedirs("/run/keeppeek", mode=0o755, exist_ok=True)  # the unit's RuntimeDirectory=
        self.logpath = logpath
        self.log = open(logpath, "a")
        self.proc = subprocess.Popen(["/usr/bin/keeppeekd", "-c", CONF], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def wait_running(self, timeout=60):
        def ready():
            if self.proc.poll() is not None:
                return "exited"
            st = ctl_json("status")
            if not st:
                return None
            ws = {w["name"]: w for w in st.get("workers", [])}
            if any(ws.get(n, {}).get("state") != "running" for n in WORKERS):
                return None
            if any(l.get("state") != "up" for n in WORKERS for l in ws[n].get("links", [])):
                return None
            return "running"
        r = wait_for(ready, timeout)
        need(r == "running", "keeppeekd runs its four workers",
             f"{r or 'timeout'}; status: {ctl('status')[1]}\n{self.text()[-3000:]}")

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return False
        finally:
            self.log.close()
        # the workers are gone too
        return wait_for(lambda: not keeppeek_pids(), 15)


def keeppeek_pids():
    """Processes running keeppeekd or a worker (also a binary replaced by the upgrade)."""
    pids = []
    for p in os.listdir("/proc"):
        try:
            exe = os.readlink(f"/proc/{p}/exe") if p.isdigit() else ""
        except OSError:
            continue
        if exe.startswith(("/usr/libexec/keeppeek/", "/usr/bin/keeppeekd")):
            pids.append(int(p))
    return pids


def wait_streaming(timeout=60):
    def streaming():
        cs = ctl_json("cameras")
        if not cs:
            return None
        for c in cs.get("cameras", []):
            if c["name"] == CAMERA and c.get("streams") and all(s["state"] == "streaming" for s in c["streams"]):
                return True
        return None
    need(wait_for(streaming, timeout), f"camera {CAMERA} streaming (main and sub)", ctl("cameras")[1])


def recordings(web, token):
    st, j = web.get_json(f"/api/v1/recordings?from=0&to={int(time.time() * 1000) + 86400000}&limit=10000", token)
    return j["recordings"] if st == 200 and isinstance(j, dict) else None


def events(web, token):
    st, j = web.get_json(f"/api/v1/events?camera={CAMERA}&limit=500", token)
    return j.get("events") if st == 200 and isinstance(j, dict) else None


def media_files():
    """The recordings and the events' JPEGs (data_dir/recordings/, events/*.jpg; not the
    thumbnails, a cache): relative path -> [size, sha256]."""
    out = {}
    for d, _, files in [*os.walk(os.path.join(DATA, "recordings")), *os.walk(os.path.join(DATA, "events"))]:
        for f in files:
            if "/events" in d and (not f.endswith(".jpg") or f.endswith(".thumb.jpg")):
                continue
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                b = fh.read()
            out[os.path.relpath(p, DATA)] = [len(b), sha256(b)]
    return out


def data_tree():
    """Every path under data_dir (for the log), with sizes."""
    out = []
    for d, _, files in os.walk(DATA):
        for f in files:
            p = os.path.join(d, f)
            out.append(f"{os.path.relpath(p, DATA)} {os.path.getsize(p)}")
    return sorted(out)


def login(web, user, password):
    st, hdrs, body = web.req("POST", "/api/v1/login", json.dumps({"user": user, "password": password}),
                             {"Content-Type": "application/json"})
    cookie = "; ".join(v.split(";", 1)[0] for k, v in hdrs if k.lower() == "set-cookie")
    return st, body, cookie


def session(web, headers):
    st, _, b = web.req("GET", "/api/v1/session", headers=headers)
    try:
        return st, json.loads(b)
    except ValueError:
        return st, b[:200]


def edit_config(web_port, cam_port):
    with open(CONF) as f:
        text = f.read()
    orig = text
    text = re.sub(r"(?m)^listen = .*$", f"listen = 127.0.0.1:{web_port}", text, count=1)
    text = re.sub(r"(?m)^max_days = \d+$", f"max_days = {MAX_DAYS}", text, count=1)
    # rtcd offers loopback candidates only, as every test does
    text = text.replace("[rtc]\n", "[rtc]\naddresses = 127.0.0.1\n", 1)
    text += (f"\n; added by scripts/package-test\n[camera \"{CAMERA}\"]\n"
             f"url = baichuan://admin:{CAM_PASSWORD}@127.0.0.1:{cam_port}/?channel=0\n"
             "rollover_secs = 5\n")
    need(text != orig and f"max_days = {MAX_DAYS}\n" in text and f"127.0.0.1:{web_port}" in text,
         "the shipped configuration has the keys to edit (listen, max_days, [rtc])")
    with open(CONF, "w") as f:
        f.write(text)
    return text


def before(state_path):
    vers = installed_version()
    log(f"# before the upgrade: keeppeek {vers} installed")
    web_port, cam_port = free_port(), free_port()
    while cam_port == web_port:
        cam_port = free_port()
    conf = edit_config(web_port, cam_port)
    rc, out, err = ctl("config", "check", CONF)
    need(rc == 0, "keeppeekctl config check accepts the edited configuration", out + err)

    cam = Camera(cam_port, "/var/log/pt-camera-before.log")
    kp = Daemon("/var/log/pt-keeppeekd-before.log")
    try:
        kp.wait_running()
        wait_streaming()
        t_stream = time.monotonic()
        web = Web(web_port)

        r = subprocess.run(["keeppeekctl", "user", "add", USER, "--role", "viewer"], input=USER_PASSWORD + "\n",
                           capture_output=True, text=True, timeout=60)
        need(r.returncode == 0, f"keeppeekctl user add {USER}", r.stderr)
        rc, admin_tok, err = ctl("token", "create", "--name", "pt-admin", "--role", "admin")
        need(rc == 0 and admin_tok.strip().startswith("kp_"), "keeppeekctl token create pt-admin (admin)", err)
        admin_tok = admin_tok.strip()
        rc, viewer_tok, err = ctl("token", "create", "--name", "pt-viewer", "--role", "viewer")
        need(rc == 0 and viewer_tok.strip().startswith("kp_"), "keeppeekctl token create pt-viewer (viewer)", err)
        viewer_tok = viewer_tok.strip()

        now = int(time.time() * 1000)
        evs = {}
        for i, (eid, jpeg, label) in enumerate((("pt-ev-1", JPEG_A, "person"), ("pt-ev-2", JPEG_B, "car"))):
            ev = {"id": eid, "revision": 1, "camera": CAMERA, "stream": "main", "start_ms": now - 3000 + i * 1000,
                  "end_ms": now - 1000 + i * 1000, "labels": [{"name": label, "score": 0.875}],
                  "attributes": {"zone": "porch", "by": "package-test"},
                  "jpeg_base64": base64.b64encode(jpeg).decode()}
            st, _, b = web.req("POST", "/api/v1/events", json.dumps(ev),
                               {"Authorization": "Bearer " + admin_tok, "Content-Type": "application/json"})
            need(st == 200, f"POST /api/v1/events {eid} with a JPEG", f"{st} {b[:300]!r}")
            st, _, snap = web.req("GET", f"/api/v1/events/{eid}/snapshot",
                                  headers={"Authorization": "Bearer " + admin_tok})
            check(st == 200 and snap == jpeg, f"{eid}'s snapshot reads back", f"{st}, {len(snap)} bytes")
            evs[eid] = sha256(jpeg)

        st, s = session(web, {"Authorization": "Bearer " + viewer_tok})
        check(st == 200, "the viewer token is accepted", f"{st} {s}")
        st, body, cookie = login(web, USER, USER_PASSWORD)
        check(st == 200 and "kp_session=" in cookie, f"{USER} signs in", f"{st} {body[:200]!r}")

        # ~20 s of recording: with rollover_secs = 5 some files are closed meanwhile
        left = 20 - (time.monotonic() - t_stream)
        if left > 0:
            time.sleep(left)
        recs = recordings(web, admin_tok)
        need(recs is not None, "GET /api/v1/recordings answers")
        closed = [r for r in recs if not r["open"] and r["camera"] == CAMERA]
        check(len(closed) >= 2 and {r["stream"] for r in closed} == {"main", "sub"},
              "after 20 s, closed recording files of both streams", f"{len(recs)} rows: {recs}")
        ev_list = events(web, admin_tok)
        check(ev_list is not None and {e["id"] for e in ev_list} >= set(evs), "both events are listed", str(ev_list))
        users = ctl_json("user", "list")
        tokens = ctl_json("token", "list")
        check(users is not None and tokens is not None, "keeppeekctl user list / token list --json")
    finally:
        stopped = kp.stop()
        cam.stop()
    check(stopped, "keeppeekd and its workers stop on SIGTERM")
    restarts = re.findall(r"(?m)^.*\(restart \d+\).*$", kp.text())
    check(not restarts, "no worker restarted", "\n".join(restarts[:5]))
    files = media_files()
    nrec = len([p for p in files if p.startswith("recordings/")])
    check(nrec >= len(recs), "every recording row has its file", f"{nrec} files for {len(recs)} rows")
    check(len(files) - nrec >= 2, "both events' JPEGs are files in data_dir/events", str(sorted(files)))
    log("# data_dir before the upgrade:\n  " + "\n  ".join(data_tree()))
    with open(CONF, "rb") as f:
        conf_sha = sha256(f.read())
    state = {"version": vers, "web_port": web_port, "cam_port": cam_port, "admin_token": admin_tok,
             "viewer_token": viewer_tok, "recordings": recs, "events": ev_list, "event_jpegs": evs,
             "users": users, "tokens": tokens, "files": files, "conf_sha256": conf_sha, "conf": conf}
    with open(state_path, "w") as f:
        json.dump(state, f, indent=1)


def after(state_path):
    with open(state_path) as f:
        S = json.load(f)
    vers = installed_version()
    log(f"# after the upgrade: keeppeek {S['version']} -> {vers}")
    with open(CONF, "rb") as f:
        conf = f.read()
    check(sha256(conf) == S["conf_sha256"], "the edited /etc/keeppeek/keeppeek.conf is kept byte for byte")
    check(re.search(rb"(?m)^max_days = " + MAX_DAYS.encode() + rb"$", conf), f"max_days = {MAX_DAYS} still there")
    left = [f for f in os.listdir("/etc/keeppeek") if re.search(r"\.dpkg-(new|dist|old|tmp)$", f)]
    check(not left, "no .dpkg-new/.dpkg-dist left in /etc/keeppeek", str(left))
    st = os.stat(CONF)
    check(st.st_mode & 0o077 == 0, "keeppeek.conf is readable by root only", oct(st.st_mode))

    files = media_files()
    lost = {p: v for p, v in S["files"].items() if files.get(p) != v}
    check(not lost, f"all {len(S['files'])} recording and event JPEG files are there, unchanged", str(lost))

    check(port_free(S["cam_port"]) and port_free(S["web_port"]), "the loopback ports used before are free again")
    cam = Camera(S["cam_port"], "/var/log/pt-camera-after.log")
    kp = Daemon("/var/log/pt-keeppeekd-after.log")
    try:
        kp.wait_running()
        t_start = time.monotonic()
        wait_streaming()
        web = Web(S["web_port"])
        admin = S["admin_token"]
        st, _, b = web.req("GET", "/healthz")
        check(st == 200, "GET /healthz: 200", f"{st} {b[:300]!r}")

        # the recording rows: every one is still there, the closed ones as they were; the
        # files open at the stop were closed by it
        recs = recordings(web, admin)
        need(recs is not None, "GET /api/v1/recordings answers after the upgrade")
        now = {r["id"]: r for r in recs}
        missing, changed = [], []
        for r in S["recordings"]:
            n = now.get(r["id"])
            if n is None:
                missing.append(r)
            elif not r["open"] and n != r:
                changed.append((r, n))
            elif r["open"] and (n["open"] or n["start_ms"] != r["start_ms"] or n["bytes"] < r["bytes"]):
                changed.append((r, n))
        check(not missing, f"all {len(S['recordings'])} recording rows are listed", f"missing {missing}")
        # also those opened after the listing before the stop: one row per file
        starts = {(r["camera"], r["stream"], r["start_ms"]) for r in recs}
        rowless = [p for p in S["files"] if p.startswith("recordings/") and
                   tuple(p.split("/")[1:3]) + (int(p.rsplit("/", 1)[1].split(".")[0]),) not in starts]
        check(not rowless, "every recording file of before has its row", str(rowless))
        check(not changed, "the recording rows are unchanged (the open ones closed)", f"{changed}")

        # events and their JPEGs
        ev_now = events(web, admin)
        check(ev_now is not None, "GET /api/v1/events answers after the upgrade")
        ev_now = {e["id"]: e for e in ev_now or []}
        for e in S["events"] or []:
            if e["id"] not in S["event_jpegs"]:
                continue  # the camera's own (motion) events are not this test's
            n = ev_now.get(e["id"])
            same = n is not None and all(n.get(k) == e.get(k) for k in
                                         ("revision", "camera", "stream", "start_ms", "end_ms", "labels", "attributes"))
            check(same, f"event {e['id']} is found, as published", f"before {e}, after {n}")
            st, _, snap = web.req("GET", f"/api/v1/events/{e['id']}/snapshot",
                                  headers={"Authorization": "Bearer " + admin})
            check(st == 200 and sha256(snap) == S["event_jpegs"][e["id"]],
                  f"event {e['id']}'s snapshot: the same JPEG bytes", f"{st}, {len(snap)} bytes")
        check(set(S["event_jpegs"]) <= {e["id"] for e in S["events"] or []}, "both events were listed before")

        # users and tokens
        check(ctl_json("user", "list") == S["users"], "keeppeekctl user list: the same users", str(ctl_json("user", "list")))
        check(ctl_json("token", "list") == S["tokens"], "keeppeekctl token list: the same tokens",
              str(ctl_json("token", "list")))
        st, s = session(web, {"Authorization": "Bearer " + admin})
        check(st == 200 and isinstance(s, dict) and s.get("role") == "admin" and s.get("via_token"),
              "the admin token still works", f"{st} {s}")
        st, s = session(web, {"Authorization": "Bearer " + S["viewer_token"]})
        check(st == 200 and isinstance(s, dict) and s.get("role") == "viewer", "the viewer token still works",
              f"{st} {s}")
        st, body, cookie = login(web, USER, USER_PASSWORD)
        check(st == 200 and "kp_session=" in cookie, f"{USER} still signs in with the password", f"{st} {body[:200]!r}")
        if st == 200:
            st, s = session(web, {"Cookie": cookie})
            check(st == 200 and isinstance(s, dict) and s.get("user") == USER and s.get("role") == "viewer",
                  f"{USER}'s session is a viewer's", f"{st} {s}")
        st, body, _ = login(web, USER, "not-the-password")
        check(st == 401, "a wrong password is still refused", f"{st}")

        # recording goes on: a new file of each stream, closed after its 5 s
        def new_closed():
            rs = recordings(web, admin) or []
            got = {r["stream"] for r in rs if r["id"] not in now and not r["open"] and r["bytes"] > 0
                   and r["camera"] == CAMERA}
            return got == {"main", "sub"}
        check(wait_for(new_closed, 60, 1), "recording goes on: new closed files of both streams",
              str(recordings(web, admin)))
        new_files = [p for p in set(media_files()) - set(S["files"]) if p.startswith("recordings/")]
        check(len(new_files) >= 2, "new recording files on disk", str(sorted(new_files)))
        rc, out, err = ctl("check")
        check(rc == 0, "keeppeekctl check: the catalog and the files agree", (out + err)[-2000:])
        log(f"# {time.monotonic() - t_start:.0f} s after the start")
    finally:
        stopped = kp.stop()
        cam.stop()
        text = kp.text()
        notes = [l for l in text.splitlines() if re.search(r"catalog|schema|migrat|error|warn", l, re.I)]
        if notes:
            log("# keeppeekd after the upgrade said:\n  " + "\n  ".join(notes[-30:]))
    check(stopped, "keeppeekd and its workers stop on SIGTERM after the upgrade")
    restarts = re.findall(r"(?m)^.*\(restart \d+\).*$", text)
    check(not restarts, "no worker restarted after the upgrade", "\n".join(restarts[:5]))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("before", "after"):
        print(__doc__, file=sys.stderr)
        return 2
    phase, state = sys.argv[1], sys.argv[2]
    rc = 0
    try:
        (before if phase == "before" else after)(state)
    except Abort as e:
        log(f"# {phase}: stopped at: {e}")
        rc = 2
    except Exception as e:  # noqa: BLE001 - a crash of the driver is a failure, counted
        global failed
        failed += 1
        log(f"FAIL - the {phase} phase crashed: {type(e).__name__}: {e}")
        rc = 2
    with open(f"{state}.{phase}.counts", "w") as f:
        f.write(f"{passed} {failed}\n")
    log(f"# {phase}: {passed} passed, {failed} failed")
    return rc or (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
