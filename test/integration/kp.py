"""Helpers for integration tests: start the real keeppeekd from the build tree in a
private directory, talk to it with the real keeppeekctl, read /proc, and make sure that
nothing is left running afterwards."""
import ctypes
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ["KP_BUILD_ROOT"]
KEEPPEEKD = os.path.join(BUILD, "supervisor", "keeppeekd")
KEEPPEEKCTL = os.path.join(BUILD, "supervisor", "keeppeekctl")
WORKERS = ["ingestd", "recorderd", "webd", "rtcd"]
# Started by keeppeekd only while rtcd has transcode jobs (decision 0014).
ON_DEMAND = ["transcoder", "tierd"]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok   " + msg)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Sanitized builds run two to three times slower: scripts/test stretches every wait of
# these tests (how long a condition may take to become true, not what is checked) by
# KP_TEST_TIME_SCALE, as meson's --timeout-multiplier stretches the tests' own timeouts.
TIME_SCALE = max(1.0, float(os.environ.get("KP_TEST_TIME_SCALE") or 1))


def wait_for(pred, timeout, step=0.02):
    end = time.monotonic() + timeout * TIME_SCALE
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            return v
        time.sleep(step)


def sanitized():
    """True for a build with sanitizers (where RLIMIT_AS is not applied: common/sandbox.c)."""
    with open(os.path.join(BUILD, "meson-info", "intro-buildoptions.json")) as f:
        return any(o["name"] == "b_sanitize" and o["value"] != "none" for o in json.load(f))


def proc_status(pid):
    """/proc/PID/status as a dict, or None once the process is gone (it can go between the
    open and the read, which then fails with ESRCH)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return out


def thread_stacks(pid):
    """{tid: (stack mapping size, guard page below it)} for every thread blocked in a
    system call (the stack pointer is the second to last field of .../syscall)."""
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            a, b = (int(x, 16) for x in line.split()[0].split("-"))
            maps.append((a, b, line.split()[1], line.rstrip()))
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            fields = f.read().split()
        if len(fields) < 3:  # "running": no stack pointer to read
            continue
        sp = int(fields[-2], 16)
        for i, (a, b, perms, line) in enumerate(maps):
            if a <= sp < b:
                guard = i > 0 and maps[i - 1][1] == a and maps[i - 1][2] == "---p"
                out[int(tid)] = (b - a, guard, "[stack]" in line)
    return out


def alive(pid):
    st = proc_status(pid)
    return st is not None and not st.get("State", "").startswith("Z")


class Keeppeek:
    def __init__(self, args=None, config=None, env=None, pass_fds=()):
        self.dir = tempfile.mkdtemp(prefix="kp-it-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        # [web] listen: configs write "listen = 127.0.0.1:{port}"; the demo gets --listen.
        self.web_port = self.port
        self.web_url = f"http://127.0.0.1:{self.port}"
        if config is not None:
            self.config_path = os.path.join(self.dir, "keeppeek.conf")
            with open(self.config_path, "w") as f:
                text = config.format(dir=self.dir, port=self.port)
                if "addresses" not in text:  # tests use loopback only, rtcd's candidates too
                    text += "\n[rtc]\naddresses = 127.0.0.1\n"
                f.write(text)
            self.sock = os.path.join(self.dir, "run", "control.sock")
            cmd = [KEEPPEEKD, "-c", self.config_path]
        else:
            self.sock = os.path.join(self.data, "run", "control.sock")
            cmd = [KEEPPEEKD, "--demo", "--data-dir", self.data, "--listen", f"127.0.0.1:{self.port}"]
        cmd += args or []
        self.log_path = os.path.join(self.dir, "keeppeekd.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir,
                                     env=dict(os.environ, **(env or {})), start_new_session=True,
                                     pass_fds=pass_fds)
        self.known_pids = {self.proc.pid}
        self.allowed_restarts = set()

    def expect_restarts(self, *workers):
        """This test kills or restarts these workers on purpose; any other restart fails it."""
        self.allowed_restarts |= set(workers)

    def unexpected_restarts(self):
        """Workers that restarted without the test asking: from keeppeekd's own log lines
        ("NAME (restart N) ...", "NAME ...; restarting as asked" and a crash while stopping,
        "NAME stopped: killed by signal ..."), which outlive the supervisor."""
        seen = {}
        for m in re.finditer(r"keeppeekd\[\d+\]: \w+: (\w+) (\(restart \d+\) .*|.*; restarting as asked|stopped: killed by signal (?!15 ).*)$",
                             self.log_text(), re.M):
            if m.group(1) in WORKERS + ON_DEMAND and m.group(1) not in self.allowed_restarts:
                seen.setdefault(m.group(1), m.group(2))
        return seen

    def ctl(self, *args):
        r = subprocess.run([KEEPPEEKCTL, "-s", self.sock, *args], capture_output=True, text=True, timeout=30)
        return r.returncode, r.stdout, r.stderr

    def descendants(self):
        """Every process below keeppeekd (workers and demo cameras)."""
        kids, frontier = set(), {self.proc.pid}
        while frontier:
            found = set()
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    with open(f"/proc/{d}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if ppid in frontier and int(d) not in kids:
                    found.add(int(d))
            kids |= found
            frontier = found
        return kids

    def status(self):
        self.known_pids |= self.descendants()
        rc, out, err = self.ctl("status", "--json")
        if rc != 0:
            return None
        st = json.loads(out)
        for w in st["workers"]:
            if w["pid"] > 0:
                self.known_pids.add(w["pid"])
        return {w["name"]: w for w in st["workers"]}

    def wait_running(self, timeout=15, links=True):
        def ready():
            st = self.status() if os.path.exists(self.sock) else None
            if not st or any(st[w]["state"] != "running" for w in WORKERS):
                return None
            if links and any(l["state"] != "up" for w in WORKERS for l in st[w]["links"] if l["peer"] not in ON_DEMAND):
                return None
            return st
        st = wait_for(ready, timeout, 0.05)
        if not st:
            fail(f"workers not all running within {timeout}s; status={self.status()}\n{self.log_text()}")
        return st

    def http(self, method, path, body=None, headers=None, timeout=10):
        """One request to webd on a fresh connection: (status, {lower-case header: value}, body bytes)."""
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=timeout)
        try:
            if isinstance(body, str):
                body = body.encode()
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=5.0):
        """SIGTERM to keeppeekd; returns seconds until every KeepPeek process was gone."""
        self.status()
        start = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            pass
        gone = wait_for(lambda: not any(alive(p) for p in self.known_pids if p != self.proc.pid), timeout)
        elapsed = time.monotonic() - start
        for p in self.known_pids:
            if alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        return elapsed if gone and self.proc.returncode is not None else None

    def cleanup(self):
        self.stop()
        self.log.close()
        if os.environ.get("KP_TEST_KEEP") == "1":
            print(f"kept {self.dir} (KP_TEST_KEEP=1)", file=sys.stderr)
            return
        shutil.rmtree(self.dir, ignore_errors=True)


_libc = ctypes.CDLL(None, use_errno=True)
SYS_pidfd_getfd = 438


def steal_fd(pid, fd):
    """A duplicate of another process's descriptor (pidfd_getfd(2))."""
    pidfd = os.pidfd_open(pid)
    try:
        r = _libc.syscall(SYS_pidfd_getfd, pidfd, fd, 0)
        if r < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"pidfd_getfd({pid}, {fd}): {os.strerror(e)}")
        return r
    finally:
        os.close(pidfd)


def run(test):
    """Runs test(kp-maker) and prints the plain summary line."""
    made = []

    def make(**kw):
        k = Keeppeek(**kw)
        made.append(k)
        return k
    try:
        test(make)
        for k in made:
            k.stop()
            bad = k.unexpected_restarts()
            check(not bad, f"no worker restarted unless the test meant it ({bad or 'none did'})")
    except AssertionError:
        for k in made:
            print("---- keeppeekd log ----\n" + k.log_text()[-6000:], file=sys.stderr)
        sys.exit(1)
    finally:
        for k in made:
            k.cleanup()


TEST_CAMERA = os.path.join(BUILD, "test", "camera", "keeppeek-test-camera")
FIXTURES = os.path.join(BUILD, "test", "fixtures")


def camera_password():
    """A test camera's password of its own: four tests run at once, and a keeppeekd of
    another test still retrying its camera's port, now a camera of this test, must be
    refused (401) rather than stream from it (it did: test_rtsp_transport counted that
    client's frames as its own)."""
    return "cam-" + secrets.token_hex(6)


class TestCamera:
    """A real keeppeek-test-camera process on loopback ports chosen at run time, with a
    password of its own unless one is given."""

    def __init__(self, workdir, name, codec="h264", protocol="baichuan", encryption="aes", faults=(),
                 user="admin", password=None, port=None, extra=(), main=None, sub=None):
        password = password or camera_password()
        self.name = name
        self.protocol = protocol
        self.port = port or free_port() if protocol != "bcudp" else port or free_udp_port()
        self.stats_path = os.path.join(workdir, f"{name}.stats.json")
        self.log_path = os.path.join(workdir, f"{name}.log")
        # main/sub: other fixture files (e.g. "bframes.h264.ts") instead of main/sub.CODEC.
        self.args = [TEST_CAMERA, "--main", os.path.join(FIXTURES, main or f"main.{codec}"),
                     "--sub", os.path.join(FIXTURES, sub or f"sub.{codec}"),
                     f"--{protocol}-port", str(self.port), "--user", user, "--password", password,
                     "--encryption", encryption, "--stats", self.stats_path, *extra]
        for f in faults:
            self.args += ["--fault", f]
        self.user, self.password = user, password
        # A port chosen here may be taken by another test between the check and the
        # camera's bind (tests run four at once): then another is chosen.
        for _ in range(4 if port is None else 0):
            if self._spawn():
                return
            i = self.args.index(f"--{protocol}-port") + 1
            self.port = free_port() if protocol != "bcudp" else free_udp_port()
            self.args[i] = str(self.port)
        self.start()

    def _spawn(self):
        """Starts the camera: True when ready, False when its port was taken meanwhile."""
        self.log = open(self.log_path, "a")
        at = self.log.tell()
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if line.strip() == "ready":
            return True
        self.proc.wait()
        self.log.close()
        with open(self.log_path) as f:
            f.seek(at)
            if "Address already in use" in f.read():
                return False
        fail(f"test camera {self.name} did not start: {line!r}\n{open(self.log_path).read()}")

    def start(self):
        if not self._spawn():
            fail(f"test camera {self.name} did not start: port {self.port} is taken\n{open(self.log_path).read()}")

    def url(self, password=None):
        pw = self.password if password is None else password
        if self.protocol == "rtsp":
            return f"rtsp://{self.user}:{pw}@127.0.0.1:{self.port}/main"
        return f"{self.protocol}://{self.user}:{pw}@127.0.0.1:{self.port}/?channel=0"

    def sub_url(self):
        return f"rtsp://{self.user}:{self.password}@127.0.0.1:{self.port}/sub"

    def stats(self):
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def pause(self):
        self.proc.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        return self.stats()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def free_port_run(n, kind=socket.SOCK_STREAM):
    """A base port with n consecutive free ports (TCP, or UDP with kind=SOCK_DGRAM) on
    loopback, held while checked; even, so that RTP/RTCP pairs start on it. Tests run
    four at once: a fixed range in one would meet another's sockets."""
    rnd = random.Random()
    for _ in range(200):
        base = rnd.randrange(20000, 60000 - n) & ~1
        held = []
        try:
            for p in range(base, base + n):
                s = socket.socket(socket.AF_INET, kind)
                held.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    fail(f"no run of {n} free ports")


class TestCameraGroup:
    """n Baichuan TCP cameras in one keeppeek-test-camera process (--cameras n) on
    consecutive ports, in replay mode unless replay=False; .cameras behave like
    TestCamera for url(), stats() (their own Baichuan counters), proc and kill()."""

    def __init__(self, workdir, name, n, codec="h264", encryption="aes", replay=True, user="admin",
                 password=None, names=None):
        password = password or camera_password()
        self.name = name
        self.stats_path = os.path.join(workdir, f"{name}.stats.json")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.user, self.password = user, password
        # The run of ports may be taken by another test between the check and the binds
        # (tests run four at once): then another run is chosen.
        for attempt in range(5):
            self.base = free_port_run(n)
            self.args = [TEST_CAMERA, "--main", os.path.join(FIXTURES, f"main.{codec}"),
                         "--sub", os.path.join(FIXTURES, f"sub.{codec}"), "--baichuan-port", str(self.base),
                         "--cameras", str(n), "--user", user, "--password", password, "--encryption", encryption,
                         "--stats", self.stats_path] + (["--replay"] if replay else [])
            self.log = open(self.log_path, "a")
            at = self.log.tell()
            self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self.log, text=True)
            line = self.proc.stdout.readline()
            if line.strip() == "ready":
                break
            self.proc.wait()
            self.log.close()
            with open(self.log_path) as f:
                f.seek(at)
                taken = "Address already in use" in f.read()
            if not taken or attempt == 4:
                fail(f"test cameras {name} did not start: {line!r}\n{open(self.log_path).read()}")
        names = names or [f"{name}{i:02d}" for i in range(n)]
        self.cameras = [GroupCamera(self, i, names[i]) for i in range(n)]

    def stats(self):
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if not self.log.closed:
            self.log.close()


class GroupCamera:
    """Camera i of a TestCameraGroup."""

    def __init__(self, group, i, name):
        self.group, self.i, self.name, self.proc = group, i, name, group.proc
        self.port = group.base + i

    def url(self):
        return f"baichuan://{self.group.user}:{self.group.password}@127.0.0.1:{self.port}/?channel=0"

    def stats(self):
        st = self.group.stats()
        if st is None:
            return None
        per = st.get("baichuan_cameras")
        return {"baichuan": per[self.i] if per else st["baichuan"]}

    def kill(self):
        self.group.kill()


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(kp, token, name):
    """The value of one series on /metrics (exact name with its labels), None when absent."""
    st, _, body = kp.http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    check(st == 200, f"/metrics answers 200 (got {st})")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def cameras(kp):
    rc, out, err = kp.ctl("cameras", "--json")
    if rc != 0:
        return None
    return {c["name"]: c for c in json.loads(out)["cameras"]}


def streaming(kp, *names):
    """True when every stream of each named camera (of every camera, without names) is
    streaming."""
    c = cameras(kp)
    if not c or any(n not in c for n in names):
        return False
    return all(s["state"] == "streaming" for n in (names or c.keys()) for s in c[n]["streams"])


def wait_streaming(kp, *names, timeout=10.0):
    check(wait_for(lambda: streaming(kp, *names), timeout, 0.1),
          f"streams of {', '.join(names) or 'every camera'} streaming: {cameras(kp)}")


def metric_in(text, name):
    """The integer value of one series (exact name with its labels) in /metrics text."""
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


# ---- authentication (keeppeekctl user/token; docs/auth.md) ----
_auth_serial = [0]


def _kp_token(self, role="admin", name=None):
    """A new API token from `keeppeekctl token create` (name unique unless given)."""
    if name is None:
        _auth_serial[0] += 1
        name = f"test-{role}-{_auth_serial[0]}"
    rc, out, err = self.ctl("token", "create", "--name", name, "--role", role)
    if rc != 0:
        fail(f"token create {name} ({role}) exited {rc}: {err}")
    return out.strip()


def _kp_add_user(self, name, password, role="viewer"):
    """`keeppeekctl user add NAME --role ROLE` with the password on stdin."""
    r = subprocess.run([KEEPPEEKCTL, "-s", self.sock, "user", "add", name, "--role", role],
                       input=password + "\n", capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail(f"user add {name} ({role}) exited {r.returncode}: {r.stderr}")


def _kp_demo_admin_password(self):
    """The admin password a demo keeppeekd printed on its first start, or None."""
    m = re.search(r'log in as user "admin" with password (\S+)', self.log_text())
    return m.group(1) if m else None


def _kp_get(self, path, timeout=30):
    """GET with an admin token made once per instance: (status, headers, body)."""
    if getattr(self, "_admin_auth", None) is None:
        self._admin_auth = {"Authorization": "Bearer " + self.token()}
    return self.http("GET", path, headers=self._admin_auth, timeout=timeout)


Keeppeek.token = _kp_token
Keeppeek.get = _kp_get
Keeppeek.add_user = _kp_add_user
Keeppeek.demo_admin_password = _kp_demo_admin_password


# ---- a network namespace of the test's own (discovery broadcasts reach nothing else) ----
def in_own_netns():
    """Re-runs this test in a new network namespace (needs root and unshare(1); exits 77,
    skipped, without them). Returns in the namespace."""
    import shutil
    import sys
    if os.environ.get("KP_TEST_NETNS") == "1":
        return
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("SKIP: needs root and unshare(1) for a network namespace", file=sys.stderr)
        sys.exit(77)
    os.environ["KP_TEST_NETNS"] = "1"
    os.execvp("unshare", ["unshare", "--net", sys.executable, *sys.argv])


def veth_segment(multicast=False):
    """Loopback up and one segment: a veth pair 10.77.0.1/24 (kp0) - 10.77.0.2/24 (kp1),
    with a route for multicast (239.255.255.250) on kp0 when asked."""
    def ip(*args):
        subprocess.run(["ip", *args], check=True)
    ip("link", "set", "lo", "up")
    ip("link", "add", "kp0", "type", "veth", "peer", "name", "kp1")
    ip("addr", "add", "10.77.0.1/24", "dev", "kp0")
    ip("addr", "add", "10.77.0.2/24", "dev", "kp1")
    ip("link", "set", "kp0", "up")
    ip("link", "set", "kp1", "up")
    if multicast:
        ip("route", "add", "224.0.0.0/4", "dev", "kp0")
