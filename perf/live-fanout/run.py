#!/usr/bin/env python3
"""live-fanout: one producer publishing events at a fixed rate to N live WebSocket
subscribers for a fixed window (SPEC section 13; method of shared/seeds/001).

    python3 perf/live-fanout/run.py --build build [--quick] [--subscribers 1,8,32] [--rate 20]
    python3 perf/live-fanout/run.py --build build --native build/perf/live-fanout-native \
        --subscribers 1 --rate 20132 --conns 64 --depth 4     (issue 16; native_driver.py)

For each N: one keeppeek-test-camera (H.264 sub stream) and the real keeppeekd from the
build tree (test/integration/kp.py); an admin API token; N subscribers on /api/v1/live
(`Authorization: Bearer`), each a reader thread of test/integration/kp_ws.py. The
producer POSTs events (JSON, each with its own small JPEG: the 640x360 fixture
snapshot with a COM segment naming the event, so every JPEG's bytes differ) on a fixed
schedule, event i due at start + i/rate, from --producers keep-alive connections (a
publication returns only after the durable commit, so one connection alone could not
hold the rate). The warm-up (default 5 s) is excluded; the window (default 30 s) is
measured by counter deltas of webd's /metrics read at its two edges: delivered entries/s
= delta of the live delivered counter / window length, drops = delta of the live drop
counter; RSS of every KeepPeek process every 250 ms over the window (nearest-rank p50,
p95, max); CPU seconds of each process (/proc/PID/stat) over the window.

The work is checked on the client side after the producer stops and deliveries drain:
every subscriber received every acknowledged event exactly once, the JPEG after each
envelope has exactly the published bytes (SHA-256), all subscribers saw the same order,
no resync, no error. Fails (exit 1) on any drop, missing or wrong delivery, a worker
restart, a producer that could not hold the target rate (< 98 % of the planned
publications acknowledged in the window), or /metrics lacking the counters. Reports:
BUILD/perf/live-fanout.{json,md}. Method: docs/perf/METHODOLOGY.md."""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "external-analysis"))
import perfcommon as pc  # noqa: E402
import evbench as eb  # noqa: E402  (publisher, subscriber, RSS monitor, /metrics parsing)
import native_driver as nd  # noqa: E402  (--native: the C producer and subscribers)

HZ = os.sysconf("SC_CLK_TCK")
cpu_ticks = eb.cpu_ticks


class Producer:
    """Publishes event i at t0 + i/rate for i < total from `conns` threads; records per
    event its lateness (send time - due time), acknowledgement latency and status."""

    def __init__(self, port, token, conns, rate, total, t0, jpegs, camera, run_tag, form):
        self.port, self.token, self.rate, self.total, self.t0 = port, token, rate, total, t0
        self.jpegs, self.camera, self.tag, self.form = jpegs, camera, run_tag, form
        self.next = 0
        self.lock = threading.Lock()
        self.rows = [None] * total
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(conns)]

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        for t in self.threads:
            t.join()

    def eid(self, i):
        return f"lf-{self.tag}-{i:06d}"

    def _loop(self):
        api = eb.Api(self.port, self.token)
        try:
            while True:
                with self.lock:
                    i = self.next
                    if i >= self.total:
                        return
                    self.next += 1
                due = self.t0 + i / self.rate
                d = due - time.monotonic()
                if d > 0:
                    time.sleep(d)
                body = eb.event_body(self.eid(i), 1, self.camera, int(time.time() * 1000),
                                     jpeg=self.jpegs[i], attrs={"bench": "live-fanout"}, form=self.form)
                try:
                    st, ans, ts, ta = eb.publish(api, body)
                except OSError as e:
                    st, ans, ts, ta = 0, f"{type(e).__name__}: {e}", time.monotonic(), time.monotonic()
                self.rows[i] = {"due": due, "sent": ts, "acked": ta, "status": st,
                                "answer": None if st == 200 else str(ans)[:200]}
        finally:
            api.close()


def run_one(kp, kp_ws, n, a, base_jpeg):
    failures = []
    work = tempfile.mkdtemp(prefix=f"kp-perf-lf{n}-")
    cams, k, subs = [], None, []
    res = {"subscribers": n, "rate_per_s": a.rate, "window_s": a.window, "warmup_s": a.warmup}
    try:
        cams = [kp.TestCamera(work, "cam264", "h264", "baichuan", "aes")]
        k = kp.Keeppeek(config=eb.camera_config(cams))
        k.wait_running(timeout=30)
        token = eb.api_token(k)
        res["data_fs"] = pc.fs_type(k.dir)
        api = eb.Api(k.port, token)
        pids = eb.kp_pids(k)
        status0 = k.status()
        subs = [eb.Subscriber(kp_ws, k.port, token, record=False) for _ in range(n)]
        for s in subs:
            s.start()
        eb.wait_live_subscribers(api, n, 30.0)
        total_warm = int(round(a.warmup * a.rate))
        total_win = int(round(a.window * a.rate))
        total = total_warm + total_win
        tag = f"n{n}-{int(time.time())}"
        jpegs = [eb.exact_jpeg(base_jpeg, len(base_jpeg) + 64, f"{tag} event {i}") for i in range(total)]
        digests = [hashlib.sha256(j).hexdigest() for j in jpegs]
        res["jpeg_bytes"] = len(jpegs[0])
        res["quiet_check"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(a.wait_quiet, a.max_busy)))
        res["load_before"] = pc.loadavg()
        t0 = time.monotonic() + 0.2
        prod = Producer(k.port, token, a.producers, a.rate, total, t0, jpegs, "cam264", tag, a.form)
        prod.start()

        # The window: from the due time of the first window event for window seconds.
        tw0 = t0 + total_warm / a.rate
        tw1 = tw0 + a.window
        time.sleep(max(0.0, tw0 - time.monotonic()))
        st0, text0, tm0 = api.request("GET", "/metrics")
        mach0, self0 = pc.cpu_jiffies(), os.times()
        cpu0 = {nm: cpu_ticks(p) for nm, p in pids.items()}
        mon = eb.RssMonitor(pids, period=0.25, min_obs=1, max_obs=1 << 20)
        mon.start()
        time.sleep(max(0.0, tw1 - time.monotonic()))
        st1, text1, tm1 = api.request("GET", "/metrics")
        cpu1 = {nm: cpu_ticks(p) for nm, p in pids.items()}
        self1, mach1 = os.times(), pc.cpu_jiffies()
        mon.finish()
        prod.join()
        res["load_after"] = pc.loadavg()
        win = tm1 - tm0
        res["measured_window_s"] = round(win, 3)
        if st0 != 200 or st1 != 200:
            failures.append(f"N={n}: GET /metrics: HTTP {st0} / {st1}")
            return res, failures
        m0 = eb.parse_metrics(text0.decode("utf-8", "replace"))
        m1 = eb.parse_metrics(text1.decode("utf-8", "replace"))
        counters = {}
        for label, rx in (("delivered", a.delivered_metric), ("dropped", a.dropped_metric)):
            v0, keys0 = eb.metric_sum(m0, rx)
            v1, keys1 = eb.metric_sum(m1, rx)
            if not keys1:
                failures.append(f"N={n}: /metrics has no series matching {rx!r} ({label})")
                counters[label] = None
                continue
            counters[label] = {"start": v0, "end": v1, "delta": v1 - v0, "series": keys1}
        res["counters"] = counters
        res["metrics_live_end"] = {kk: v for kk, v in m1.items() if "live" in kk}
        if counters.get("delivered"):
            res["delivered_per_s"] = round(counters["delivered"]["delta"] / win, 2)
        # Producer: what was due and acknowledged in the window.
        rows = prod.rows
        bad = [r for r in rows if r is None or r["status"] != 200]
        if bad:
            failures.append(f"N={n}: {len(bad)} publications failed, e.g. {bad[0]}")
        # Held: due in the window, acknowledged, and sent less than one second late.
        in_win = [r for r in rows
                  if r and r["status"] == 200 and tw0 <= r["due"] < tw1 and r["sent"] - r["due"] < 1.0]
        res["published_acked_in_window"] = len(in_win)
        res["published_planned_in_window"] = total_win
        res["publish_rate_achieved_per_s"] = round(len(in_win) / a.window, 2)
        late = [max(0.0, (r["sent"] - r["due"]) * 1000) for r in rows if r]
        lat = [(r["acked"] - r["sent"]) * 1000 for r in rows if r and r["status"] == 200]
        res["publish_lateness_ms"] = {k2: round(v, 3) if isinstance(v, float) else v
                                      for k2, v in pc.summary(late).items()}
        res["publish_to_commit_ms"] = {k2: round(v, 3) if isinstance(v, float) else v
                                       for k2, v in pc.summary(lat).items()}
        if len(in_win) < 0.98 * total_win:
            failures.append(f"N={n}: the producer held {len(in_win)} of {total_win} publications in the window "
                            f"(acknowledged and sent < 1 s late; target rate {a.rate}/s not held)")
        # CPU and RSS over the window.
        procs = {}
        for nm in pids:
            if cpu0.get(nm) is None or cpu1.get(nm) is None:
                failures.append(f"N={n}: {nm} vanished during the window")
                continue
            procs[nm] = {"cpu_s": round((cpu1[nm] - cpu0[nm]) / HZ, 2), "rss": pc.summary(mon.series(nm))}
        procs["total"] = {"cpu_s": round(sum(p["cpu_s"] for p in procs.values()), 2),
                          "rss": pc.summary(mon.series())}
        res["processes"] = procs
        res["rss_monitor"] = mon.describe()
        busy = (mach1[0] - mach0[0]) / HZ
        driver = (self1.user + self1.system) - (self0.user + self0.system)
        res["machine"] = {"busy_cpu_s": round(busy, 2), "capacity_cpu_s": round(win * os.cpu_count(), 2),
                          "driver_cpu_s": round(driver, 2), "steal_cpu_s": round((mach1[1] - mach0[1]) / HZ, 2),
                          "other_cpu_s": round(max(0.0, busy - procs["total"]["cpu_s"] - driver), 2)}
        # Drain and check every delivery.
        index = {i: prod.eid(i) for i, r in enumerate(rows) if r and r["status"] == 200}
        acked = list(index.values())
        want = {(e, 1) for e in acked}
        kp.wait_for(lambda: all(len(set(s.seen) & want) == len(want) for s in subs), 15.0, 0.1)
        time.sleep(0.3)
        missing, dup, wrong = 0, 0, 0
        orders = []
        for s in subs:
            mine = [x for x in s.seen if x in want]
            missing += len(want - set(mine))
            dup += len(mine) - len(set(mine))
            got = set(mine)
            wrong += sum(1 for i, e in index.items() if (e, 1) in got and s.jpeg_digests.get((e, 1)) != digests[i])
            orders.append(mine)
        res["client"] = {"events_each": [len(o) for o in orders][:64], "missing": missing, "duplicates": dup,
                         "wrong_or_missing_jpeg": wrong, "resyncs": sum(s.resyncs for s in subs),
                         "jpeg_omitted": sum(s.jpeg_omitted for s in subs),
                         "errors": [s.error for s in subs if s.error][:5],
                         "closed": [s.closed for s in subs if s.closed][:5],
                         "protocol": [b for s in subs for b in s.bad][:5],
                         "same_order": all(o == orders[0] for o in orders),
                         "bytes_received": sum(s.bytes for s in subs)}
        c = res["client"]
        if missing or dup or wrong or c["resyncs"] or c["jpeg_omitted"] or c["errors"] or c["closed"] or \
                c["protocol"]:
            failures.append(f"N={n}: client checks: missing {missing}, duplicates {dup}, wrong/missing JPEG {wrong}, "
                            f"resyncs {c['resyncs']}, JPEG omitted {c['jpeg_omitted']}, errors {c['errors']}, "
                            f"closed {c['closed']}, "
                            f"protocol {c['protocol']}")
        if not c["same_order"]:
            failures.append(f"N={n}: subscribers saw the events in different orders")
        if counters.get("dropped") and counters["dropped"]["delta"]:
            failures.append(f"N={n}: /metrics drop counter grew by {counters['dropped']['delta']} in the window")
        status1 = k.status()
        for w in kp.WORKERS:
            if status1[w]["pid"] != status0[w]["pid"] or status1[w]["restarts"] != status0[w]["restarts"]:
                failures.append(f"N={n}: {w} restarted ({status0[w]} -> {status1[w]})")
        api.close()
    except AssertionError as e:
        failures.append(f"N={n}: {e}")
    finally:
        for s in subs:
            s.close()
        for c in cams:
            c.kill()
        if k is not None:
            if failures and a.keep:
                print(f"N={n}: keeping {k.dir} and {work}", file=sys.stderr)
                k.stop()
            else:
                k.cleanup()
        if not (failures and a.keep):
            shutil.rmtree(work, ignore_errors=True)
    return res, failures


def markdown(rep):
    out = [f"# live-fanout ({rep['label']})", "",
           f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}. Build {rep['build']}.",
           f"{rep['rate']} events/s, each with a {rep.get('jpeg_bytes', 0):,}-byte JPEG (envelope text + JPEG binary "
           f"per subscriber), published as {rep['form']} from {rep['producers']} connections, warm-up "
           f"{rep['warmup_s']:g} s excluded, "
           f"window {rep['window_s']:g} s; counters from webd's /metrics at the window's edges; RSS every 0.25 s; "
           "nearest-rank percentiles.", "",
           "| N subscribers | published on time in window (planned) | delivered counter delta | delivered/s | "
           "drops (counter) | client missing / dup / bad JPEG / resync | publish→commit p50 / p95 ms | "
           "lateness p95 ms | RSS total p50 / p95 / max MiB | KeepPeek CPU s (webd) | other CPU s |",
           "| ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- | --- | ---: |"]
    for r in rep["runs"]:
        c = r.get("counters") or {}
        cl = r.get("client")
        p = r.get("processes")
        if not p or not cl:
            out.append(f"| {r['subscribers']} | run failed | | | | | | | | | |")
            continue
        d = c.get("delivered") or {}
        dr = c.get("dropped") or {}
        rss = p["total"]["rss"]
        out.append(f"| {r['subscribers']} | {r['published_acked_in_window']:,} "
                   f"({r['published_planned_in_window']:,}) | "
                   f"{pc.fmt(d.get('delta'), 0)} | {pc.fmt(r.get('delivered_per_s'))} | {pc.fmt(dr.get('delta'), 0)} | "
                   f"{cl['missing']} / {cl['duplicates']} / {cl['wrong_or_missing_jpeg']} / {cl['resyncs']} | "
                   f"{pc.fmt(r['publish_to_commit_ms'].get('p50'))} / {pc.fmt(r['publish_to_commit_ms'].get('p95'))} | "
                   f"{pc.fmt(r['publish_lateness_ms'].get('p95'))} | "
                   f"{rss['p50'] / 1048576:.2f} / {rss['p95'] / 1048576:.2f} / {rss['max'] / 1048576:.2f} | "
                   f"{p['total']['cpu_s']} ({p.get('webd', {}).get('cpu_s', '-')}) | "
                   f"{r['machine']['other_cpu_s']} |")
    series = sorted({s for r in rep["runs"] for v in (r.get("counters") or {}).values() if v for s in v["series"]})
    out += ["", f"Counter series: {', '.join(series) or '-'}.", ""]
    out.append("Result: " + ("zero drops, every delivery checked." if not rep["failures"] else
                             "FAILED:\n\n" + "\n".join("* " + x for x in rep["failures"])))
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)), help="source tree")
    ap.add_argument("--subscribers", help="comma-separated N values (default 1,8,32; --quick 1,8)")
    ap.add_argument("--rate", type=float, default=20.0, help="events per second (default 20)")
    ap.add_argument("--window", type=float, help="measured seconds (default 30, --quick 10)")
    ap.add_argument("--warmup", type=float, help="excluded seconds (default 5, --quick 2)")
    ap.add_argument("--producers", type=int, default=4, help="publishing connections (default 4)")
    ap.add_argument("--form", default="protobuf", choices=["protobuf", "json", "multipart"],
                    help="publication form (default protobuf)")
    ap.add_argument("--quick", action="store_true", help="short windows, N = 1,8")
    ap.add_argument("--delivered-metric", default=r"^keeppeek_webd_live_delivered_total$",
                    help="regular expression naming the live delivered counter(s) in /metrics")
    ap.add_argument("--dropped-metric", default=r"^(keeppeek_webd_live_(dropped|resyncs|jpeg_omitted)_total|"
                    r"keeppeek_recorderd_event_fanout_lost_total)$",
                    help="regular expression naming every counter of lost live deliveries in /metrics")
    ap.add_argument("--wait-quiet", type=float, default=120.0,
                    help="before each N, wait at most this long for the machine to be idle (--max-busy)")
    ap.add_argument("--max-busy", type=float, default=0.3, help="busy cores that count as idle for --wait-quiet")
    ap.add_argument("--keep", action="store_true", help="keep the directories of a failed run")
    ap.add_argument("--native", help="the C client (BUILD/perf/live-fanout-native): envelope-only events from it, "
                    "subscribers in it")
    ap.add_argument("--conns", type=int, default=48, help="--native: publishing connections (default 48; webd closes a 65th anonymous one per address)")
    ap.add_argument("--depth", type=int, default=1, help="--native: requests in flight per connection (default 1)")
    ap.add_argument("--committed-metric", default=r"^keeppeek_recorderd_events_committed_total$",
                    help="regular expression naming recorderd's committed-events counter(s) in /metrics")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    a.window = a.window or (10.0 if a.quick else 30.0)
    a.warmup = a.warmup if a.warmup is not None else (2.0 if a.quick else 5.0)
    a.subscribers = a.subscribers or ("1,8" if a.quick else "1,8,32")
    build = os.path.abspath(a.build)
    os.environ["KP_BUILD_ROOT"] = build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402  (test/integration/kp.py: starts the real programs from the build tree)
    import kp_ws  # noqa: E402
    with open(os.path.join(kp.FIXTURES, "snapshot.jpg"), "rb") as f:
        base_jpeg = f.read()
    report = {"benchmark": "live-fanout", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "build": build, "rate": a.rate, "window_s": a.window,
              "warmup_s": a.warmup, "producers": a.producers, "form": a.form,
              "jpeg_bytes": len(base_jpeg) + 64, "runs": [],
              "failures": []}
    if a.native:
        report.update({"benchmark": "live-fanout-native", "client": os.path.abspath(a.native), "conns": a.conns,
                       "depth": a.depth, "jpeg_bytes": 0})
    for n in [int(x) for x in a.subscribers.split(",")]:
        print(f"N={n}: load average {pc.loadavg()}", flush=True)
        if a.native:
            res, fails = nd.run_one_native(kp, n, a)
        else:
            res, fails = run_one(kp, kp_ws, n, a, base_jpeg)
        report["runs"].append(res)
        report["failures"] += fails
        if fails:
            print("\n".join("FAIL: " + f for f in fails), file=sys.stderr, flush=True)
    md = nd.markdown_native(report) if a.native else markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(build, "perf"), report["benchmark"], report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
