"""Webhooks (issue 18, docs/decisions/0018) against HTTP receivers in this test:

- "signed" (secret from the environment, labels = person): the receiver answers 500 to
  the first request of each event and 200 after; the event arrives again after about a
  second, its body the JSON GET /api/v1/events/ID answers, X-KeepPeek-Signature the
  HMAC-SHA256 of the body under the secret, X-KeepPeek-Event its id; failures and
  deliveries are counted per webhook;
- the label filter: a "car" event reaches neither "signed" nor its receiver, but does
  reach "all" (no filter, no secret: no signature header);
- "down" (a port nobody listens on, cameras = front): tried 5 times (1 + 2 + 4 + 8 s
  apart), then dropped and counted; the others are not held up by it;
- one past the 64 deliveries that wait per webhook (webhook.c WH_QUEUE): while "down"
  retries, 64 wait, the 65th pushes out the oldest waiting (not the one being tried),
  counted; once a receiver listens on its port, every delivery kept arrives, in order."""
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kp_events as E
from kp import check, free_port, metric, run, wait_for

SECRET = "s3cr3t-hook-key"
WH_QUEUE = 64  # webhook.c

CONFIG_HOOKS = """
[webhook "signed"]
url = http://127.0.0.1:{signed_port}/hook
labels = person, dog
secret = ${{KP_TEST_HOOK_SECRET}}
[webhook "all"]
url = http://localhost:{all_port}/all
[webhook "down"]
url = http://127.0.0.1:{down_port}/none
cameras = front
"""


class Receiver:
    def __init__(self, fail_first, port=0):
        self.requests = []
        self.seen = set()
        self.lock = threading.Lock()
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    outer.requests.append((time.monotonic(), self.path, dict(self.headers), body))
                    eid = self.headers.get("X-KeepPeek-Event")
                    first = eid not in outer.seen
                    outer.seen.add(eid)
                status = 500 if fail_first and first else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, eid):
        with self.lock:
            return [r for r in self.requests if r[2].get("X-KeepPeek-Event") == eid]

    def stop(self):
        self.server.shutdown()


def test(make):
    import os
    signed, every = Receiver(True), Receiver(False)
    down_port = free_port()
    os.environ["KP_TEST_HOOK_SECRET"] = SECRET
    hooks = CONFIG_HOOKS.format(signed_port=signed.port, all_port=every.port, down_port=down_port)
    orig = E.CONFIG
    E.CONFIG = orig + hooks.replace("{", "{{").replace("}", "}}")
    try:
        kp, tok, cam = E.start(make)
    finally:
        E.CONFIG = orig
    try:
        now = int(time.time() * 1000)
        st, h, b = E.publish_json(kp, tok, E.event("wh-1", 1, start_ms=now - 800, end_ms=now,
                                                   labels=[("person", 0.8)]), E.snapshot_jpeg())
        check(st == 200, f"event published ({st} {b[:200]!r})")
        check(wait_for(lambda: len(signed.of("wh-1")) >= 2, 10.0, 0.05), "signed: the event arrives again after a 500")
        reqs = signed.of("wh-1")
        gap = reqs[1][0] - reqs[0][0]
        check(0.8 <= gap <= 3.0, f"signed: the second attempt about 1 s after the first ({gap:.2f} s)")
        _, path, headers, body = reqs[1]
        check(path == "/hook" and headers.get("Content-Type") == "application/json", f"POST /hook JSON ({headers})")
        want = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        check(headers.get("X-KeepPeek-Signature") == want,
              f"signature is the HMAC-SHA256 of the body ({headers.get('X-KeepPeek-Signature')} vs {want})")
        check(reqs[0][3] == body, "both attempts carry the same body")
        st, api = E.get_json(kp, tok, "/api/v1/events/wh-1")
        # The event as committed: its keyframes are those indexed by then (the API,
        # asked later, may name more once the recording's first fragment is indexed).
        sent = json.loads(body)
        kf_sent, kf_api = sent.pop("keyframes", []), dict(api).pop("keyframes", [])
        check(sent == {k: v for k, v in api.items() if k != "keyframes"} and all(k in kf_api for k in kf_sent),
              f"the body is the API's JSON of the event (keyframes as indexed at commit):\n{body!r}\n{api}")
        time.sleep(1.5)
        check(len(signed.of("wh-1")) == 2, "signed: no attempt after the 200")
        check(wait_for(lambda: len(every.of("wh-1")) == 1, 5.0, 0.05), "all: the event, at the first attempt")
        check("X-KeepPeek-Signature" not in every.of("wh-1")[0][2], "all: no secret, no signature header")

        # The label filter.
        st, h, b = E.publish_json(kp, tok, E.event("wh-car", 1, labels=[("car", 0.7)]))
        check(st == 200, "car event published")
        check(wait_for(lambda: len(every.of("wh-car")) == 1, 5.0, 0.05), "all: the car event")
        time.sleep(1.0)
        check(not signed.of("wh-car"), "signed (labels = person, dog): not the car event")

        m = lambda n: metric(kp, tok, n)
        check(m('keeppeek_webd_webhook_delivered_total{webhook="signed"}') == 1, "signed: 1 delivered")
        check(m('keeppeek_webd_webhook_failures_total{webhook="signed"}') == 1, "signed: 1 failure")
        check(m('keeppeek_webd_webhook_up{webhook="signed"}') == 1, "signed: up after its success")
        check(m('keeppeek_webd_webhook_delivered_total{webhook="all"}') == 2, "all: 2 delivered")

        # Nobody listens for "down": 5 attempts, then dropped and counted.
        down_failures = 'keeppeek_webd_webhook_failures_total{webhook="down"}'
        check(wait_for(lambda: m('keeppeek_webd_webhook_dropped_total{webhook="down"}') == 1, 25.0, 0.5),
              f"down: wh-1 dropped after its attempts ({m(down_failures)} failures)")
        check(m(down_failures) >= 5, "down: 5 failures for wh-1")
        check(m('keeppeek_webd_webhook_up{webhook="down"}') == 0, "down: not up")
        check(m('keeppeek_webd_webhook_queue_depth{webhook="down"}') == 1, "down: wh-car waits its turn")

        # One past its queue while wh-car is being retried: up to WH_QUEUE wait, then the
        # oldest waiting goes.
        depth = 'keeppeek_webd_webhook_queue_depth{webhook="down"}'
        dropped = 'keeppeek_webd_webhook_dropped_total{webhook="down"}'
        for i in range(WH_QUEUE - 1):
            st, _, _ = E.publish_json(kp, tok, E.event(f"wq-{i}", 1, labels=[("car", 0.5)]))
            check(st == 200, f"wq-{i} published ({st})")
        check(m(depth) == WH_QUEUE and m(dropped) == 1, f"down: {WH_QUEUE} wait, none more dropped "
              f"({m(depth)}, {m(dropped)})")
        st, _, _ = E.publish_json(kp, tok, E.event(f"wq-{WH_QUEUE - 1}", 1, labels=[("car", 0.5)]))
        check(st == 200 and m(depth) == WH_QUEUE and m(dropped) == 2,
              f"down: the {WH_QUEUE + 1}th pushes out the oldest waiting, counted ({m(depth)}, {m(dropped)})")
        late = Receiver(False, port=down_port)
        try:
            last = f"wq-{WH_QUEUE - 1}"
            check(wait_for(lambda: late.of(last), 30.0, 0.1), "down: the deliveries kept arrive once it listens")
            with late.lock:
                got = [r[2].get("X-KeepPeek-Event") for r in late.requests]
            kept = [g for g in got if g.startswith("wq-")]
            check(kept == [f"wq-{i}" for i in range(1, WH_QUEUE)],
                  f"down: every delivery kept, in order, the oldest waiting not ({kept[:3]}... {len(kept)})")
        finally:
            late.stop()
    finally:
        signed.stop()
        every.stop()
        cam.kill()


if __name__ == "__main__":
    run(test)
