"""Shared by perf/external-analysis and perf/live-fanout: the event publisher (POST
/api/v1/events with an API token, on one keep-alive connection), the live subscriber
(WebSocket /api/v1/live with a reader thread that timestamps every message), the RSS
monitor of every KeepPeek process, /metrics parsing, the deterministic 3840x2160 JPEG of
an exact size, and starting/restarting the real keeppeekd from the build tree (kp.py)."""
import base64
import hashlib
import http.client
import json
import os
import queue
import re
import struct
import subprocess
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
WS_PATH = "/api/v1/live"
EVENTS_PATH = "/api/v1/events"


# ---- the server ----

def camera_config(cams):
    """keeppeek.conf for kp.Keeppeek: web listener, and the cameras' sub streams only."""
    cfg = "[keeppeek]\ndata_dir = {dir}/data\nrun_dir = {dir}/run\n[web]\nlisten = 127.0.0.1:{port}\n"
    for c in cams:
        cfg += f'[camera "{c.name}"]\nurl = {c.url()}\nstreams = sub\n'
    return cfg


def api_token(k, name="perf"):
    """An admin API token: `keeppeekctl token create --name N --role admin` prints only
    the token (SPEC section 8a)."""
    rc, out, err = k.ctl("token", "create", "--name", name, "--role", "admin")
    if rc != 0 or not out.strip():
        raise AssertionError(f"keeppeekctl token create failed (rc {rc}): {err.strip()}")
    return out.strip()


def relaunch(kp, k):
    """Starts keeppeekd again on the same configuration and data (after k.stop()); returns
    the monotonic time just before the fork."""
    k.log = open(k.log_path, "a")
    t0 = time.monotonic()
    k.proc = subprocess.Popen([kp.KEEPPEEKD, "-c", k.config_path], stdout=k.log, stderr=subprocess.STDOUT,
                              cwd=k.dir, start_new_session=True)
    k.known_pids = {k.proc.pid}
    return t0


def kp_pids(k):
    """{name: pid} of keeppeekd and its four workers (keeppeekctl status)."""
    st = k.status() or {}
    out = {"keeppeekd": k.proc.pid}
    out.update({name: w["pid"] for name, w in st.items() if w.get("pid", 0) > 0})
    return out


def cpu_ticks(pid):
    """utime + stime of every thread of pid (clock ticks), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


class RssMonitor(threading.Thread):
    """RSS of every KeepPeek process every `period` s on absolute deadlines, until stopped
    and at least `min_obs` observations were taken. It retains at most `max_obs`: when
    full, neighbouring observations are merged pairwise, each keeping the larger value
    (per process and in total) and the period of the retained series doubles, so the
    series covers the whole run and never under-states a peak. `raw_max` and `raw_n`
    count every 50 ms sample."""

    def __init__(self, pids, period=0.05, min_obs=20, max_obs=64):
        super().__init__(daemon=True)
        self.pids, self.period, self.min_obs, self.max_obs = dict(pids), period, min_obs, max_obs
        self.obs = []  # [{"total": bytes, name: bytes, ...}]
        self.span = 1  # raw samples per retained observation
        self.pending = None
        self.pending_n = 0
        self.raw_n = 0
        self.raw_max = 0
        self.late = 0
        self.missing = 0
        self.stop_ev = threading.Event()

    def _sample(self):
        o = {}
        for name, pid in self.pids.items():
            v = rss_bytes(pid)
            if v is None:
                self.missing += 1
                continue
            o[name] = v
        o["total"] = sum(o.values())
        self.raw_n += 1
        self.raw_max = max(self.raw_max, o["total"])
        if self.pending is None:
            self.pending = o
        else:
            self.pending = {k: max(self.pending.get(k, 0), o.get(k, 0)) for k in set(self.pending) | set(o)}
        self.pending_n += 1
        if self.pending_n == self.span:
            self.obs.append(self.pending)
            self.pending, self.pending_n = None, 0
            if len(self.obs) >= self.max_obs:
                self.obs = [{k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}
                            for a, b in zip(self.obs[0::2], self.obs[1::2])]
                self.span *= 2

    def run(self):
        nxt = time.monotonic()
        while True:
            self._sample()
            if self.stop_ev.is_set() and len(self.obs) >= self.min_obs:
                break
            nxt += self.period
            d = nxt - time.monotonic()
            if d < 0:
                self.late += 1
                nxt = time.monotonic()
                continue
            time.sleep(d)

    def finish(self, timeout=30.0):
        self.stop_ev.set()
        self.join(timeout)
        return self

    def series(self, name="total"):
        return [o[name] for o in self.obs if name in o]

    def describe(self):
        return {"observations": len(self.obs), "raw_samples": self.raw_n, "period_s": self.period,
                "retained_period_s": round(self.period * self.span, 3), "late": self.late,
                "missing_reads": self.missing, "raw_max_total": self.raw_max}


# ---- /metrics ----

_METRIC = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


def parse_metrics(text):
    """Prometheus text exposition -> {"name{labels}": float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC.match(line)
        if not m:
            continue
        try:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        except ValueError:
            continue
    return out


def metric_sum(metrics, pattern):
    """Sum of every series whose name (without labels) matches the regular expression;
    (sum, [matching series])."""
    rx = re.compile(pattern)
    keys = sorted(k for k in metrics if rx.search(k.split("{", 1)[0]))
    return sum(metrics[k] for k in keys), keys


# ---- HTTP ----

class Api:
    """webd over one keep-alive connection with `Authorization: Bearer`."""

    def __init__(self, port, token, timeout=30.0):
        self.port, self.token, self.timeout = port, token, timeout
        self.conn = None
        self.last_ctype = ""

    def request(self, method, path, body=None, headers=None):
        """(status, body bytes, monotonic time the answer was complete). Reconnects once
        when the kept-alive connection was closed by the server."""
        h = {"Authorization": "Bearer " + self.token}
        h.update(headers or {})
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                t = time.monotonic()
                self.last_ctype = r.getheader("content-type", "")
                if r.getheader("connection", "").lower() == "close":
                    self.close()
                return r.status, data, t
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    http.client.CannotSendRequest):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def event_body(eid, revision, camera, start_ms, jpeg=None, labels=(("person", 0.9),), attrs=None, form="json"):
    """One publication in the given form: (body bytes, Content-Type). json: SPEC section
    7 with jpeg_base64; multipart: a part "event" (that JSON without the JPEG) and a part
    "jpeg" (raw bytes); protobuf: keeppeek.analysis.PublishEvent (proto/analysis.proto)."""
    ev = {"id": eid, "revision": revision, "camera": camera, "stream": "sub", "start_ms": start_ms,
          "end_ms": start_ms + 4000, "labels": [{"name": n, "score": sc} for n, sc in labels],
          "attributes": attrs or {"bench": "perf"}}
    if form == "protobuf":
        return _pb_publish(ev, jpeg), "application/x-protobuf"
    if form == "multipart":
        boundary = "kp-perf-" + hashlib.sha256(f"{eid}/{revision}".encode()).hexdigest()[:24]
        parts = [f"--{boundary}\r\nContent-Disposition: form-data; name=\"event\"\r\n"
                 f"Content-Type: application/json\r\n\r\n".encode() + json.dumps(ev).encode() + b"\r\n"]
        if jpeg is not None:
            parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"jpeg\"; filename=\"e.jpg\"\r\n"
                         f"Content-Type: image/jpeg\r\n\r\n".encode() + jpeg + b"\r\n")
        return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"
    if jpeg is not None:
        ev["jpeg_base64"] = base64.b64encode(jpeg).decode()
    return json.dumps(ev, separators=(",", ":")).encode(), "application/json"


def _varint(n):
    n &= (1 << 64) - 1  # int64: two's complement, ten bytes when negative
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _pb_len(field, data):
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _pb_publish(ev, jpeg):
    """keeppeek.analysis.PublishEvent, encoded by hand (proto3: zero fields omitted)."""
    out = bytearray()
    out += _pb_len(1, ev["id"].encode())
    out += _varint(2 << 3) + _varint(ev["revision"])
    out += _pb_len(3, ev["camera"].encode())
    out += _pb_len(4, ev["stream"].encode())
    out += _varint(5 << 3) + _varint(ev["start_ms"])
    out += _varint(6 << 3) + _varint(ev["end_ms"])
    for lab in ev["labels"]:
        out += _pb_len(7, _pb_len(1, lab["name"].encode()) + _varint(2 << 3 | 5) + struct.pack("<f", lab["score"]))
    for k, v in ev["attributes"].items():
        out += _pb_len(9, _pb_len(1, k.encode()) + _pb_len(2, v.encode()))
    if jpeg is not None:
        out += _pb_len(10, jpeg)
    return bytes(out)


def pb_ack(data):
    """keeppeek.analysis.PublishAck -> {"id", "revision", "committed_ms"}."""
    out, i = {}, 0

    def varint():
        nonlocal i
        v, shift = 0, 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(data):
        key = varint()
        field, wt = key >> 3, key & 7
        if wt == 0:
            v = varint()
            if v >= 1 << 63:
                v -= 1 << 64
            out[{2: "revision", 3: "committed_ms"}.get(field, f"f{field}")] = v
        elif wt == 2:
            n = varint()
            out["id" if field == 1 else f"f{field}"] = data[i:i + n].decode("utf-8", "replace")
            i += n
        else:
            raise ValueError(f"PublishAck: unexpected wire type {wt}")
    return out


def publish(api, body_ctype):
    """POST /api/v1/events; (status, answer dict (JSON or PublishAck) or text, t_sent,
    t_acked)."""
    body, ctype = body_ctype
    t0 = time.monotonic()
    status, data, t1 = api.request("POST", EVENTS_PATH, body, {"Content-Type": ctype})
    try:
        if status == 200 and api.last_ctype.startswith("application/x-protobuf"):
            ans = pb_ack(data)
        else:
            ans = json.loads(data)
    except (ValueError, IndexError):
        ans = data[:300].decode("utf-8", "replace")
    return status, ans, t0, t1


# ---- live subscriber ----

def wait_live_subscribers(api, n, timeout=10.0, gauge="keeppeek_webd_live_subscribers"):
    """Waits until webd's /metrics counts at least n live subscribers: a WebSocket is
    authenticated after its upgrade (a refused one is closed with 1008), and an event
    committed before that would not reach it. Returns the count, or raises."""
    end = time.monotonic() + timeout
    seen = None
    while time.monotonic() < end:
        status, text, _ = api.request("GET", "/metrics")
        if status == 200:
            seen = parse_metrics(text.decode("utf-8", "replace")).get(gauge)
            if seen is not None and seen >= n:
                return int(seen)
        time.sleep(0.05)
    raise AssertionError(f"/metrics {gauge} = {seen}, want >= {n} within {timeout} s")


class Subscriber(threading.Thread):
    """One WebSocket on /api/v1/live; every message is put on `q` as (monotonic, wall ms,
    kind, data). With record=False it only counts and checks (for many subscribers):
    envelopes, JPEG binaries, resyncs, and whether each JPEG followed its envelope with
    the size the envelope announced."""

    def __init__(self, kp_ws, port, token, record=True):
        super().__init__(daemon=True)
        self.ws = kp_ws.connect("127.0.0.1", port, WS_PATH, {"Authorization": "Bearer " + token})
        self.record = record
        self.q = queue.Queue()
        self.events = 0
        self.jpegs = 0
        self.resyncs = 0
        self.other = 0
        self.jpeg_omitted = 0  # envelopes of events with a JPEG that did not follow
        self.bytes = 0
        self.bad = []  # protocol surprises
        self.seen = []  # (id, revision) in arrival order (record=False)
        self.jpeg_digests = {}  # (id, revision) -> sha256 of the JPEG that followed
        self.closed = None
        self.error = None
        self.stop_ev = threading.Event()
        self._want_jpeg = None

    def run(self):
        while not self.stop_ev.is_set():
            try:
                kind, data = self.ws.recv(timeout=0.5)
            except TimeoutError:
                continue
            except Exception as e:  # noqa: BLE001 -- reported, ends the reader
                if not self.stop_ev.is_set():
                    self.error = f"{type(e).__name__}: {e}"
                return
            now, wall = time.monotonic(), time.time() * 1000.0
            if kind == "close":
                self.closed = data
                return
            self.bytes += len(data)
            if self.record:
                self.q.put((now, wall, kind, data))
            self._count(kind, data)

    def _count(self, kind, data):
        if kind == "binary":
            self.jpegs += 1
            if self._want_jpeg is None:
                self.bad.append("binary message without an envelope before it")
                return
            key, n = self._want_jpeg
            if n is not None and n != len(data):
                self.bad.append(f"{key}: JPEG of {len(data)} bytes, envelope said {n}")
            if not self.record:
                self.jpeg_digests[key] = hashlib.sha256(data).hexdigest()
            self._want_jpeg = None
            return
        try:
            msg = json.loads(data)
        except ValueError:
            self.bad.append(f"text message is not JSON: {data[:80]!r}")
            return
        t = msg.get("type")
        if t == "event":
            if self._want_jpeg is not None:
                self.bad.append(f"{self._want_jpeg[0]}: envelope announced a JPEG that never came")
            self.events += 1
            ev = msg.get("event", {})
            key = (ev.get("id"), ev.get("revision"))
            if not self.record:
                self.seen.append(key)
            if msg.get("jpeg_follows"):
                self._want_jpeg = (key, ev.get("jpeg_bytes"))
            elif ev.get("has_jpeg"):
                self.jpeg_omitted += 1
        elif t == "resync":
            self.resyncs += 1
            self._want_jpeg = None
        else:
            self.other += 1

    def wait_event(self, eid, revision, want_jpeg, timeout):
        """Consumes messages until the envelope of (eid, revision) and, when want_jpeg, the
        binary after it. Returns (envelope, jpeg bytes or None, monotonic, wall ms of the
        last of them, skipped messages); raises AssertionError on timeout or resync."""
        end = time.monotonic() + timeout
        env, skipped = None, 0
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"live: no {'JPEG for ' if env else 'envelope of '}{eid} rev {revision} "
                                     f"within {timeout} s ({self.error or 'no reader error'})")
            try:
                t, wall, kind, data = self.q.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if env is None:
                if kind == "text":
                    msg = json.loads(data)
                    if msg.get("type") == "resync":
                        raise AssertionError(f"live: resync while waiting for {eid} rev {revision}")
                    ev = msg.get("event", {})
                    if msg.get("type") == "event" and ev.get("id") == eid and ev.get("revision") == revision:
                        env = msg
                        if not want_jpeg:
                            return env, None, t, wall, skipped
                        if not msg.get("jpeg_follows"):
                            raise AssertionError(f"live: {eid} rev {revision}: envelope says no JPEG follows: "
                                                 f"{data[:300]}")
                        continue
                skipped += 1
                continue
            if kind != "binary":
                raise AssertionError(f"live: {eid} rev {revision}: expected the JPEG, got a text message "
                                     f"{data[:120]!r}")
            return env, data, t, wall, skipped

    def close(self):
        self.stop_ev.set()
        self.join(2.0)
        self.ws.close()


# ---- the JPEG ----

def _segments_end(jpeg):
    """Offset after SOI and the APPn/COM segments that follow it (where a COM goes)."""
    if jpeg[:2] != b"\xff\xd8":
        raise ValueError("not a JPEG (no SOI)")
    i = 2
    while i + 4 <= len(jpeg) and jpeg[i] == 0xFF and (0xE0 <= jpeg[i + 1] <= 0xEF or jpeg[i + 1] == 0xFE):
        i += 2 + int.from_bytes(jpeg[i + 2:i + 4], "big")
    return i


def com_segments(n, tag):
    """COM segments totalling exactly n bytes (n >= 4), payload a repeated text."""
    out = bytearray()
    text = (f"KeepPeek external-analysis benchmark padding {tag}; ").encode()
    while n > 0:
        seg = min(n, 65537)
        if n - seg and n - seg < 4:  # leave room for a last segment of at least 4 bytes
            seg = n - 4
        payload = (text * (seg // len(text) + 1))[:seg - 4]
        out += b"\xff\xfe" + (seg - 2).to_bytes(2, "big") + payload
        n -= seg
    return bytes(out)


def jpeg_dimensions(jpeg):
    """(width, height) from the first SOFn segment, or None."""
    i = 2
    while i + 4 <= len(jpeg):
        if jpeg[i] != 0xFF:
            return None
        m = jpeg[i + 1]
        n = int.from_bytes(jpeg[i + 2:i + 4], "big")
        if m in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            return int.from_bytes(jpeg[i + 7:i + 9], "big"), int.from_bytes(jpeg[i + 5:i + 7], "big")
        i += 2 + n
    return None


def base_jpeg(cache_dir, width, height, target):
    """The largest of a few deterministic ffmpeg encodings of testsrc2 (frame 0, with
    seeded uniform noise of strength 0..3, MJPEG quality 2, bitexact) that leaves at least
    4 bytes for a COM segment; cached by parameters. Returns (bytes, parameters)."""
    os.makedirs(cache_dir, exist_ok=True)
    best = None
    for noise in (0, 1, 2, 3):
        path = os.path.join(cache_dir, f"testsrc2-{width}x{height}-q2-n{noise}.jpg")
        if not os.path.exists(path):
            vf = f"testsrc2=size={width}x{height}:rate=1"
            if noise:
                vf += f",noise=alls={noise}:allf=u:all_seed=447204"
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", vf, "-frames:v", "1",
                            "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p", "-flags", "+bitexact",
                            "-fflags", "+bitexact", "-f", "mjpeg", path + ".tmp"], check=True)
            os.replace(path + ".tmp", path)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) + 4 <= target and (best is None or len(data) > len(best[0])):
            best = (data, {"source": f"ffmpeg lavfi {('testsrc2+noise ' + str(noise)) if noise else 'testsrc2'}",
                           "mjpeg_q": 2, "noise": noise, "encoded_bytes": len(data)})
    if best is None:
        raise AssertionError(f"no deterministic encoding of {width}x{height} fits in {target} bytes")
    return best


def exact_jpeg(base, target, tag):
    """base with COM segments inserted after its APPn/COM header segments so that it is
    exactly target bytes; tag makes the padding (and so the bytes) differ per revision."""
    at = _segments_end(base)
    out = base[:at] + com_segments(target - len(base), tag) + base[at:]
    assert len(out) == target and out[-2:] == b"\xff\xd9"
    return out


def check_jpeg_decodes(path):
    """ffprobe's reading of the JPEG and whether ffmpeg decodes it without an error."""
    r = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "json",
                        path], capture_output=True, text=True)
    st = json.loads(r.stdout or "{}").get("streams", [{}])[0]
    d = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True, text=True)
    return st, d.returncode == 0 and not d.stderr.strip(), d.stderr.strip()[:300]
