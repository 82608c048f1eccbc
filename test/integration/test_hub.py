"""A hub over two real sites (issue 22, docs/decisions/0033): two keeppeekd on loopback,
each with its test camera named "front", and a third keeppeekd with no camera in hub
mode ([hub] enabled, a [site] per site, each with a viewer token read from a file),
plus a third site "stall" whose port accepts connections and never answers.

- /api/v1/hub/cameras lists east/front and west/front (site, site_camera), every site's
  state (east and west up, stall down "timed out" after [hub] timeout_ms, not later);
- /api/v1/hub/coverage has both cameras with recorded ranges inside the range asked;
- /api/v1/hub/events pages 9 + 8 events published to the two sites, three at a time,
  newest first, each exactly once, camera SITE/CAMERA, with a cursor that holds every
  site's place (east and west done at the end, stall kept at its start, every page
  "partial"); a malformed cursor is 400 bad_cursor; a SITE/CAMERA filter asks one
  site; an event's thumbnail comes through the hub;
- the site tokens never appear in an answer; without credentials 401; a webd without
  [hub] answers 404 not_hub;
- signaling on the hub's /api/v1/rtc: offers for east/front and west/front each get
  their site's answer (its loopback candidate: media flows from the site) and a state
  naming SITE/CAMERA; an unknown site is "not_found" from the hub, an unknown camera
  "not_found" from the site;
- west killed: its session on the page gets "error" (unavailable, naming west) and
  "closed", east's goes on; the hub still answers with east's cameras and west "down" (connection
  refused) at once, stall after its timeout; failures are counted per site in /metrics;
- one past the ceilings, on a second hub over a site of the test's own and the stalled
  port: a camera list of exactly 1 MiB is read, one byte more is "answer too large"; 32
  requests wait for the stalled site and the 33rd is refused for it at once, the other
  site answering; limit 501 is 400;
- no worker of any of the hubs and sites restarted."""
import json
import os
import socket
import threading
import time

import kp_events as E
import kp_ws
from kp import TestCamera, cameras, check, free_port_run, metric, proc_status, run, wait_for
from test_rtc_signaling import offer_sdp

SITE_CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
addresses = 127.0.0.1
udp_ports = %d-%d
[camera "front"]
url = %s
"""

HUB_CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[hub]
enabled = yes
timeout_ms = %d
[site "east"]
url = http://127.0.0.1:%d
token = file:%s
[site "west"]
url = http://127.0.0.1:%d/
token = ${{KP_TEST_WEST_TOKEN}}
[site "stall"]
url = http://127.0.0.1:%d
token = file:%s
"""

TIMEOUT_MS = 1500

HUB2_CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[hub]
enabled = yes
timeout_ms = %d
[site "big"]
url = http://127.0.0.1:%d
token = file:%s
[site "stall"]
url = http://127.0.0.1:%d
token = file:%s
"""
HUB_LIST_BYTES = 1 << 20  # webd/routes_hub.c
HUB_SITE_INFLIGHT = 32  # webd/hub_fetch.h
HUB2_TIMEOUT_MS = 10000  # long enough for 32 requests to be in flight together, even slowed by ASan


class BigSite:
    """A site whose camera list is exactly `size` bytes: one camera, padded with spaces."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.size = HUB_LIST_BYTES
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                head = b'{"cameras":[{"name":"yard","state":"streaming","streams":[]}]'
                body = head + b" " * (outer.size - len(head) - 1) + b"}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def ceilings(make, tok_file, stall):
    """One past the bounds of a site's answer and of the requests waiting for one site."""
    big = BigSite()
    hub = make(config=HUB2_CONFIG % (HUB2_TIMEOUT_MS, big.port, tok_file, stall.getsockname()[1], tok_file))
    hub.wait_running()
    htok = hub.token("viewer")
    a = get_json(hub, htok, "/api/v1/hub/cameras")
    check([c["name"] for c in a["cameras"]] == ["big/yard"] and sites_of(a)["big"]["state"] == "up",
          f"an answer of exactly {HUB_LIST_BYTES} bytes is read: {sites_of(a)['big']}")
    big.size = HUB_LIST_BYTES + 1
    a = get_json(hub, htok, "/api/v1/hub/cameras")
    s = sites_of(a)["big"]
    check(not a["cameras"] and s["state"] == "down" and s["error"] == "answer too large",
          f"one byte more ends the request: {s}")
    big.size = HUB_LIST_BYTES
    # HUB_SITE_INFLIGHT requests wait for the stalled site; one more is refused at once.
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(HUB_SITE_INFLIGHT) as pool:
        waiting = [pool.submit(get, hub, htok, "/api/v1/hub/cameras", 40) for _ in range(HUB_SITE_INFLIGHT)]
        check(wait_for(lambda: metric(hub, htok, 'keeppeek_webd_hub_site_inflight{site="stall"}') ==
                       HUB_SITE_INFLIGHT, HUB2_TIMEOUT_MS / 1000 - 2, 0.05),
              f"{HUB_SITE_INFLIGHT} requests wait for the stalled site")
        # Their requests to big (an answer of 1 MiB) may still be under way on a loaded
        # machine: big is to have room for the next one.
        check(wait_for(lambda: metric(hub, htok, 'keeppeek_webd_hub_site_inflight{site="big"}') == 0,
                       HUB2_TIMEOUT_MS / 1000 - 2, 0.05), "big's answers to them are read")
        t0 = time.monotonic()
        a = get_json(hub, htok, "/api/v1/hub/cameras")
        took = time.monotonic() - t0
        s = sites_of(a)["stall"]
        check(s["state"] == "down" and "cannot ask the site now" in s["error"] and took < HUB2_TIMEOUT_MS / 1000,
              f"one more is refused, not waiting for the site ({took:.2f} s): {s}")
        check([c["name"] for c in a["cameras"]] == ["big/yard"], "the other site answers it")
        check(all(w.result()[0] == 200 for w in waiting), "the waiting requests are answered after the timeout")
    st, body = get(hub, htok, "/api/v1/hub/events?limit=501")
    check(st == 400, f"limit 501: 400 ({st})")
    check(get(hub, htok, "/api/v1/hub/events?limit=500")[0] == 200, "limit 500: 200")
    big.srv.shutdown()


def get(k, tok, path, timeout=20):
    st, _, body = k.http("GET", path, headers=E.auth(tok), timeout=timeout)
    return st, body


def get_json(k, tok, path):
    st, body = get(k, tok, path)
    check(st == 200, f"GET {path} answers 200 (got {st}: {body[:300]!r})")
    return json.loads(body)


def sites_of(ans):
    return {s["name"]: s for s in ans["sites"]}


def stalled_listener():
    """A port that accepts connections and never answers (a stalled site)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    held = []

    def loop():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            held.append(c)
    threading.Thread(target=loop, daemon=True).start()
    return s


def start_site(make, work, name):
    cam = TestCamera(work, f"{name}-cam", "h264", "baichuan", "aes")
    lo = free_port_run(64, socket.SOCK_DGRAM)
    k = make(config=SITE_CONFIG % (lo, lo + 63, cam.url()))
    k.wait_running()

    def streaming():
        c = cameras(k)
        return c and "front" in c and all(s["state"] == "streaming" for s in c["front"]["streams"])
    check(wait_for(streaming, 20.0, 0.1), f"site {name}: camera streaming: {cameras(k)}")
    return k, cam


def test(make):
    import tempfile
    work = tempfile.mkdtemp(prefix="kp-hub-")
    east, east_cam = start_site(make, work, "east")
    west, west_cam = start_site(make, work, "west")
    tokens = {"east": east.token("viewer"), "west": west.token("viewer")}
    publishers = {"east": east.token("publisher"), "west": west.token("publisher")}
    east_tok = os.path.join(work, "east.token")
    with open(east_tok, "w") as f:
        f.write(tokens["east"] + "\n")
    stall = stalled_listener()
    hub = make(config=HUB_CONFIG % (TIMEOUT_MS, east.web_port, east_tok, west.web_port, stall.getsockname()[1],
                                    east_tok),
               env={"KP_TEST_WEST_TOKEN": tokens["west"]})
    hub.wait_running()
    htok = hub.token("viewer")
    try:
        run_checks(east, west, hub, htok, tokens, publishers)
        ceilings(make, east_tok, stall)
    finally:
        stall.close()
        east_cam.kill()
        west_cam.kill()


def run_checks(east, west, hub, htok, tokens, publishers):
    # Without credentials; not a hub.
    st, _, _ = hub.http("GET", "/api/v1/hub/cameras")
    check(st == 401, f"hub cameras without credentials: 401 (got {st})")
    st, body = get(east, tokens["east"], "/api/v1/hub/cameras")
    check(st == 404 and json.loads(body)["code"] == "not_hub", f"a site is not a hub: 404 not_hub ({st} {body!r})")
    a = get_json(east, tokens["east"], "/api/v1/hub/sites")
    check(a == {"hub": False, "sites": []}, f"any server answers hub/sites: {a}")
    a = get_json(hub, htok, "/api/v1/hub/sites")
    check(a["hub"] is True and [x["name"] for x in a["sites"]] == ["east", "west", "stall"], f"the hub's sites: {a}")

    # Cameras, merged; the stalled site answers nothing within the timeout.
    t0 = time.monotonic()
    ans = get_json(hub, htok, "/api/v1/hub/cameras")
    took = time.monotonic() - t0
    names = sorted(c["name"] for c in ans["cameras"])
    check(names == ["east/front", "west/front"], f"merged cameras: {names}")
    # libcurl's threads of the hub's webd (name resolution) start after confinement.
    wpid = hub.status()["webd"]["pid"]
    for t in os.listdir(f"/proc/{wpid}/task"):
        ps = proc_status(f"{wpid}/task/{t}")
        if ps is None:  # the thread ended meanwhile
            continue
        check(ps["Seccomp"] == "2" and ps["NoNewPrivs"] == "1", f"hub webd thread {t} confined ({ps['Seccomp']})")
    for c in ans["cameras"]:
        check(c["site"] == c["name"].split("/")[0] and c["site_camera"] == "front", f"site fields: {c}")
        check(c["streams"] and c["streams"][0]["name"] == "main", f"streams copied: {c}")
    s = sites_of(ans)
    check(s["east"]["state"] == "up" and s["west"]["state"] == "up", f"east and west up: {s}")
    check(s["stall"]["state"] == "down" and "timed out" in s["stall"]["error"], f"stall down, timed out: {s}")
    check(TIMEOUT_MS / 1000 - 0.1 <= took < TIMEOUT_MS / 1000 + 3, f"answered after the stalled site's timeout "
          f"({took:.2f} s; timeout {TIMEOUT_MS} ms)")
    for t in tokens.values():
        check(t.encode() not in json.dumps(ans).encode(), "no site token in the answer")

    # Coverage: both cameras, ranges inside the range asked.
    def covered():
        now = int(time.time() * 1000)
        frm, to = now - 3600_000, now + 60_000
        a = get_json(hub, htok, f"/api/v1/hub/coverage?from={frm}&to={to}&bucket=1h")
        cams = {c["name"]: c for c in a["cameras"]}
        if sorted(cams) != ["east/front", "west/front"]:
            return None
        for c in cams.values():
            main = [x for x in c["streams"] if x["name"] == "main"][0]
            if not main["ranges"]:
                return None
            for r0, r1 in main["ranges"]:
                check(frm <= r0 < r1 <= to, f"range inside the range asked: {r0}, {r1}")
        return a
    cov = wait_for(covered, 40.0, 0.5)
    check(cov, "coverage of both sites' cameras")
    check(cov["total_cameras"] == 2, f"total_cameras summed: {cov['total_cameras']}")
    st, body = get(hub, htok, "/api/v1/hub/coverage?from=1&to=2&camera=nosuch/front")
    check(st == 404, f"coverage of an unknown site: 404 ({st})")
    st, body = get(hub, htok, "/api/v1/hub/coverage?from=1&to=1796207128869&bucket=1d")
    check(st == 400, f"coverage over more than 2048 buckets: 400 ({st})")
    now = int(time.time() * 1000)
    one = get_json(hub, htok, f"/api/v1/hub/coverage?from={now - 2 * 86400_000}&to={now + 60_000}&bucket=1d"
                   "&camera=west/front")
    check([c["name"] for c in one["cameras"]] == ["west/front"], f"coverage of one site camera: {one['cameras']}")

    # Events: 9 on east, 8 on west, interleaved in time.
    base = int(time.time() * 1000) - 600_000
    want = []
    for i in range(9):
        ev = E.event(f"e{i}", start_ms=base + i * 20_000, camera="front")
        st, _, b = E.publish_json(east, publishers["east"], ev, jpeg=E.snapshot_jpeg() if i == 0 else None)
        check(st == 200, f"publish east {i}: {st} {b!r}")
        want.append(("east", f"e{i}", ev["start_ms"]))
    for i in range(8):
        ev = E.event(f"w{i}", start_ms=base + i * 20_000 + 10_000, camera="front")
        st, _, b = E.publish_json(west, publishers["west"], ev)
        check(st == 200, f"publish west {i}: {st} {b!r}")
        want.append(("west", f"w{i}", ev["start_ms"]))
    got, cursor, pages = [], None, 0
    while True:
        q = f"/api/v1/hub/events?limit=3&from={base}&to={base + 3600_000}" + (f"&cursor={cursor}" if cursor else "")
        a = get_json(hub, htok, q)
        pages += 1
        check(len(a["events"]) <= 3, f"a page holds at most limit: {len(a['events'])}")
        got += [(e["site"], e["id"], e["start_ms"], e["camera"]) for e in a["events"]]
        cursor = a["next_cursor"]
        check(a["partial"], "partial: the stalled site never answers")
        if not cursor or not a["events"] or pages > 40:
            break
    # What is left is the stalled site's place alone: it keeps it, from the start.
    check(cursor == "h1~east:x~west:x~stall:0:", f"east and west done, stall kept at its start: {cursor}")
    check([g[:3] for g in got] == sorted(want, key=lambda w: -w[2]),
          f"every event once, newest first: {got}")
    check(all(g[3] == g[0] + "/front" for g in got), "cameras named SITE/CAMERA")
    st, body = get(hub, htok, "/api/v1/hub/events?cursor=c1.0001933a7b1c2d40.0000000000000007")
    check(st == 400 and json.loads(body)["code"] == "bad_cursor", f"a site's cursor is not the hub's: {st}")
    st, body = get(hub, htok, "/api/v1/hub/events?cursor=h1~nosuch:x")
    check(st == 400, f"a cursor naming an unknown site: 400 ({st})")
    a = get_json(hub, htok, f"/api/v1/hub/events?camera=west/front&from={base}&to={base + 3600_000}&limit=100")
    check(sorted(e["id"] for e in a["events"]) == [f"w{i}" for i in range(8)], "SITE/CAMERA filter: one site")
    st, h, body = hub.http("GET", "/api/v1/hub/events/east/e0/thumbnail", headers=E.auth(htok), timeout=30)
    check(st == 200 and h.get("content-type") == "image/jpeg" and body[:2] == b"\xff\xd8",
          f"an event's thumbnail through the hub ({st})")

    # Signaling through the hub: each offer goes to the camera's site, whose answer
    # carries the site's own candidates; the site's messages name the camera SITE/CAMERA.
    ws = kp_ws.connect("127.0.0.1", hub.web_port, "/api/v1/rtc", {"Authorization": "Bearer " + htok})
    for sid, cam in (("a", "east/front"), ("b", "west/front")):
        ws.send_text(json.dumps({"type": "offer", "sid": sid, "sdp": offer_sdp(), "camera": cam, "stream": "main",
                                 "mode": "live"}))
    got = {}
    deadline = time.monotonic() + 15
    while len([k for k in got if k[1] in ("answer", "state")]) < 4 and time.monotonic() < deadline:
        kind, data = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
        check(kind == "text", f"signaling is text ({kind})")
        m = json.loads(data)
        got[(m.get("sid"), m["type"])] = m
    for sid, cam in (("a", "east/front"), ("b", "west/front")):
        ans = got.get((sid, "answer"))
        check(ans and "a=setup:passive" in ans["sdp"] and " 127.0.0.1 " in ans["sdp"],
              f"{sid}: the site's answer with its loopback candidate: {ans and ans['sdp'][:80]!r}")
        st = got.get((sid, "state"))
        check(st and st["camera"] == cam, f"{sid}: state names {cam}: {st}")
    ws.send_text(json.dumps({"type": "offer", "sid": "c", "sdp": offer_sdp(), "camera": "nosuch/front"}))
    m = json.loads(ws.recv(timeout=10)[1])
    check(m["type"] == "error" and m["sid"] == "c" and m["code"] == "not_found", f"unknown site: {m}")
    ws.send_text(json.dumps({"type": "offer", "sid": "d", "sdp": offer_sdp(), "camera": "east/nosuch"}))
    deadline = time.monotonic() + 10
    while True:
        m = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))[1])
        if m.get("sid") == "d":
            break
    check(m["type"] == "error" and m["code"] == "not_found", f"the site's own error comes back: {m}")

    # West dies: east still answers, west says why, stall after its timeout; the page's
    # session on west is told so.
    west.stop()
    deadline = time.monotonic() + 15
    seen = set()
    while ("b", "closed") not in seen and time.monotonic() < deadline:
        kind, data = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
        if kind != "text":
            break
        m = json.loads(data)
        seen.add((m.get("sid"), m["type"]))
        if m.get("sid") == "b" and m["type"] == "error":
            check(m["code"] == "unavailable" and "west" in m["message"], f"west's session told why: {m}")
    check(("b", "error") in seen and ("b", "closed") in seen, f"west's session ended with a reason: {seen}")
    check(("a", "closed") not in seen, "east's session goes on")
    ws.close()
    t0 = time.monotonic()
    ans = get_json(hub, htok, "/api/v1/hub/cameras")
    took = time.monotonic() - t0
    check([c["name"] for c in ans["cameras"]] == ["east/front"], f"east only: {ans['cameras']}")
    s = sites_of(ans)
    check(s["west"]["state"] == "down" and s["west"]["error"], f"west down with a reason: {s['west']}")
    check(took < TIMEOUT_MS / 1000 + 3, f"answered within the timeout ({took:.2f} s)")
    a = get_json(hub, htok, f"/api/v1/hub/events?limit=100&from={base}&to={base + 3600_000}")
    check(sorted(e["id"] for e in a["events"]) == sorted(f"e{i}" for i in range(9)) and a["partial"],
          f"events of east alone, partial: {len(a['events'])}")
    fails = metric(hub, htok, 'keeppeek_webd_hub_site_failures_total{site="west"}')
    check(fails and fails >= 2, f"west's failures counted: {fails}")
    up = metric(hub, htok, 'keeppeek_webd_hub_site_up{site="east"}')
    check(up == 1, f"east up in /metrics: {up}")
    lat = metric(hub, htok, 'keeppeek_webd_hub_site_latency_ms_sum{site="stall"}')
    check(lat and lat >= TIMEOUT_MS, f"stall's latency counted: {lat}")


if __name__ == "__main__":
    run(test)
