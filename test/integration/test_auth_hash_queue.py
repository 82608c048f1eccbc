"""keeppeekd checks at most 2 passwords at once (scrypt, 32 MiB each) and keeps at most 32
logins waiting (supervisor/auth.c HASH_RUNNING_MAX, HASH_QUEUE_MAX). One past: 60 logins
with the right password arrive at once, each from its own loopback address (so that no
address is slowed for its own failures); the ones past the queue are refused with 503,
code "busy", a sentence that says so and `Retry-After: 1` (keeppeekd's queue, or webd's
ceiling on requests in progress while queued logins hold its handlers), never with the
429 that means "your failures", and keeppeekd logs why. Every other login succeeds; after the
burst a login succeeds again. No worker restarts."""
import http.client
import json
import threading

from kp import check, run, wait_for

LOGINS = 60
RUNNING_MAX, QUEUE_MAX = 2, 32
PASSWORD = "correct horse battery staple"


def login(port, source, out, start):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        c.connect()
        start.wait()
        c.request("POST", "/api/v1/login", body=json.dumps({"user": "queue", "password": PASSWORD}),
                  headers={"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{port}"})
        r = c.getresponse()
        out[source] = (r.status, r.getheader("Retry-After"), r.read())
    except OSError as e:
        out[source] = (None, None, str(e).encode())
    finally:
        c.close()


def test(make):
    kp = make()
    kp.wait_running()
    kp.add_user("queue", PASSWORD, role="viewer")
    out, start = {}, threading.Event()
    sources = [f"127.0.1.{i + 1}" for i in range(LOGINS)]
    threads = [threading.Thread(target=login, args=(kp.web_port, s, out, start)) for s in sources]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(120)
    statuses = sorted((v[0] or 0) for v in out.values())
    busy = [v for v in out.values() if v[0] == 503]
    ok = [v for v in out.values() if v[0] == 200]
    check(len(out) == LOGINS and len(ok) + len(busy) == LOGINS,
          f"every login answered 200 or 503: {statuses}")
    check(len(ok) >= RUNNING_MAX + QUEUE_MAX, f"at least {RUNNING_MAX + QUEUE_MAX} logins succeeded ({len(ok)})")
    check(busy, f"the logins past the queue were refused ({len(busy)} of {LOGINS})")
    for st, retry, body in busy:
        doc = json.loads(body)
        # keeppeekd's queue, or webd's own ceiling on requests in progress when the
        # queued logins hold its handlers: both say busy, neither blames the client.
        check(doc.get("code") == "busy" and retry == "1" and
              doc.get("error") in ("the server is busy checking other logins; try again",
                                   "too many requests in progress"),
              f"a refusal says the server is busy, with Retry-After: 1 ({retry} {doc})")
    check(any(b"busy checking other logins" in v[2] for v in busy), "keeppeekd's own queue refused some")
    check(wait_for(lambda: "32 logins are waiting for password checks; refusing one" in kp.log_text(), 5),
          "keeppeekd logs why it refused")
    st, _, _ = kp.http("POST", "/api/v1/login", json.dumps({"user": "queue", "password": PASSWORD}),
                       headers={"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{kp.web_port}"})
    check(st == 200, f"after the burst a login succeeds ({st})")


if __name__ == "__main__":
    run(test)
