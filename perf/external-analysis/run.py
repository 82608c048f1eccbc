#!/usr/bin/env python3
"""external-analysis: the external-analysis conformance benchmark of SPEC section 13.

    python3 perf/external-analysis/run.py --build build

Starts two keeppeek-test-camera processes (Baichuan TCP, AES; one H.264 and one H.265
640x360 sub stream, `streams = sub`) and the real keeppeekd from the build tree
(test/integration/kp.py), creates an admin API token, and measures:

1. server start through first durable commit: --starts times, keeppeekd is stopped and
   started again on the same configuration and data, and an envelope-only event is
   POSTed every 5 ms (connection refused and non-200 answers retried) until one is
   acknowledged; the time from just before the fork to that acknowledgement;
2. RSS of every KeepPeek process (keeppeekd and its workers) every 50 ms before the
   measured client connects (>= 20 observations);
3. the baseline: --samples envelope-only events (distinct ids), each POSTed on a
   keep-alive connection, timed from the request to the durable acknowledgement, and
   waited for on a live WebSocket subscriber (/api/v1/live, `Authorization: Bearer`);
4. the result: --samples revisions of one event, each with a 447,204-byte 3840x2160 JPEG
   (deterministic: ffmpeg testsrc2 frame 0, MJPEG, padded to the exact size with a COM
   segment whose text names the revision, so every revision's bytes differ), timed from
   the request to the durable acknowledgement, and from the commit (the acknowledged
   `committed_ms`, the server's wall clock) to the moment the subscriber holds the
   matching envelope and the complete JPEG, byte-compared with what was published; RSS is
   sampled every 50 ms during it (>= 20, <= 64 retained observations).

Then it checks the work: the snapshot route returns the last revision's JPEG byte for
byte, a search by camera finds the baseline events, no worker restarted, and reads the
live queue high-water marks and counters from /metrics. Nearest-rank p50/p95. Fails
(exit 1) on any wrong byte or missing delivery and over the budgets: p95 2,000 ms (JPEG
publication through commit), 2,500 ms (commit through complete live fan-out), 2,000 ms
(start through first commit), RSS p95 delta 128 MiB. Reports:
BUILD/perf/external-analysis.{json,md}. Method: docs/perf/METHODOLOGY.md."""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import perfcommon as pc  # noqa: E402
import evbench as eb  # noqa: E402

JPEG_BYTES = 447204
JPEG_W, JPEG_H = 3840, 2160
MIB = 1048576
BUDGETS = {"jpeg_publish_to_commit_ms": 2000.0, "commit_to_live_ms": 2500.0, "start_to_commit_ms": 2000.0,
           "rss_p95_delta_bytes": 128 * MIB}


def first_commit(api_port, token, camera, eid, timeout, form):
    """POSTs an envelope-only event every 5 ms until acknowledged. Returns (monotonic time
    of the acknowledgement or None, attempts, monotonic time of the first accepted TCP
    connection or None, {outcome: count} of the attempts that failed)."""
    end = time.monotonic() + timeout
    attempts, outcomes, t_conn = 0, {}, None
    body, ctype = eb.event_body(eid, 1, camera, int(time.time() * 1000), form=form)
    while time.monotonic() < end:
        attempts += 1
        c = http.client.HTTPConnection("127.0.0.1", api_port, timeout=5)
        try:
            c.connect()
            if t_conn is None:
                t_conn = time.monotonic()
            c.request("POST", eb.EVENTS_PATH, body=body,
                      headers={"Authorization": "Bearer " + token, "Content-Type": ctype})
            r = c.getresponse()
            data = r.read()
            if r.status == 200:
                return time.monotonic(), attempts, t_conn, outcomes
            try:
                key = f"HTTP {r.status} {json.loads(data).get('code', '')}".strip()
            except (ValueError, AttributeError):
                key = f"HTTP {r.status}"
        except (OSError, http.client.HTTPException) as e:
            key = type(e).__name__
        finally:
            c.close()
        outcomes[key] = outcomes.get(key, 0) + 1
        time.sleep(0.005)
    return None, attempts, t_conn, outcomes


def wait_streaming(kp, k, n, timeout):
    def ok():
        c = kp.cameras(k)
        good = c and len(c) == n and all(s["state"] == "streaming" for cc in c.values() for s in cc["streams"])
        return c if good else None
    return kp.wait_for(ok, timeout, 0.2)


def ms(a, b):
    return round((b - a) * 1000.0, 3)


def run(kp, kp_ws, a, report):
    failures = report["failures"]
    work = tempfile.mkdtemp(prefix="kp-perf-ea-")
    cams, k, sub, api = [], None, None, None
    try:
        base, params = eb.base_jpeg(os.path.join(a.build, "perf", "external-analysis-jpeg"), JPEG_W, JPEG_H,
                                    JPEG_BYTES)
        jpegs = [eb.exact_jpeg(base, JPEG_BYTES, f"revision {r}") for r in range(1, a.samples + 1)]
        probe_path = os.path.join(work, "revision-1.jpg")
        with open(probe_path, "wb") as f:
            f.write(jpegs[0])
        st, decodes, err = eb.check_jpeg_decodes(probe_path)
        report["jpeg"] = dict(params, bytes=len(jpegs[0]), width=eb.jpeg_dimensions(jpegs[0])[0],
                              height=eb.jpeg_dimensions(jpegs[0])[1], ffprobe=st, ffmpeg_decodes=decodes,
                              sha256_revision_1=hashlib.sha256(jpegs[0]).hexdigest(),
                              distinct_revisions=len({hashlib.sha256(j).digest() for j in jpegs}))
        if not decodes or st.get("width") != JPEG_W or st.get("height") != JPEG_H:
            failures.append(f"the generated JPEG is not a valid {JPEG_W}x{JPEG_H} JPEG: {st} {err}")
            return
        cams = [kp.TestCamera(work, "cam264", "h264", "baichuan", "aes"),
                kp.TestCamera(work, "cam265", "h265", "baichuan", "aes")]
        k = kp.Keeppeek(config=eb.camera_config(cams))
        k.wait_running(timeout=30)
        token = eb.api_token(k)
        report["data_fs"] = pc.fs_type(k.dir)

        # 1. server start through first durable commit.
        report["quiet_check_starts"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(a.wait_quiet,
                                                                                            a.max_busy)))
        starts = []
        for i in range(a.starts):
            if k.stop() is None:
                failures.append(f"start {i + 1}: keeppeekd did not stop cleanly")
            t0 = eb.relaunch(kp, k)
            t1, attempts, t_conn, outcomes = first_commit(k.port, token, "cam264", f"start-{i + 1}", 30.0, a.form)
            if t1 is None:
                failures.append(f"start {i + 1}: no durable commit within 30 s ({attempts} attempts: {outcomes})")
                return
            starts.append({"ms": ms(t0, t1), "listening_ms": ms(t0, t_conn), "attempts": attempts,
                           "failed_attempts": outcomes})
            k.wait_running(timeout=30)
        report["start_samples"] = starts
        if not wait_streaming(kp, k, 2, 20.0):
            failures.append(f"the two sub streams were not streaming within 20 s: {kp.cameras(k)}")
            return
        report["cameras"] = {n: {s["name"]: {kk: s.get(kk) for kk in ("codec", "width", "height", "state")}
                                 for s in c["streams"]} for n, c in kp.cameras(k).items()}
        time.sleep(a.settle)

        # 2. RSS before the measured client.
        report["quiet_check"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(a.wait_quiet, a.max_busy)))
        pids = eb.kp_pids(k)
        status0 = k.status()
        report["load_before"] = pc.loadavg()
        mon0 = eb.RssMonitor(pids)
        mon0.start()
        time.sleep(20 * 0.05)
        mon0.finish()
        rss_before = mon0.series()

        # 3. the baseline.
        mach0, self0 = pc.cpu_jiffies(), os.times()
        cpu0 = {n: eb.cpu_ticks(p) for n, p in pids.items()}
        sub = eb.Subscriber(kp_ws, k.port, token)
        sub.start()
        api = eb.Api(k.port, token)
        eb.wait_live_subscribers(api, 1)
        now_ms = int(time.time() * 1000)
        baseline = []
        for i in range(a.samples):
            eid = f"ea-envelope-{i + 1:02d}"
            st_, ans, t0, t1 = eb.publish(api, eb.event_body(eid, 1, "cam264", now_ms + i * 1000,
                                                             attrs={"bench": "external-analysis baseline"},
                                                             form=a.form))
            if st_ != 200 or not isinstance(ans, dict) or ans.get("id") != eid or ans.get("revision") != 1:
                failures.append(f"baseline {eid}: HTTP {st_}: {ans}")
                return
            sub.wait_event(eid, 1, False, a.live_timeout)
            baseline.append(ms(t0, t1))
        report["baseline_ms"] = baseline

        # 4. the result: revisions of one event with the 447,204-byte JPEG.
        mon1 = eb.RssMonitor(pids)
        mon1.start()
        eid = "ea-jpeg"
        rows = []
        start_ms = int(time.time() * 1000)
        for r in range(1, a.samples + 1):
            body = eb.event_body(eid, r, "cam264", start_ms, jpeg=jpegs[r - 1],
                                 attrs={"bench": "external-analysis jpeg"}, form=a.form)
            st_, ans, t0, t1 = eb.publish(api, body)
            if st_ != 200 or not isinstance(ans, dict) or ans.get("revision") != r:
                failures.append(f"revision {r}: HTTP {st_}: {ans}")
                break
            env, got, tl, wall, skipped = sub.wait_event(eid, r, True, a.live_timeout)
            row = {"revision": r, "publish_to_commit_ms": ms(t0, t1), "publish_to_live_ms": ms(t0, tl),
                   "committed_ms": ans.get("committed_ms"),
                   "commit_to_live_ms": round(wall - ans["committed_ms"], 3)
                   if isinstance(ans.get("committed_ms"), int) else None,
                   "live_before_ack": tl < t1, "skipped_messages": skipped, "request_bytes": len(body[0])}
            if got != jpegs[r - 1]:
                failures.append(f"revision {r}: the live JPEG differs from the published one "
                                f"({len(got)} bytes, sha256 {hashlib.sha256(got).hexdigest()[:16]})")
            ev = env.get("event", {})
            if ev.get("jpeg_width") != JPEG_W or ev.get("jpeg_height") != JPEG_H:
                failures.append(f"revision {r}: live envelope says {ev.get('jpeg_width')}x{ev.get('jpeg_height')}")
            if row["commit_to_live_ms"] is None:
                failures.append(f"revision {r}: the acknowledgement has no integer committed_ms: {ans}")
            rows.append(row)
        mon1.finish()
        self1, mach1 = os.times(), pc.cpu_jiffies()
        cpu1 = {n: eb.cpu_ticks(p) for n, p in pids.items()}
        report["load_after"] = pc.loadavg()
        report["revisions"] = rows
        hz = os.sysconf("SC_CLK_TCK")
        busy = (mach1[0] - mach0[0]) / hz
        driver = (self1.user + self1.system) - (self0.user + self0.system)
        kp_cpu = {n: round((cpu1[n] - cpu0[n]) / hz, 2) for n in pids if cpu0.get(n) is not None and cpu1.get(n)}
        report["machine_cpu_during"] = {"busy_cpu_s": round(busy, 2),
                                        "steal_cpu_s": round((mach1[1] - mach0[1]) / hz, 2),
                                        "driver_cpu_s": round(driver, 2), "keeppeek_cpu_s": kp_cpu,
                                        "other_cpu_s": round(max(0.0, busy - sum(kp_cpu.values()) - driver), 2)}
        rss_during = mon1.series()
        report["rss"] = {"before": pc.summary(rss_before), "during": pc.summary(rss_during),
                         "monitor_before": mon0.describe(), "monitor_during": mon1.describe(),
                         "per_process_during": {n: pc.summary(mon1.series(n)) for n in pids},
                         "per_process_before": {n: pc.summary(mon0.series(n)) for n in pids},
                         "pids": pids}

        # Checks of the work, and the server's own counters.
        status, snap, _ = api.request("GET", f"{eb.EVENTS_PATH}/{eid}/snapshot")
        report["snapshot_matches_last_revision"] = status == 200 and snap == jpegs[len(rows) - 1]
        if not report["snapshot_matches_last_revision"]:
            failures.append(f"GET snapshot of {eid}: HTTP {status}, {len(snap)} bytes, not the last revision's JPEG")
        status, found, _ = api.request("GET", f"{eb.EVENTS_PATH}?camera=cam264&q=baseline&limit=500")
        n_found = len(json.loads(found).get("events", [])) if status == 200 else None
        report["search_baseline_found"] = n_found
        if n_found != a.samples:
            failures.append(f"search camera=cam264 q=baseline: HTTP {status}, {n_found} events, want {a.samples}")
        status, text, _ = api.request("GET", "/metrics")
        if status == 200:
            m = eb.parse_metrics(text.decode("utf-8", "replace"))
            report["metrics_live"] = {kk: v for kk, v in m.items() if "live" in kk or "event" in kk}
            report["metrics_rss"] = {kk: v for kk, v in m.items() if "rss" in kk}
            hw_items, keys_i = eb.metric_sum(m, a.hwm_items_metric)
            hw_bytes, keys_b = eb.metric_sum(m, a.hwm_bytes_metric)
            report["queue_high_water"] = {"items": int(hw_items) if keys_i else None, "items_series": keys_i,
                                          "bytes": int(hw_bytes) if keys_b else None, "bytes_series": keys_b}
            lost, keys_l = eb.metric_sum(m, a.dropped_metric)
            report["live_lost"] = {"sum": lost, "series": {kk: m[kk] for kk in keys_l}}
            if lost:
                failures.append(f"/metrics counts {lost:g} lost live deliveries: {report['live_lost']['series']}")
            if not keys_i or not keys_b:
                failures.append(f"/metrics has no live queue high-water series matching "
                                f"{a.hwm_items_metric!r} / {a.hwm_bytes_metric!r}")
        else:
            failures.append(f"GET /metrics: HTTP {status}")
        status1 = k.status()
        for w in kp.WORKERS:
            if status1[w]["pid"] != status0[w]["pid"] or status1[w]["restarts"] != status0[w]["restarts"]:
                failures.append(f"{w} restarted during the measurement ({status0[w]} -> {status1[w]})")
        if sub.error or sub.closed or sub.bad or sub.resyncs:
            failures.append(f"live subscriber: error {sub.error}, closed {sub.closed}, resyncs {sub.resyncs}, "
                            f"protocol {sub.bad[:3]}")
    except AssertionError as e:
        failures.append(str(e))
    finally:
        if sub is not None:
            sub.close()
        if api is not None:
            api.close()
        for c in cams:
            c.kill()
        if k is not None:
            if failures and a.keep:
                print(f"keeping {k.dir} and {work}", file=sys.stderr)
                k.stop()
            else:
                k.cleanup()
        if not (failures and a.keep):
            shutil.rmtree(work, ignore_errors=True)


def summarize(report):
    s = {}
    if report.get("baseline_ms"):
        s["baseline_ms"] = pc.summary(report["baseline_ms"])
    rows = report.get("revisions") or []
    if rows:
        s["jpeg_publish_to_commit_ms"] = pc.summary([r["publish_to_commit_ms"] for r in rows])
        s["commit_to_live_ms"] = pc.summary([r["commit_to_live_ms"] for r in rows
                                             if r["commit_to_live_ms"] is not None])
        s["publish_to_live_ms"] = pc.summary([r["publish_to_live_ms"] for r in rows])
    if report.get("start_samples"):
        s["start_to_commit_ms"] = pc.summary([x["ms"] for x in report["start_samples"]])
        s["start_to_listening_ms"] = pc.summary([x["listening_ms"] for x in report["start_samples"]])
    rss = report.get("rss")
    if rss and rss["before"]["n"] and rss["during"]["n"]:
        s["rss_p95_delta_bytes"] = rss["during"]["p95"] - rss["before"]["p95"]
    report["summary"] = s
    checks = [("jpeg_publish_to_commit_ms", "p95"), ("commit_to_live_ms", "p95"), ("start_to_commit_ms", "p95")]
    for key, stat in checks:
        v = s.get(key, {}).get(stat)
        if v is None:
            report["failures"].append(f"{key}: not measured")
        elif v > BUDGETS[key]:
            report["failures"].append(f"{key} {stat} {v} ms is over its {BUDGETS[key]:,.0f} ms budget")
    d = s.get("rss_p95_delta_bytes")
    if d is None:
        report["failures"].append("RSS p95 delta: not measured")
    elif d > BUDGETS["rss_p95_delta_bytes"]:
        report["failures"].append(f"RSS p95 delta {d:,} bytes is over its {BUDGETS['rss_p95_delta_bytes']:,} budget")
    for key in ("during", "before"):
        n = (rss or {}).get(key, {}).get("n", 0)
        if rss and not 20 <= n <= 64:
            report["failures"].append(f"RSS {key}: {n} observations, want 20..64")


def markdown(rep):
    s = rep.get("summary", {})
    j = rep.get("jpeg", {})

    def row(label, key, delta=None, budget=None):
        v = s.get(key)
        if not v or not v.get("n"):
            return f"| {label} | - | - | - | {budget or 'N/A'} |"
        d = "baseline" if delta is None else delta if isinstance(delta, str) else pc.fmt(v["p95"] - delta, 3)
        return f"| {label} | {pc.fmt(v['p50'], 3)} | {pc.fmt(v['p95'], 3)} | {d} | {budget or 'N/A'} |"
    bp95 = s.get("baseline_ms", {}).get("p95")
    bd = "-" if bp95 is None else bp95
    out = [f"# external-analysis ({rep['label']})", "",
           f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}. Build {rep['build']}.",
           f"Two keeppeek-test-camera processes (Baichuan TCP, AES): cam264 (H.264) and cam265 (H.265), sub "
           f"stream 640x360 only; {rep['samples']} samples per path, {rep['starts']} starts; nearest-rank "
           f"percentiles; publication form {rep['form']} on one keep-alive connection; one live WebSocket subscriber "
           f"(Bearer token).", "",
           f"JPEG: {j.get('bytes', '-'):,} bytes, {j.get('width')}x{j.get('height')}, {j.get('source')} "
           f"(MJPEG q {j.get('mjpeg_q')}, {j.get('encoded_bytes', 0):,} bytes encoded + COM padding), decodes: "
           f"{j.get('ffmpeg_decodes')}, {j.get('distinct_revisions')} distinct revisions.", "",
           "| path | p50 ms | p95 ms | p95 delta ms | p95 budget ms |", "| --- | ---: | ---: | ---: | ---: |",
           row("Envelope-only publication baseline", "baseline_ms"),
           row("JPEG publication through commit", "jpeg_publish_to_commit_ms", bd, "2,000"),
           row("Commit through complete live fan-out", "commit_to_live_ms", bd, "2,500"),
           row("Server start through first durable commit", "start_to_commit_ms", "N/A", "2,000"),
           row("(JPEG publication through live JPEG, for scale)", "publish_to_live_ms", bd),
           row("(Server start through webd accepting TCP, for scale)", "start_to_listening_ms", "N/A"), ""]
    fails = {}
    for x in rep.get("start_samples", []):
        for kk, v in x["failed_attempts"].items():
            fails[kk] = fails.get(kk, 0) + v
    if fails:
        out += ["Attempts before the first commit, over all starts: " +
                ", ".join(f"{kk} × {v}" for kk, v in sorted(fails.items())) + ".", ""]
    rss = rep.get("rss")
    if rss:
        b, d = rss["before"], rss["during"]
        out += [f"RSS of every KeepPeek process together (keeppeekd + 4 workers), "
                f"{rss['monitor_before']['period_s']} s "
                f"period: before the client {b['n']} observations, p50 {pc.fmt(b['p50'])} p95 {pc.fmt(b['p95'])} "
                f"bytes; during the JPEG revisions {d['n']} observations (retained period "
                f"{rss['monitor_during']['retained_period_s']} s over {rss['monitor_during']['raw_samples']} samples), "
                f"p50 {pc.fmt(d['p50'])} p95 {pc.fmt(d['p95'])} max {pc.fmt(d['max'])} bytes. "
                f"p95 delta {pc.fmt(s.get('rss_p95_delta_bytes'))} bytes against {BUDGETS['rss_p95_delta_bytes']:,}.",
                "", "| process | before p95 MiB | during p50 MiB | during p95 MiB | during max MiB |",
                "| --- | ---: | ---: | ---: | ---: |"]
        for n in rss["pids"]:
            pb, pd = rss["per_process_before"][n], rss["per_process_during"][n]
            if pd.get("n"):
                out.append(f"| {n} | {pb.get('p95', 0) / MIB:.2f} | {pd['p50'] / MIB:.2f} | {pd['p95'] / MIB:.2f} | "
                           f"{pd['max'] / MIB:.2f} |")
        out.append("")
    hw = rep.get("queue_high_water")
    if hw:
        out += [f"Live queue high-water marks (/metrics): {hw['items']} commands (bound 64), {pc.fmt(hw['bytes'])} "
                f"reserved bytes (bound 8,454,144); series {', '.join(hw['items_series'] + hw['bytes_series'])}.", ""]
    if "machine_cpu_during" in rep:
        mc = rep["machine_cpu_during"]
        out += [f"Load average before/after: {rep['load_before'][0]:.2f} / {rep['load_after'][0]:.2f}; whole-machine "
                f"busy CPU during baseline + revisions {mc['busy_cpu_s']} s: KeepPeek "
                f"{sum(mc['keeppeek_cpu_s'].values()):.2f} s, this runner {mc['driver_cpu_s']} s, other processes "
                f"{mc['other_cpu_s']} s (steal {mc['steal_cpu_s']} s). Quiet check before measuring: "
                f"{rep['quiet_check']['busy_cores']} busy cores after waiting {rep['quiet_check']['waited_s']} s.", ""]
    out.append(f"Checks: snapshot = last revision's JPEG: {rep.get('snapshot_matches_last_revision')}; search found "
               f"{rep.get('search_baseline_found')} of {rep['samples']} baseline events.")
    out.append("")
    out.append("Result: " + ("all checks passed, every budget met." if not rep["failures"] else
                             "FAILED:\n\n" + "\n".join("* " + x for x in rep["failures"])))
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)), help="source tree")
    ap.add_argument("--samples", type=int, default=20, help="publications per path (default 20)")
    ap.add_argument("--starts", type=int, default=20, help="server starts measured (default 20)")
    ap.add_argument("--form", default="protobuf", choices=["protobuf", "json", "multipart"],
                    help="publication form for every path (default protobuf: the JPEG as raw bytes)")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds after streaming before measuring")
    ap.add_argument("--live-timeout", type=float, default=10.0, help="seconds to wait for each live delivery")
    ap.add_argument("--hwm-items-metric", default=r"^keeppeek_webd_live_queue_commands_high_water$",
                    help="regular expression naming the live queue's command high-water series in /metrics")
    ap.add_argument("--hwm-bytes-metric", default=r"^keeppeek_webd_live_queue_bytes_high_water$",
                    help="regular expression naming the live queue's byte high-water series in /metrics")
    ap.add_argument("--dropped-metric", default=r"^(keeppeek_webd_live_(dropped|resyncs|jpeg_omitted)_total|"
                    r"keeppeek_recorderd_event_fanout_lost_total)$",
                    help="regular expression naming every counter of lost live deliveries in /metrics")
    ap.add_argument("--wait-quiet", type=float, default=120.0,
                    help="before measuring, wait at most this long for the machine to be idle (--max-busy)")
    ap.add_argument("--max-busy", type=float, default=0.3, help="busy cores that count as idle for --wait-quiet")
    ap.add_argument("--keep", action="store_true", help="keep the directories of a failed run")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    os.environ["KP_BUILD_ROOT"] = a.build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402  (test/integration/kp.py: starts the real programs from the build tree)
    import kp_ws  # noqa: E402
    report = {"benchmark": "external-analysis", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "build": a.build, "samples": a.samples,
              "starts": a.starts, "form": a.form,
              "budgets": BUDGETS, "failures": []}
    run(kp, kp_ws, a, report)
    summarize(report)
    md = markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(a.build, "perf"), "external-analysis", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
