#!/usr/bin/env python3
"""webd's HTTP ceilings (SPEC section 12), each exercised at the limit and one past it,
over real sockets against a running keeppeekd (demo cameras):
- 256 connections open and served: the 257th is accepted and closed at once without an
  answer; once one of the 256 closes, a new connection is served again;
- request line of 8192 bytes served, 8193 -> 414; one header line of 8192 bytes served,
  8193 -> 431; 100 headers served, 101 -> 431; header lines of 65536 bytes in total
  (delimiters included) served, 65537 -> 431 (each answered, then the connection closed);
- POST /delete with Content-Length 16384 goes on to authentication (401), 16385 -> 413
  before authentication;
- a client sending one byte of a request head every 10 s is cut 30 s after it connected;
- a client that sends requests without reading the answers is cut once nothing could be
  written to it for 30 s (the write_timeout counter of /metrics counts it);
- a WebSocket message of 65536 bytes is taken, one of 65537 bytes closes the socket with
  1009 (also when it comes as two fragments);
- 64 requests in progress (here: authenticated publications waiting for their body)
  take every handler: the 65th request gets 503 with Retry-After, and is served again
  once they are gone;
- /metrics and /api/v1/cameras need authentication (401 {"code":"unauthenticated"});
- after all of this /healthz still answers 200 in under a second."""
import json
import os
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


def slow_loris(k, result):
    s = socket.create_connection(("127.0.0.1", k.web_port))
    t0 = time.monotonic()
    s.settimeout(0.5)
    sent = 0
    req = b"GET /healthz HTTP/1.1\r\n"
    try:
        while time.monotonic() - t0 < TIMEOUT_S + 15:
            if time.monotonic() - t0 >= sent * 10:
                s.send(req[sent:sent + 1])
                sent += 1
            try:
                d = s.recv(100)
                if not d:
                    break
            except socket.timeout:
                continue
    except (BrokenPipeError, ConnectionResetError):
        pass
    result["cut_after"] = time.monotonic() - t0
    result["bytes_sent"] = sent
    s.close()


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


def write_timeouts(k, token):
    st, _, body = k.http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    for line in body.decode().splitlines():
        if line.startswith('keeppeek_limit_rejections_total{process="webd",limit="write_timeout"}'):
            return int(float(line.split()[-1]))
    return None


def test(make):
    k = make()
    k.wait_running(timeout=30)
    check(wait_for(lambda: k.http("GET", "/healthz")[0] == 200, 20, 0.1), "/healthz answers 200 without auth")

    token = k.token("viewer")
    check(write_timeouts(k, token) == 0, "no write timeout yet")
    loris, stall = {}, {}
    lt = threading.Thread(target=slow_loris, args=(k, loris))
    lt.start()
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

    # ---- handlers: 64 requests in progress ----
    waiting = []
    for _ in range(64):
        w = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
        w.sendall(b"POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() +
                  b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        waiting.append(w)
    time.sleep(0.5)
    st, hdrs, body = k.http("GET", "/healthz")
    check(st == 503 and hdrs.get("retry-after") == "1" and json.loads(body)["code"] == "busy",
          f"with 64 requests in progress the 65th gets 503 with Retry-After ({st})")
    for w in waiting:
        w.close()
    check(wait_for(lambda: k.http("GET", "/healthz")[0] == 200, 5, 0.1), "once they are gone it is served again")

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

    # ---- slow client ----
    lt.join()
    cut = loris.get("cut_after", 0)
    check(TIMEOUT_S - 1 <= cut <= TIMEOUT_S + 2.5,
          f"a client sending one byte every 10 s is cut after {cut:.1f} s ({loris.get('bytes_sent')} bytes sent)")
    st_thread.join()
    check(wait_for(lambda: write_timeouts(k, token) == 1, 15, 0.5),
          f"the client that sent {stall.get('requests_sent')} requests without reading was cut (write timeout)")
    stall["sock"].close()

    # ---- connections ----
    socks = [socket.create_connection(("127.0.0.1", k.web_port), timeout=10) for _ in range(MAX_CONN)]
    served = 0
    for s in socks:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        served += read_response(s)[0] == 200
    check(served == MAX_CONN, f"{served} of {MAX_CONN} keep-alive connections served")
    extra = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
    try:
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    st, _ = read_response(extra, timeout=5)
    extra.close()
    check(st is None, f"the connection past {MAX_CONN} open ones is closed without an answer ({st})")
    for s in socks[:2]:
        s.close()
    time.sleep(0.3)
    check(get_with(k)[0] == 200, "after two of them close, a new connection is served")
    for s in socks[2:]:
        s.close()

    t0 = time.monotonic()
    st, _, _ = k.http("GET", "/healthz")
    dt = time.monotonic() - t0
    check(st == 200 and dt < 1.0, f"afterwards /healthz answers 200 in {dt * 1000:.0f} ms")


if __name__ == "__main__":
    run(test)
