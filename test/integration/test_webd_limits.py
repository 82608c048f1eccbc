#!/usr/bin/env python3
"""webd's HTTP ceilings (SPEC section 12) and its defences against slow and greedy
clients (keeppeek-webd(8) LIMITS), each exercised at the limit and one past it, over real
sockets against a running keeppeekd (demo cameras):
- 256 signed-in keep-alive connections open and served: the 257th is accepted and closed
  at once without an answer (none of the 256 can be evicted); once two of them close, a
  new connection is served again;
- with all 256 taken, two by anonymous clients with an unfinished head, a new connection
  evicts the one of them that waited longest and is served (connections_evicted);
- 64 anonymous connections from one address: the 65th from it is accepted and closed at
  once (connections_per_address), one from another address is served;
- request line of 8192 bytes served, 8193 -> 414; one header line of 8192 bytes served,
  8193 -> 431; 100 headers served, 101 -> 431; header lines of 65536 bytes in total
  (delimiters included) served, 65537 -> 431 (each answered, then the connection closed);
- POST /delete with Content-Length 16384 goes on to authentication (401), 16385 -> 413
  before authentication;
- a client sending one byte of a request head every 2 s is cut 10 s after it connected;
  a keep-alive connection idle for 12 s is still served, and then cut 10 s after the
  first byte of a head it trickles (read_timeout);
- a login body that stops after one byte is cut 10 s after the head; a publication body
  at 40 KiB/s for 15 s is read whole and answered, one at 8 KiB/s is cut at 20 s (an
  average of 16 KiB/s is due after a grace of 10 s: body_rate);
- a client that sends requests without reading the answers is cut once nothing could be
  written to it for 30 s (the write_timeout counter of /metrics counts it);
- a WebSocket message of 65536 bytes is taken, one of 65537 bytes closes the socket with
  1009 (also when it comes as two fragments);
- a request takes a handler only once complete: 64 signed-in publications waiting for
  their body take none (/healthz is answered meanwhile); with the supervisor stopped
  (SIGSTOP) requests wait in their handlers: 48 anonymous sign-ins take every slot an
  anonymous request may take, the 49th gets 503; 8 /healthz take the health reserve, the
  9th gets 503 (handlers_reserve); 8 signed-in requests take the last slots, the 65th
  request gets 503 with Retry-After (handlers); all of them are answered once the
  supervisor runs again;
- /metrics and /api/v1/cameras need authentication (401 {"code":"unauthenticated"});
- after all of this /healthz still answers 200 in under a second."""
import json
import os
import signal
import socket
import threading
import time

import kp_ws
from kp import check, run, wait_for

MAX_CONN = 256
LINE = 8192
HEADER_BYTES = 65536
MAX_HEADERS = 100
DELETE_MAX = 16384
TIMEOUT_S = 30
HEAD_S = 10
PER_ADDRESS = 64
HANDLERS = 64
RESERVE_SIGNED_IN = 8
RESERVE_HEALTH = 8
IP_BIND_ADDRESS_NO_PORT = 24


def connect_from(k, src, timeout=10):
    """A connection to webd from another loopback address (127.0.0.0/8 is all loopback)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
    s.bind((src, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", k.web_port))
    return s


def read_response(s, timeout=10):
    """(status, body) of one answer on s, or (None, b"") when the server closed first."""
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return None, b""
            buf += d
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        length = 0
        for ln in lines[1:]:
            n, _, v = ln.partition(b":")
            if n.strip().lower() == b"content-length":
                length = int(v)
        while len(body) < length:
            d = s.recv(65536)
            if not d:
                break
            body += d
        return status, body
    except (ConnectionResetError, socket.timeout):
        return None, b""


def raw(k, data, timeout=10):
    with socket.create_connection(("127.0.0.1", k.web_port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_response(s, timeout)


def get_with(k, path=b"/healthz", headers=b""):
    return raw(k, b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\n")


def header_of(total):
    """One header line "X-Pad: aaa..." of exactly `total` bytes without its CRLF."""
    return b"X-Pad: " + b"a" * (total - len(b"X-Pad: "))


def headers_totalling(total):
    """Header lines (CRLF included) of exactly `total` bytes, Host included."""
    host = b"Host: 127.0.0.1\r\n"
    out, left, i = [host], total - len(host), 0
    while left > 0:
        name = b"X-F%03d: " % i
        n = min(4000, left)
        if left - n and left - n < len(name) + 3:
            n = left - len(name) - 3
        out.append(name + b"b" * (n - len(name) - 2) + b"\r\n")
        left -= n
        i += 1
    data = b"".join(out)
    assert len(data) == total, (len(data), total)
    return data


def wait_cut(s, limit):
    """Seconds until the server closes s (or limit)."""
    t0 = time.monotonic()
    s.settimeout(0.2)
    while time.monotonic() - t0 < limit:
        try:
            if not s.recv(100):
                break
        except socket.timeout:
            continue
        except (ConnectionResetError, OSError):
            break
    return time.monotonic() - t0


def trickle(s, data, every, limit):
    """Sends data one byte every `every` seconds until the server closes s; seconds taken."""
    t0 = time.monotonic()
    s.settimeout(0.2)
    sent = 0
    try:
        while time.monotonic() - t0 < limit:
            if sent < len(data) and time.monotonic() - t0 >= sent * every:
                s.send(data[sent:sent + 1])
                sent += 1
            try:
                if not s.recv(100):
                    break
            except socket.timeout:
                continue
    except (BrokenPipeError, ConnectionResetError):
        pass
    return time.monotonic() - t0


def slow_loris(k, result):
    """A new connection trickling a head: cut HEAD_S after it connected."""
    s = socket.create_connection(("127.0.0.1", k.web_port))
    result["cut_after"] = trickle(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100, 2, HEAD_S + 15)
    s.close()


def idle_then_slow(k, result):
    """Keep-alive: idle 12 s (more than HEAD_S, less than TIMEOUT_S) and still served, then
    cut HEAD_S after the first byte of a trickled head."""
    s = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    result["first"] = read_response(s)[0]
    time.sleep(12)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    result["after_idle"] = read_response(s)[0]
    result["cut_after"] = trickle(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100, 2, HEAD_S + 15)
    s.close()


def slow_bodies(k, token, result):
    """A login body stopping after one byte; publications at 40 and at 8 KiB/s."""
    def login():
        s = socket.create_connection(("127.0.0.1", k.web_port))
        s.sendall(b"POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 4000\r\n\r\n{")
        result["login_cut"] = wait_cut(s, HEAD_S + 15)
        s.close()

    def publish(rate, key):
        n = 600 * 1024
        s = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
        s.sendall(b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() +
                  b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % n)
        t0, sent, status = time.monotonic(), 0, None
        try:
            while sent < n:
                due = min(n, int((time.monotonic() - t0) * rate) + 1024)
                if due > sent:
                    s.sendall(b" " * (due - sent))
                    sent = due
                time.sleep(0.05)
            status = read_response(s, timeout=10)[0]
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
        result[key] = (time.monotonic() - t0, sent, status)
        s.close()
    ts = [threading.Thread(target=login), threading.Thread(target=publish, args=(40 * 1024, "fast")),
          threading.Thread(target=publish, args=(8 * 1024, "slow"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def stall_writer(k, result):
    """Pipelines many requests for the UI's index.html and never reads an answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", k.web_port))
    s.settimeout(2)
    req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"
    sent = 0
    try:
        while sent < 20000:
            s.sendall(req * 100)
            sent += 100
    except (socket.timeout, OSError):
        pass
    result["requests_sent"] = sent
    result["sock"] = s


def rejections(k, token):
    """keeppeek_limit_rejections_total of webd by limit name."""
    st, _, body = k.http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    out = {}
    for line in body.decode().splitlines():
        if line.startswith('keeppeek_limit_rejections_total{process="webd",limit="'):
            out[line.split('limit="')[1].split('"')[0]] = int(float(line.split()[-1]))
    return out


def write_timeouts(k, token):
    return rejections(k, token).get("write_timeout")


def test(make):
    k = make()
    k.wait_running(timeout=30)
    check(wait_for(lambda: k.http("GET", "/healthz")[0] == 200, 20, 0.1), "/healthz answers 200 without auth")

    token = k.token("viewer")
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
    publisher = k.token("publisher")
    publish_auth = b"Authorization: Bearer " + publisher.encode() + b"\r\n"
    check(write_timeouts(k, token) == 0, "no write timeout yet")

    # ---- handlers: only complete requests take one; reserves for /healthz and the signed-in ----
    waiting = []
    for _ in range(HANDLERS):
        w = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
        w.sendall(b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\n" + publish_auth +
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        waiting.append(w)
    time.sleep(0.5)
    st, _, _ = k.http("GET", "/healthz")
    check(st == 200, f"64 publications waiting for their body take no handler: /healthz answers ({st})")
    for w in waiting:
        w.close()
    before = rejections(k, token)
    # A new token, so that its first check (by the supervisor) is cached for the next 10 s.
    fresh = b"Authorization: Bearer " + k.token("viewer").encode() + b"\r\n"
    check(get_with(k, b"/api/v1/session", fresh)[0] == 200, "a new token is checked (and cached for 10 s)")
    login = json.dumps({"user": "nobody", "password": "wrong"}).encode()
    login_req = (b"POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(login) + login)
    healthz_req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    cameras_req = b"GET /api/v1/cameras HTTP/1.1\r\nHost: x\r\n" + fresh + b"\r\n"
    anonymous_max = HANDLERS - RESERVE_SIGNED_IN - RESERVE_HEALTH
    held, refused = {"login": [], "healthz": [], "cameras": []}, {}

    def hold(kind, src, req):
        s = connect_from(k, src)
        s.sendall(req)
        held[kind].append(s)

    def refused_now(src, req):
        s = connect_from(k, src)
        s.sendall(req)
        st, hdrs_body = read_response(s, timeout=3)
        s.close()
        return st, hdrs_body
    os.kill(k.proc.pid, signal.SIGSTOP)
    try:
        for i in range(anonymous_max):
            hold("login", "127.0.0.%d" % (20 + i % 2), login_req)
        time.sleep(0.5)
        refused["login"] = refused_now("127.0.0.22", login_req)
        for i in range(RESERVE_HEALTH):
            hold("healthz", "127.0.0.23", healthz_req)
        time.sleep(0.3)
        refused["healthz"] = refused_now("127.0.0.24", healthz_req)
        for i in range(RESERVE_SIGNED_IN):
            hold("cameras", "127.0.0.1", cameras_req)
        time.sleep(0.3)
        s = connect_from(k, "127.0.0.1")
        s.sendall(cameras_req)
        s.settimeout(3)
        refused["cameras"] = s.recv(65536)
        s.close()
    finally:
        os.kill(k.proc.pid, signal.SIGCONT)
    st, body = refused["login"]
    check(st == 503 and json.loads(body)["code"] == "busy",
          f"with {anonymous_max} anonymous requests in progress the next anonymous one gets 503 ({st})")
    st, body = refused["healthz"]
    check(st == 503, f"with {anonymous_max + RESERVE_HEALTH} in progress, the next /healthz gets 503 ({st})")
    head = refused["cameras"].split(b"\r\n\r\n")[0].decode()
    check(head.startswith("HTTP/1.1 503") and "Retry-After: 1" in head,
          f"with {HANDLERS} in progress, the 65th (signed-in) gets 503 with Retry-After ({head.splitlines()[0]})")
    answers = {kind: [read_response(s, timeout=15)[0] for s in socks] for kind, socks in held.items()}
    for socks in held.values():
        for s in socks:
            s.close()
    check(all(st in (401, 429) for st in answers["login"]),
          f"the {anonymous_max} sign-ins waiting in their handlers are answered (401 or 429) once the "
          f"supervisor runs: {sorted(set(answers['login']))}")
    check(answers["healthz"] == [200] * RESERVE_HEALTH and answers["cameras"] == [200] * RESERVE_SIGNED_IN,
          f"so are the /healthz and signed-in ones (200): {answers['healthz']} {answers['cameras']}")
    after = rejections(k, token)
    check(after["handlers_reserve"] - before["handlers_reserve"] == 2 and after["handlers"] - before["handlers"] == 1,
          "counted: handlers_reserve +2, handlers +1")
    check(wait_for(lambda: k.http("GET", "/healthz")[0] == 200, 5, 0.1), "/healthz is served again")

    loris, idle, bodies, stall = {}, {}, {}, {}
    slow = [threading.Thread(target=slow_loris, args=(k, loris)),
            threading.Thread(target=idle_then_slow, args=(k, idle)),
            threading.Thread(target=slow_bodies, args=(k, publisher, bodies))]
    for t in slow:
        t.start()
    st_thread = threading.Thread(target=stall_writer, args=(k, stall))
    st_thread.start()

    # ---- request head ceilings ----
    check(get_with(k, b"/" + b"a" * (LINE - len(b"GET / HTTP/1.1")) + b"")[0] == 404,
          "a request line of exactly 8192 bytes is served (404 for that path)")
    st, body = get_with(k, b"/" + b"a" * (LINE + 1 - len(b"GET / HTTP/1.1")))
    check(st == 414 and json.loads(body)["code"] == "request_line", f"a request line of 8193 bytes gets 414 ({st})")
    check(get_with(k, headers=header_of(LINE) + b"\r\n")[0] == 200, "a header line of 8192 bytes is served")
    st, body = get_with(k, headers=header_of(LINE + 1) + b"\r\n")
    check(st == 431 and json.loads(body)["code"] == "header_line", f"a header line of 8193 bytes gets 431 ({st})")
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(MAX_HEADERS - 1))
    check(get_with(k, headers=many)[0] == 200, "100 headers (Host and 99 more) are served")
    st, body = get_with(k, headers=many + b"X-One-More: v\r\n")
    check(st == 431 and json.loads(body)["code"] == "header_count", f"101 headers get 431 ({st})")
    # RFC 9112 3.2: an HTTP/1.1 request without Host, or with two, is answered 400.
    st, body = raw(k, b"GET /healthz HTTP/1.1\r\n\r\n")
    check(st == 400 and b"Host" in body, f"HTTP/1.1 without Host -> 400 ({st} {body[:80]!r})")
    st, body = raw(k, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n")
    check(st == 400 and b"Host" in body, f"two Host headers -> 400 ({st} {body[:80]!r})")
    st, _ = raw(k, b"GET /healthz HTTP/1.0\r\n\r\n")
    check(st == 200, f"HTTP/1.0 without Host is served ({st})")
    st, _ = raw(k, b"GET /healthz HTTP/1.1\r\n" + headers_totalling(HEADER_BYTES) + b"\r\n")
    check(st == 200, f"header lines of exactly 65536 bytes are served ({st})")
    st, body = raw(k, b"GET /healthz HTTP/1.1\r\n" + headers_totalling(HEADER_BYTES + 1) + b"\r\n")
    check(st == 431 and json.loads(body)["code"] == "header_bytes",
          f"header lines of 65537 bytes in total get 431 ({st})")

    # ---- body ceiling of POST /delete, checked before authentication ----
    def post_delete(n):
        return raw(k, b"POST /delete HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % n + b" " * n)
    st, body = post_delete(DELETE_MAX)
    check(st == 401, f"POST /delete of 16384 bytes passes the size check (401 without credentials: {st})")
    st, body = post_delete(DELETE_MAX + 1)
    check(st == 413 and json.loads(body)["code"] == "body_too_large", f"POST /delete of 16385 bytes gets 413 ({st})")

    # ---- WebSocket message ceiling ----
    def ws_after(frames):
        """Sends masked frames (opcode, fin, payload) and a ping; the first pong or close."""
        ws = kp_ws.connect("127.0.0.1", k.web_port, "/api/v1/live", {"Authorization": "Bearer " + token})
        s = ws.sock
        buf = bytearray(ws.buf)
        try:
            for opcode, fin, payload in frames + [(9, True, b"still there?")]:
                n = len(payload)
                head = bytes([(0x80 if fin else 0) | opcode])
                head += bytes([0x80 | n]) if n < 126 else (bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536
                                                          else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
                mask = os.urandom(4)
                s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
            s.settimeout(5)
            while True:
                while len(buf) < 2 or len(buf) < 2 + (buf[1] & 0x7f if buf[1] & 0x7f < 126 else 0):
                    d = s.recv(65536)
                    if not d:
                        return "eof", None
                    buf += d
                op, n = buf[0] & 0x0f, buf[1] & 0x7f
                h = 2
                if n == 126:
                    while len(buf) < 4:
                        buf += s.recv(65536)
                    n, h = int.from_bytes(buf[2:4], "big"), 4
                while len(buf) < h + n:
                    buf += s.recv(65536)
                payload, buf = bytes(buf[h:h + n]), buf[h + n:]
                if op == 10:
                    return "pong", payload
                if op == 8:
                    return "close", int.from_bytes(payload[:2], "big")
        except (OSError, socket.timeout) as e:
            return "error", str(e)
        finally:
            s.close()
    kind, data = ws_after([(2, True, b"x" * 65536)])
    check(kind == "pong", f"a WebSocket message of 65536 bytes is taken ({kind} {data})")
    kind, data = ws_after([(2, True, b"x" * 65537)])
    check(kind == "close" and data == 1009, f"a WebSocket message of 65537 bytes: closed 1009 ({kind} {data})")
    kind, data = ws_after([(2, False, b"x" * 40000), (0, True, b"x" * 25537)])
    check(kind == "close" and data == 1009, f"65537 bytes in two fragments: closed 1009 ({kind} {data})")

    # ---- authentication needed ----
    for path in ("/metrics", "/api/v1/cameras"):
        st, _, body = k.http("GET", path)
        check(st == 401 and json.loads(body)["code"] == "unauthenticated", f"GET {path} without credentials: 401")

    # ---- slow clients ----
    for t in slow:
        t.join()
    cut = loris.get("cut_after", 0)
    check(HEAD_S - 0.5 <= cut <= HEAD_S + 5, f"a new connection trickling a head is cut after {cut:.1f} s")
    check(idle.get("first") == 200 and idle.get("after_idle") == 200,
          f"a keep-alive connection idle for 12 s is still served ({idle.get('first')}, {idle.get('after_idle')})")
    cut = idle.get("cut_after", 0)
    check(HEAD_S - 0.5 <= cut <= HEAD_S + 5,
          f"and cut {cut:.1f} s after the first byte of a head it trickles")
    cut = bodies.get("login_cut", 0)
    check(HEAD_S - 0.5 <= cut <= HEAD_S + 5, f"a login body that stops after one byte is cut after {cut:.1f} s")
    took, sent, st = bodies.get("fast", (0, 0, None))
    check(sent == 600 * 1024 and st is not None and took > 14,
          f"a body at 40 KiB/s is read whole in {took:.1f} s and answered ({st})")
    took, sent, st = bodies.get("slow", (0, 0, None))
    check(st is None and 19 <= took <= 30,  # the whole body would take 75 s
          f"a body at 8 KiB/s is cut after {took:.1f} s ({sent} bytes sent)")
    r = rejections(k, token)
    check(r["read_timeout"] - after["read_timeout"] == 2 and r["body_rate"] - after["body_rate"] == 2,
          f"counted: read_timeout +{r['read_timeout'] - after['read_timeout']}, "
          f"body_rate +{r['body_rate'] - after['body_rate']}")
    st_thread.join()
    check(wait_for(lambda: write_timeouts(k, token) == 1, 15, 0.5),
          f"the client that sent {stall.get('requests_sent')} requests without reading was cut (write timeout)")
    stall["sock"].close()

    # ---- connections ----
    before = rejections(k, token)
    socks = []
    served = 0
    for _ in range(MAX_CONN):
        s = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
        s.sendall(b"GET /api/v1/session HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
        served += read_response(s)[0] == 200
        socks.append(s)
    check(served == MAX_CONN, f"{served} of {MAX_CONN} signed-in keep-alive connections served")
    extra = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
    try:
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    st, _ = read_response(extra, timeout=5)
    extra.close()
    check(st is None, f"the connection past {MAX_CONN} signed-in ones is closed without an answer ({st})")
    for s in socks[:2]:
        s.close()
    time.sleep(0.3)
    check(get_with(k)[0] == 200, "after two of them close, a new connection is served")
    time.sleep(0.3)
    unfinished = []
    for _ in range(2):
        s = connect_from(k, "127.0.0.5")
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        unfinished.append(s)
        time.sleep(0.2)
    st, _ = raw(k, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    check(st == 200, f"with all {MAX_CONN} taken, two by unfinished anonymous heads, a new connection is served ({st})")
    check(wait_cut(unfinished[0], 2) < 1.5, "the unfinished anonymous connection that waited longest was evicted")
    unfinished[1].settimeout(0.3)
    try:
        gone = unfinished[1].recv(100) == b""
    except socket.timeout:
        gone = False
    except OSError:
        gone = True
    check(not gone, "the younger one is still open")
    for s in socks[2:] + unfinished:
        s.close()
    time.sleep(0.5)

    same = []
    for _ in range(PER_ADDRESS):
        s = connect_from(k, "127.0.0.7")
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        same.append(s)
    time.sleep(0.3)
    s = connect_from(k, "127.0.0.7")
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    st, _ = read_response(s, timeout=5)
    s.close()
    check(st is None, f"anonymous connection {PER_ADDRESS + 1} from one address is closed without an answer ({st})")
    s = connect_from(k, "127.0.0.8")
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    st, _ = read_response(s)
    s.close()
    check(st == 200, f"one from another address is served ({st})")
    for s in same:
        s.close()
    time.sleep(0.3)
    r = rejections(k, token)
    got = {n: r[n] - before[n] for n in ("connections", "connections_evicted", "connections_per_address")}
    check(got == {"connections": 1, "connections_evicted": 1, "connections_per_address": 1},
          f"counted: {got}")

    t0 = time.monotonic()
    st, _, _ = k.http("GET", "/healthz")
    dt = time.monotonic() - t0
    check(st == 200 and dt < 5.0, f"afterwards /healthz answers 200 in {dt * 1000:.0f} ms")


if __name__ == "__main__":
    run(test)
