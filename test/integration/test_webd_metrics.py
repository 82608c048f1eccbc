#!/usr/bin/env python3
"""GET /metrics against a running demo keeppeekd, read with a real Prometheus text
parser (Debian's python3-prometheus-client): it needs a token (401 without), parses,
and has per-worker RSS, restarts and state, IPC queue depths with their bounds, the
demo cameras' per-stream frames (growing) and reconnects, webd's HTTP counters, and a
rejection counter for each of webd's ceilings, which counts a request refused by it."""
import sys
import time

from kp import WORKERS, check, run, wait_for

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # a Python other than Debian's (pyenv) runs the tests
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.parser import text_string_to_metric_families

LIMITS = ["connections", "read_timeout", "write_timeout", "request_line", "header_line", "header_bytes",
          "header_count", "handlers", "body", "body_memory", "websocket_message", "websocket_queue"]
CAMERAS = ["demo-baichuan", "demo-rtsp"]


def scrape(k, token):
    st, hdrs, body = k.http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    if st != 200:
        return None, st, hdrs
    samples = {}
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, st, hdrs


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def test(make):
    k = make()
    k.wait_running(timeout=30)
    check(wait_for(lambda: k.http("GET", "/healthz")[0] == 200, 20, 0.1), "/healthz answers 200")
    st, _, _ = k.http("GET", "/metrics")
    check(st == 401, f"/metrics without a token: {st}")
    token = k.token("viewer")

    def frames_flowing():
        m, _, _ = scrape(k, token)
        if not m:
            return None
        ok = all((value(m, "keeppeek_stream_frames_total", camera=c, stream="main") or 0) > 0 for c in CAMERAS)
        # Each stream connects on its own: the sub streams may come a moment after main.
        ok = ok and all(value(m, "keeppeek_stream_state", camera=c, stream=s, state="streaming") == 1
                        for c in CAMERAS for s in ("main", "sub"))
        return m if ok else None
    m = wait_for(frames_flowing, 30, 0.5)
    check(m is not None, "/metrics parses as Prometheus text and shows frames of both demo cameras")
    _, _, hdrs = scrape(k, token)
    check(hdrs.get("content-type", "").startswith("text/plain; version=0.0.4"),
          f"content type {hdrs.get('content-type')}")

    for w in WORKERS:
        rss = value(m, "keeppeek_worker_rss_bytes", worker=w)
        check(rss is not None and rss > 1024 * 1024, f"{w}: RSS {rss}")
        check(value(m, "keeppeek_worker_restarts_total", worker=w) == 0, f"{w}: restarts 0")
        check(value(m, "keeppeek_worker_up", worker=w) == 1, f"{w}: up")
    check(value(m, "keeppeek_ipc_queue_items_max", worker="ingestd", peer="recorderd") == 1024,
          "IPC queue bound of ingestd->recorderd (1024 frames)")
    check(value(m, "keeppeek_ipc_queue_items", worker="ingestd", peer="recorderd") is not None,
          "IPC queue depth of ingestd->recorderd")
    for c in CAMERAS:
        for s in ("main", "sub"):
            check(value(m, "keeppeek_stream_reconnects_total", camera=c, stream=s) is not None,
                  f"{c}/{s}: reconnects counter")
            check(value(m, f"keeppeek_stream_state", camera=c, stream=s, state="streaming") == 1,
                  f"{c}/{s}: state streaming")
    for lim in LIMITS:
        check(value(m, "keeppeek_limit_rejections_total", process="webd", limit=lim) is not None,
              f"rejection counter for the {lim} ceiling")
    check((value(m, "keeppeek_http_responses_total", **{"class": "2xx"}) or 0) > 0, "HTTP 2xx counter")
    check(value(m, "keeppeek_peer_up", peer="supervisor") == 1, "the supervisor answered")

    # A refused request shows in its ceiling's counter.
    before = value(m, "keeppeek_limit_rejections_total", process="webd", limit="header_count")
    hdr = {f"X-H{i}": "v" for i in range(101)}
    st, _, _ = k.http("GET", "/healthz", headers=hdr)
    check(st == 431, f"101 headers: {st}")
    f1 = value(m, "keeppeek_stream_frames_total", camera="demo-rtsp", stream="main")
    time.sleep(3)
    m2, _, _ = scrape(k, token)
    check(value(m2, "keeppeek_limit_rejections_total", process="webd", limit="header_count") == before + 1,
          "the header_count counter went up by one")
    f2 = value(m2, "keeppeek_stream_frames_total", camera="demo-rtsp", stream="main")
    check(f2 > f1, f"demo-rtsp/main frames grow ({f1:.0f} -> {f2:.0f} in 3 s)")
    names = {n for n, _ in m2}
    print("families from recorderd/rtcd:", sorted(n for n in names if "rtc" in n or "record" in n)[:12])


if __name__ == "__main__":
    run(test)
