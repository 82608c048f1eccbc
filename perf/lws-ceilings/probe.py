#!/usr/bin/env python3
"""One-off decision measurement for docs/decisions/0005-own-http-server.md.

Builds perf/lws-ceilings/lws_server.c against the system libwebsockets (4.1.6 on
Debian 12), starts it on a loopback port picked at run time, and sends each case of
KeepPeek's header ceilings (SPEC section 12) over a raw socket. For each case it
records the status line (or that the connection was closed without one), what the
server's LWS_CALLBACK_HTTP could see (its one-line body), what lws logged, the
server's resident memory before and after, and whether a plain GET still works after
the case. KeepPeek's own webd is not started here: test/integration/test_webd_limits.py
proves its answers to the same ceilings.

Not a CI test. Stdlib only; loopback only.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = 8192
HEAD = 65536


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def exchange(port, data, timeout=5.0):
    """Send data, read until close or a complete answer. Returns (status, body, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sent_err = None
    try:
        s.sendall(data)
    except OSError as e:          # the server may close (reset) while we still send
        sent_err = e.__class__.__name__
    buf = b""
    closed = False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError as e:
            closed = f"closed ({e.__class__.__name__})"
            break
        if not chunk:
            closed = "closed"
            break
        buf += chunk
        if b"\r\n\r\n" in buf:
            head, _, rest = buf.partition(b"\r\n\r\n")
            cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
            if cl and len(rest) >= int(cl[0].split(b":")[1]):
                # answer complete: is the connection then closed?
                s.settimeout(0.5)
                try:
                    closed = "closed" if s.recv(1) == b"" else False
                except socket.timeout:
                    closed = False
                except OSError as e:
                    closed = f"closed ({e.__class__.__name__})"
                break
    s.close()
    status = body = None
    if buf:
        head, _, body = buf.partition(b"\r\n\r\n")
        status = head.split(b"\r\n")[0].decode(errors="replace")
        body = body.decode(errors="replace").strip()
    if sent_err and not closed:
        closed = f"closed while sending ({sent_err})"
    return status, body, closed


def req(headers, target="/", extra=b""):
    lines = [f"GET {target} HTTP/1.1".encode()] + headers
    return b"\r\n".join(lines) + b"\r\n\r\n" + extra


def pad_line(name, total):
    """A header line of exactly `total` bytes (without CRLF): 'name: aaaa...'."""
    prefix = f"{name}: ".encode()
    return prefix + b"a" * (total - len(prefix))


def spread(total_bytes, name_fmt="X-P{:04d}", line_max=LINE - 1):
    """Header lines (Host first) whose sizes incl. CRLF sum to total_bytes, each at most
    line_max bytes (without CRLF), as equal as possible."""
    lines = [b"Host: x"]
    rem = total_bytes - (len(lines[0]) + 2)
    n = -(-rem // (line_max + 2))
    base, extra = divmod(rem, n)
    for i in range(n):
        lines.append(pad_line(name_fmt.format(i), base + (1 if i < extra else 0) - 2))
    assert sum(len(l) + 2 for l in lines) == total_bytes, "spread arithmetic"
    assert max(len(l) for l in lines) <= line_max
    return lines


def cases():
    h20 = [pad_line(f"X-H{i:04d}", 20) for i in range(1, 100)]      # 99 lines of 20 bytes
    host20 = b"Host: 127.0.0.1:8080"                                   # 20 bytes
    assert len(host20) == 20 and all(len(l) == 20 for l in h20)
    yield ("a1", "100 header lines of 20 bytes", "200 (allowed)",
           req([host20] + h20))
    yield ("a2", "101 header lines of 20 bytes", "431, close",
           req([host20] + h20 + [pad_line("X-H0100", 20)]))
    yield ("a3", "100 known header lines (Host + 99 x 'Accept: ...' of 20 bytes)",
           "200 (allowed)", req([b"Host: x"] + [pad_line("Accept", 20)] * 99))
    yield ("a4", "101 known header lines (Host + 100 x 'Accept: ...' of 20 bytes)",
           "431, close", req([b"Host: x"] + [pad_line("Accept", 20)] * 100))
    yield ("b1", "one unknown header line of 8192 bytes", "200 (allowed)",
           req([b"Host: x", pad_line("X-Pad", LINE)]))
    yield ("b2", "one unknown header line of 8193 bytes", "431, close",
           req([b"Host: x", pad_line("X-Pad", LINE + 1)]))
    yield ("b3", "one known header line (Cookie) of 8193 bytes", "431, close",
           req([b"Host: x", pad_line("Cookie", LINE + 1)]))
    yield ("c1", "header lines of 65536 bytes in total, each < 8 KiB", "200 (allowed)",
           req(spread(HEAD)))
    yield ("c2", "header lines of 65537 bytes in total, each < 8 KiB", "431, close",
           req(spread(HEAD + 1)))
    yield ("c3", "known header lines (Cookie) of 65537 bytes in total, each < 8 KiB",
           "431, close", req(spread(HEAD + 1, name_fmt="Cookie")))
    target = "/" + "a" * (LINE + 1 - len("GET / HTTP/1.1"))
    line = f"GET {target} HTTP/1.1"
    assert len(line) == LINE + 1
    yield ("d1", "request line of 8193 bytes", "414, close", req([b"Host: x"], target))
    k, r = divmod(LINE + 1 - len("GET / HTTP/1.1"), 3)
    target = "/" + "%61" * k + "a" * r
    assert len(f"GET {target} HTTP/1.1") == LINE + 1
    yield ("d2", "request line of 8193 bytes, path written as %61 escapes", "414, close",
           req([b"Host: x"], target))
    yield ("e", "10,000 unknown headers 'X-a: b'", "431 at the 101st, close",
           req([b"Host: x"] + [b"X-a: b"] * 10000))
    yield ("f", "200 x 'Cookie: a=b' (one known header repeated)", "431, close",
           req([b"Host: x"] + [b"Cookie: a=b"] * 200))
    yield ("g", "'X-a: b' then 'X-Pad: q' (can the callback find X-Pad?)",
           "200; each line a header", req([b"Host: x", b"X-a: b", b"X-Pad: q"]))


def known_line_threshold(port):
    """Most known header lines (Host + Accept lines) lws 4.1.6 hands to the callback."""
    best = 0
    for n in range(1, 101):
        st = exchange(port, req([b"Host: x"] + [b"Accept: a"] * (n - 1)))[0]
        if not (st and " 200 " in st + " "):
            break
        best = n
    return best


def throughput(port, seconds):
    """Keep-alive GET / on one connection, one request in flight, for `seconds`."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    r = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    n = 0
    buf = b""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        s.sendall(r)
        while True:
            if b"\r\n\r\n" in buf:
                head, _, rest = buf.partition(b"\r\n\r\n")
                cl = int([l for l in head.split(b"\r\n")
                          if l.lower().startswith(b"content-length:")][0].split(b":")[1])
                if len(rest) >= cl:
                    buf = rest[cl:]
                    break
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("closed during keep-alive run")
            buf += chunk
        n += 1
    dt = time.monotonic() - t0
    s.close()
    return n / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", help="an already built lws_server (default: build one)")
    ap.add_argument("--throughput", type=float, default=3.0,
                    help="seconds of keep-alive GETs on one connection (0: skip)")
    ap.add_argument("--keep-log", help="copy the server's stderr here")
    ap.add_argument("--buffer", type=int, default=65536,
                    help="lws header buffer (max_http_header_data2), bytes (default 65536)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="lws-ceilings-")
    server = args.server
    if not server:
        server = os.path.join(tmp, "lws_server")
        subprocess.run([os.path.join(HERE, "build"), server], check=True)
    port = free_port()
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([server, str(port), str(args.buffer)], stderr=log, stdout=log)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        rows = []
        for cid, what, spec, data in cases():
            before = rss_kib(proc.pid)
            logpos = os.path.getsize(log_path)
            status, body, closed = exchange(port, data)
            time.sleep(0.1)
            after = rss_kib(proc.pid)
            with open(log_path) as f:
                f.seek(logpos)
                lwslog = " | ".join(sorted({l.split("]", 1)[-1].strip()
                                           for l in f.read().splitlines() if l.strip()}))
            alive = exchange(port, req([b"Host: x"]))[0]
            rows.append(dict(id=cid, what=what, bytes=len(data), spec=spec, status=status,
                             closed=closed, body=body, log=lwslog, rss0=before["VmRSS"],
                             rss1=after["VmRSS"], hwm=after["VmHWM"], alive=alive,
                             running=proc.poll() is None))
        known_max = known_line_threshold(port)
        rps = throughput(port, args.throughput) if args.throughput > 0 else None
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        log.close()
        if args.keep_log:
            shutil.copy(log_path, args.keep_log)
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"libwebsockets 4.1.6 server, header buffer {args.buffer} bytes, port {port}")
    for r in rows:
        print(f"\n[{r['id']}] {r['what']} ({r['bytes']} bytes sent)")
        print(f"  SPEC demands : {r['spec']}")
        print(f"  lws 4.1.6    : {r['status'] or 'no answer'}; "
              f"{r['closed'] or 'connection kept open'}")
        print(f"  callback saw : {r['body'] or '- (callback not called)'}")
        print(f"  lws log      : {r['log'] or '-'}")
        print(f"  server RSS   : {r['rss0']} -> {r['rss1']} KiB (peak {r['hwm']} KiB); "
              f"plain GET afterwards: {r['alive']}; process running: {r['running']}")
    print(f"\nmost header lines (Host + n-1 x 'Accept: a') answered 200: {known_max}")
    print("\n| case | sent | SPEC | lws 4.1.6 | callback saw |")
    print("|---|---|---|---|---|")
    for r in rows:
        got = r["status"].replace("HTTP/1.1 ", "") if r["status"] else "no answer"
        got += ", " + (r["closed"] or "kept open")
        if r["log"]:
            got += f" (log: {r['log']})"
        print(f"| {r['id']} | {r['what']} | {r['spec']} | {got} | {r['body'] or 'not called'} |")
    if rps is not None:
        print(f"\nkeep-alive GET / on one connection, one in flight, Python client: "
              f"{rps:.0f} requests/s (client-bound figure)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
