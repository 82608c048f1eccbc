"""live-fanout --native: one window with the C client (perf/live-fanout/native.c) as the
producer and the N subscribers, envelope-only events (issue 16). The runner here starts
keeppeekd and the test camera, waits until webd counts the N subscribers, starts the
schedule, reads webd's /metrics and every KeepPeek process's CPU and RSS at the window's
edges (as run.py does), then takes the client's summary: acknowledgements, lateness,
publish->ack latency and, per subscriber, received / missing / duplicate / foreign events
and an order hash. Fails on any drop, missing, duplicate or unacknowledged delivery,
a differing order, a failed publication, a rate not held in the window, a worker restart."""
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

import perfcommon as pc
import evbench as eb

HZ = os.sysconf("SC_CLK_TCK")


def _line(proc, timeout):
    """One line of the client's stdout within timeout seconds."""
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    if not r:
        raise AssertionError(f"the native client said nothing for {timeout} s")
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"the native client exited (rc {proc.wait()})")
    return line.decode().rstrip("\n")


def run_one_native(kp, n, a):
    failures = []
    work = tempfile.mkdtemp(prefix=f"kp-perf-lfn{n}-")
    cams, k, proc = [], None, None
    res = {"subscribers": n, "rate_per_s": a.rate, "window_s": a.window, "warmup_s": a.warmup,
           "client": "native", "conns": a.conns, "depth": a.depth}
    try:
        cams = [kp.TestCamera(work, "cam264", "h264", "baichuan", "aes")]
        k = kp.Keeppeek(config=eb.camera_config(cams))
        k.wait_running(timeout=30)
        token = eb.api_token(k)
        res["data_fs"] = pc.fs_type(k.dir)
        api = eb.Api(k.port, token)
        pids = eb.kp_pids(k)
        status0 = k.status()
        total_warm = int(round(a.warmup * a.rate))
        total_win = int(round(a.window * a.rate))
        total = total_warm + total_win
        tag = f"n{n}-{int(time.time())}"
        proc = subprocess.Popen([a.native, str(k.port), token, "cam264", tag, repr(a.rate), str(total),
                                 str(a.conns), str(a.depth), str(n), str(total_warm), str(total_win),
                                 "20"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if _line(proc, 30) != "subscribed":
            raise AssertionError("the native client did not subscribe")
        eb.wait_live_subscribers(api, n, 30.0)
        res["quiet_check"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(a.wait_quiet, a.max_busy)))
        res["load_before"] = pc.loadavg()
        t0 = time.monotonic() + 0.2
        proc.stdin.write(f"go {t0!r}\n".encode())
        proc.stdin.flush()
        tw0 = t0 + total_warm / a.rate
        tw1 = tw0 + a.window
        time.sleep(max(0.0, tw0 - time.monotonic()))
        st0, text0, tm0 = api.request("GET", "/metrics")
        mach0 = pc.cpu_jiffies()
        cpu0 = {nm: eb.cpu_ticks(p) for nm, p in pids.items()}
        ccpu0 = eb.cpu_ticks(proc.pid)
        mon = eb.RssMonitor(pids, period=0.25, min_obs=1, max_obs=1 << 20)
        mon.start()
        time.sleep(max(0.0, tw1 - time.monotonic()))
        st1, text1, tm1 = api.request("GET", "/metrics")
        cpu1 = {nm: eb.cpu_ticks(p) for nm, p in pids.items()}
        ccpu1 = eb.cpu_ticks(proc.pid)
        mach1 = pc.cpu_jiffies()
        mon.finish()
        line = _line(proc, 120 + a.window)
        if not line.startswith("summary "):
            raise AssertionError(f"the native client said {line[:200]!r}")
        summ = json.loads(line[len("summary "):])
        proc.wait(timeout=10)
        res["load_after"] = pc.loadavg()
        win = tm1 - tm0
        res["measured_window_s"] = round(win, 3)
        if st0 != 200 or st1 != 200:
            failures.append(f"N={n}: GET /metrics: HTTP {st0} / {st1}")
            return res, failures
        m0 = eb.parse_metrics(text0.decode("utf-8", "replace"))
        m1 = eb.parse_metrics(text1.decode("utf-8", "replace"))
        counters = {}
        for label, rx in (("delivered", a.delivered_metric), ("dropped", a.dropped_metric),
                          ("committed", a.committed_metric)):
            v0, _ = eb.metric_sum(m0, rx)
            v1, keys1 = eb.metric_sum(m1, rx)
            if not keys1:
                failures.append(f"N={n}: /metrics has no series matching {rx!r} ({label})")
                counters[label] = None
                continue
            counters[label] = {"start": v0, "end": v1, "delta": v1 - v0, "series": keys1}
        res["counters"] = counters
        res["metrics_live_end"] = {kk: v for kk, v in m1.items() if "live" in kk}
        # Group commit: passes of the commit thread in the window, their mean time, events per pass.
        cc = {kk: m1.get(kk, 0) - m0.get(kk, 0) for kk in ("keeppeek_recorderd_commit_seconds_count",
                                                           "keeppeek_recorderd_commit_seconds_sum")}
        npass = cc["keeppeek_recorderd_commit_seconds_count"]
        res["commit_passes"] = {"count": npass,
                                "mean_ms": round(cc["keeppeek_recorderd_commit_seconds_sum"] * 1000 / npass, 3)
                                if npass else None,
                                "events_per_pass": round(counters["committed"]["delta"] / npass, 2)
                                if npass and counters.get("committed") else None}
        if counters.get("delivered"):
            res["delivered_per_s"] = round(counters["delivered"]["delta"] / win, 2)
        if counters.get("committed"):
            res["committed_per_s"] = round(counters["committed"]["delta"] / win, 2)
        res["native"] = summ
        res["published_acked_in_window"] = summ["acked_on_time_in_window"]
        res["published_planned_in_window"] = total_win
        res["publish_rate_achieved_per_s"] = round(summ["acked_on_time_in_window"] / a.window, 2)
        res["publish_lateness_ms"] = summ["lateness_ms"]
        res["publish_to_commit_ms"] = summ["publish_to_ack_ms"]
        if summ["failed"] or summ["bad_answers"] or summ["closed_conns"]:
            failures.append(f"N={n}: {summ['failed']} publications failed (status {summ['status']}), "
                            f"{summ['bad_answers']} wrong acknowledgements, {summ['closed_conns']} closed")
        if summ["unsent"]:
            failures.append(f"N={n}: {summ['unsent']} publications were still unsent 1 s after the last was due "
                            "(not sent at all)")
        if summ["acked_on_time_in_window"] < 0.98 * total_win:
            failures.append(f"N={n}: the producer held {summ['acked_on_time_in_window']} of {total_win} "
                            f"publications in the window (target rate {a.rate}/s not held)")
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
        driver = (ccpu1 - ccpu0) / HZ if ccpu0 is not None and ccpu1 is not None else 0.0
        res["machine"] = {"busy_cpu_s": round(busy, 2), "capacity_cpu_s": round(win * os.cpu_count(), 2),
                          "driver_cpu_s": round(driver, 2), "steal_cpu_s": round((mach1[1] - mach0[1]) / HZ, 2),
                          "other_cpu_s": round(max(0.0, busy - procs["total"]["cpu_s"] - driver), 2)}
        subs = summ["subscribers"]
        c = {key: sum(s[key] for s in subs) for key in ("missing", "duplicates", "not_acknowledged", "foreign",
                                                         "binary", "resyncs", "errors", "closed")}
        c["same_order"] = len({s["order_hash"] for s in subs}) <= 1
        c["received_each"] = [s["received"] for s in subs][:64]
        res["client"] = c
        if any(c[key] for key in ("missing", "duplicates", "not_acknowledged", "binary", "resyncs", "errors",
                                  "closed")):
            failures.append(f"N={n}: client checks: {c}")
        if not c["same_order"]:
            failures.append(f"N={n}: subscribers saw the events in different orders")
        if counters.get("dropped") and counters["dropped"]["delta"]:
            failures.append(f"N={n}: /metrics drop counter grew by {counters['dropped']['delta']} in the window")
        d, cm = counters.get("delivered"), counters.get("committed")
        if d and cm and d["delta"] != cm["delta"] * n:
            res["delivered_vs_committed_note"] = ("window edges are read while events are in flight: delivered "
                                                  f"{d['delta']} vs committed {cm['delta']} x {n}")
        status1 = k.status()
        for w in kp.WORKERS:
            if status1[w]["pid"] != status0[w]["pid"] or status1[w]["restarts"] != status0[w]["restarts"]:
                failures.append(f"N={n}: {w} restarted ({status0[w]} -> {status1[w]})")
        api.close()
    except AssertionError as e:
        failures.append(f"N={n}: {e}")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for cam in cams:
            cam.kill()
        if k is not None:
            if failures and a.keep:
                print(f"N={n}: keeping {k.dir} and {work}", flush=True)
                k.stop()
            else:
                k.cleanup()
        if not (failures and a.keep):
            shutil.rmtree(work, ignore_errors=True)
    return res, failures


def markdown_native(rep):
    out = [f"# live-fanout, native client ({rep['label']})", "",
           f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}. Build {rep['build']}.",
           f"{rep['rate']} envelope-only events/s (protobuf, no JPEG) from {rep['conns']} connections × "
           f"{rep['depth']} in flight, warm-up {rep['warmup_s']:g} s excluded, window {rep['window_s']:g} s; "
           "producer and subscribers: perf/live-fanout/native.c; counters from webd's /metrics at the window's "
           "edges; RSS every 0.25 s; nearest-rank percentiles.", "",
           "| N | acked on time in window (planned) | committed Δ | committed/s | delivered Δ | delivered/s | "
           "drops Δ | missing / dup / unacked / resync | publish→ack p50 / p95 ms | lateness p95 ms | "
           "commit passes (mean ms, events each) | RSS total p50 / p95 / max MiB | KeepPeek CPU s (webd, recorderd) | "
           "client CPU s | other CPU s | load before / after |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- | --- | --- | ---: | ---: | --- |"]
    for r in rep["runs"]:
        c = r.get("counters") or {}
        cl, p = r.get("client"), r.get("processes")
        if not p or not cl:
            out.append(f"| {r['subscribers']} | run failed |" + " |" * 14)
            continue
        d, dr, cm = c.get("delivered") or {}, c.get("dropped") or {}, c.get("committed") or {}
        rss = p["total"]["rss"]
        out.append(f"| {r['subscribers']} | {r['published_acked_in_window']:,} ({r['published_planned_in_window']:,}) | "
                   f"{pc.fmt(cm.get('delta'), 0)} | {pc.fmt(r.get('committed_per_s'))} | "
                   f"{pc.fmt(d.get('delta'), 0)} | {pc.fmt(r.get('delivered_per_s'))} | {pc.fmt(dr.get('delta'), 0)} | "
                   f"{cl['missing']} / {cl['duplicates']} / {cl['not_acknowledged']} / {cl['resyncs']} | "
                   f"{pc.fmt(r['publish_to_commit_ms'].get('p50'))} / {pc.fmt(r['publish_to_commit_ms'].get('p95'))} | "
                   f"{pc.fmt(r['publish_lateness_ms'].get('p95'))} | "
                   f"{pc.fmt(r['commit_passes']['count'], 0)} ({pc.fmt(r['commit_passes']['mean_ms'])}, "
                   f"{pc.fmt(r['commit_passes']['events_per_pass'])}) | "
                   f"{rss['p50'] / 1048576:.2f} / {rss['p95'] / 1048576:.2f} / {rss['max'] / 1048576:.2f} | "
                   f"{p['total']['cpu_s']} ({p.get('webd', {}).get('cpu_s', '-')}, "
                   f"{p.get('recorderd', {}).get('cpu_s', '-')}) | {r['machine']['driver_cpu_s']} | "
                   f"{r['machine']['other_cpu_s']} | {r.get('load_before')} / {r.get('load_after')} |")
    out += [""]
    out.append("Result: " + ("zero drops, every delivery checked." if not rep["failures"] else
                             "FAILED:\n\n" + "\n".join("* " + x for x in rep["failures"])))
    out.append("")
    return "\n".join(out)
