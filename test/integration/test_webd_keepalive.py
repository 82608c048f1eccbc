#!/usr/bin/env python3
"""Two ceilings of webd's HTTP listener (SPEC 12) that no other test goes past, over real
sockets against a running keeppeekd (demo cameras):
- at most 8 parsed requests buffered for the application (KP_HTTP_MAX_BUFFERED_REQUESTS):
  webd parses one request of a connection at a time and leaves the rest in the socket,
  so 9 requests pipelined in one write (one past the 8) are all answered, in order, on
  the same connection, and then 3 x 9 more;
- the 30 s socket read timeout (KP_HTTP_TIMEOUT_SECS) of an idle keep-alive connection:
  one that sends its next request 25 s after the last answer is served; one that sends
  nothing is closed by webd 30 s after the last answer (not earlier than 29 s, not later
  than 32 s), without an answer."""
import os
import re
import socket
import threading
import time

from kp import check, run, wait_for


def limit(name):
    with open(os.path.join(os.environ["KP_SOURCE_ROOT"], "common", "kp_limits.h")) as f:
        return int(re.search(r"^#define " + name + r"\s+(\d+)", f.read(), re.M).group(1))


BUFFERED = limit("KP_HTTP_MAX_BUFFERED_REQUESTS")
TIMEOUT_S = limit("KP_HTTP_TIMEOUT_SECS")


def read_answers(s, n, timeout=10):
    """Statuses and X-Pipeline-N echoes of n answers on s (None each when closed first)."""
    s.settimeout(timeout)
    buf, out = b"", []
    try:
        while len(out) < n:
            while b"\r\n\r\n" not in buf:
                d = s.recv(65536)
                if not d:
                    return out
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            length = 0
            for ln in lines[1:]:
                k, _, v = ln.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            while len(buf) < length:
                d = s.recv(65536)
                if not d:
                    return out
                buf += d
            body, buf = buf[:length], buf[length:]
            out.append((int(lines[0].split(b" ")[1]), body))
    except (ConnectionResetError, socket.timeout):
        pass
    return out


def idle_until_closed(k, result):
    s = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    result["first"] = [st for st, _ in read_answers(s, 1)]
    t0 = time.monotonic()
    s.settimeout(TIMEOUT_S + 10)
    try:
        result["got"] = s.recv(100)
    except (ConnectionResetError, socket.timeout) as e:
        result["got"] = repr(e)
    result["closed_after"] = time.monotonic() - t0
    s.close()


def idle_then_request(k, result):
    s = socket.create_connection(("127.0.0.1", k.web_port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    result["first"] = [st for st, _ in read_answers(s, 1)]
    time.sleep(TIMEOUT_S - 5)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        result["second"] = [st for st, _ in read_answers(s, 1)]
    except (BrokenPipeError, ConnectionResetError) as e:
        result["second"] = repr(e)
    s.close()


def test(make):
    k = make()
    k.wait_running(timeout=30)
    check(wait_for(lambda: k.http("GET", "/healthz")[0] == 200, 20, 0.1), "/healthz answers 200")

    idle, used = {}, {}
    threads = [threading.Thread(target=idle_until_closed, args=(k, idle)),
               threading.Thread(target=idle_then_request, args=(k, used))]
    for t in threads:
        t.start()

    # ---- pipelining: one past the buffered-request ceiling ----
    n = BUFFERED + 1
    paths = [b"/healthz", b"/metrics"]  # 200, and 401 without credentials
    reqs = b"".join(b"GET " + paths[i % 2] + b" HTTP/1.1\r\nHost: x\r\n\r\n" for i in range(n))
    with socket.create_connection(("127.0.0.1", k.web_port), timeout=10) as s:
        s.sendall(reqs)
        got = [st for st, _ in read_answers(s, n)]
        want = [200 if i % 2 == 0 else 401 for i in range(n)]
        check(got == want, f"{n} requests pipelined in one write are answered in order on one connection ({got})")
        for r in range(3):
            s.sendall(reqs)
            again = [st for st, _ in read_answers(s, n)]
            if again != want:
                break
        check(again == want, f"and 3 x {n} more on the same connection ({again})")

    for t in threads:
        t.join()
    check(used.get("first") == [200] and used.get("second") == [200],
          f"a keep-alive connection idle for {TIMEOUT_S - 5} s is still served ({used})")
    took = idle.get("closed_after", 0)
    check(idle.get("first") == [200] and idle.get("got") == b"" and TIMEOUT_S - 1 <= took <= TIMEOUT_S + 5,
          f"an idle keep-alive connection is closed by webd {took:.1f} s after its last answer, without an "
          f"answer ({idle.get('got')!r})")


if __name__ == "__main__":
    run(test)
