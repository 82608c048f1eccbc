#!/usr/bin/env python3
"""rtc-fanout: one 1080p H.264 stream to N concurrent headless WebRTC receivers.

    python3 perf/rtc-fanout/run.py --build build [--quick] [--viewers 1,10,50,100]

Starts one keeppeek-test-camera (RTSP; main = the 1920x1080 H.264 fixture, 25 fps, 2
Mbit/s, a keyframe every second) and the real keeppeekd from the build tree, waits until
the main stream reaches rtcd, then measures rtcd idle (camera streaming, no viewer) over
the window: that is the baseline, in the same run. For each N it starts
BUILD/perf/rtc-fanout-receiver N (N receivers in one process: libnice controlling agent,
OpenSSL DTLS client with use_srtp, libsrtp2; rtc-fanout/receiver.c), sends each
receiver's offer over webd's /api/v1/rtc WebSocket (live, main stream; 64 sessions per
WebSocket and principal, the admission limit), hands rtcd's answers back, waits until
every receiver has DTLS-SRTP up, lets it run for the warm-up (excluded), then measures a
fixed window: rtcd's CPU seconds from /proc/PID/stat utime+stime deltas, per-second rtcd
CPU samples and rtcd RSS every 200 ms (nearest-rank p50/p95), and counter deltas over the
whole window: packets, bytes, frames and IDR starts each receiver decrypted, RTP sequence
gaps (packets lost: the receivers send no NACK), rtcd's packets sent and keyframe drops.
CPU per viewer = (rtcd CPU with N viewers - rtcd CPU idle) / N. Checks: every receiver
reached DTLS-SRTP, decrypted packets and at least one IDR in the window, and no SRTP
failure. Reports: BUILD/perf/rtc-fanout.{json,md}. Exit status 1 when a check fails.
Method: docs/perf/METHODOLOGY.md."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PER_SOCKET = 64  # sessions per principal: one WebSocket and token per 64 receivers

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[rtc]
udp_ports = 44000-44499
"""


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[11]) + int(fields[12])  # utime + stime, fields 14 and 15 of proc(5)


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (FileNotFoundError, ProcessLookupError):
        return None


class Sampler(threading.Thread):
    """rtcd's RSS every `period` s and its CPU per second, on absolute deadlines."""

    def __init__(self, pid, period=0.2):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.rss, self.cpu_per_s = [], []
        self.stop_ev = threading.Event()

    def run(self):
        nxt = t_cpu = time.monotonic()
        c_prev = cpu_ticks(self.pid)
        while not self.stop_ev.is_set():
            v = rss_bytes(self.pid)
            if v is not None:
                self.rss.append(v)
            now = time.monotonic()
            if now - t_cpu >= 1.0:
                c = cpu_ticks(self.pid)
                if c is not None and c_prev is not None:
                    self.cpu_per_s.append((c - c_prev) / HZ / (now - t_cpu))
                c_prev, t_cpu = c, now
            nxt += self.period
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))


class Receivers:
    """BUILD/perf/rtc-fanout-receiver N, spoken to over its stdin/stdout."""

    def __init__(self, path, n, stderr):
        self.n = n
        self.p = subprocess.Popen([path, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                  text=True, bufsize=1)

    def offers(self, timeout=30):
        got = {}
        end = time.monotonic() + timeout
        while len(got) < self.n and time.monotonic() < end:
            line = self.p.stdout.readline()
            if not line:
                break
            kind, idx, sdp = line.rstrip("\n").split(" ", 2)
            if kind == "offer":
                got[int(idx)] = sdp.replace("\\n", "\r\n")
        return got

    def answer(self, idx, sdp):
        self.p.stdin.write(f"answer {idx} " + sdp.replace("\r\n", "\\n").replace("\n", "\\n") + "\n")
        self.p.stdin.flush()

    def stats(self):
        self.p.stdin.write("stats\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if not line or line.strip() == "end":
                return out
            if line.startswith("stats "):
                out.append(json.loads(line[6:]))

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def udp_rcvbuf_errors():
    """The kernel's count of UDP datagrams dropped because a receive buffer was full
    (machine-wide, /proc/net/snmp Udp RcvbufErrors)."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def metric(k, token, name):
    st, _, body = k.http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    if st != 200:
        return None
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def signal_all(kp, kp_ws, k, tokens, offers):
    """Sends every offer (live, main stream), returns ({idx: answer sdp}, [errors], sockets)."""
    socks, answers, errors = [], {}, []
    idxs = sorted(offers)
    for s in range(0, len(idxs), PER_SOCKET):
        ws = kp_ws.connect("127.0.0.1", k.web_port, "/api/v1/rtc",
                           {"Authorization": "Bearer " + tokens[s // PER_SOCKET]})
        socks.append(ws)
        part = idxs[s:s + PER_SOCKET]
        for i in part:
            ws.send_text(json.dumps({"type": "offer", "sid": f"r{i}", "sdp": offers[i], "camera": "cam",
                                     "stream": "main", "mode": "live"}))
        want = {f"r{i}" for i in part}
        end = time.monotonic() + 20
        while want and time.monotonic() < end:
            kind, data = ws.recv(timeout=max(0.1, end - time.monotonic()))
            if kind != "text":
                errors.append(f"signaling socket: {kind} {data!r}")
                break
            m = json.loads(data)
            if m.get("sid") in want and m["type"] in ("answer", "error"):
                want.discard(m["sid"])
                if m["type"] == "answer":
                    answers[int(m["sid"][1:])] = m["sdp"]
                else:
                    errors.append(f"{m['sid']}: {m['code']}: {m['message']}")
        errors += [f"{sid}: no answer within 20 s" for sid in sorted(want)]
    return answers, errors, socks


def drain(socks, stop):
    """Reads (and drops) rtcd's state messages so webd's send queues never fill."""
    while not stop.is_set():
        for ws in socks:
            try:
                ws.recv(timeout=0.05)
            except Exception:  # noqa: BLE001 (timeouts; a closed socket shows in the checks)
                pass


def run_n(kp, kp_ws, k, rtcd, procs, tokens, admin, n, args, log):
    failures = []
    res = {"viewers": n}
    rx = Receivers(args.receiver, n, log)
    socks, stop, drainer = [], threading.Event(), None
    try:
        offers = rx.offers()
        if len(offers) != n:
            failures.append(f"N={n}: {len(offers)} of {n} receivers gathered candidates")
            return res, failures
        t_sig = time.monotonic()
        answers, errors, socks = signal_all(kp, kp_ws, k, tokens, offers)
        res["signaling_s"] = round(time.monotonic() - t_sig, 2)
        if errors:
            failures.append(f"N={n}: {len(errors)} offers not answered, first: {errors[0]}")
            return res, failures
        for i, sdp in answers.items():
            rx.answer(i, sdp)
        drainer = threading.Thread(target=drain, args=(socks, stop), daemon=True)
        drainer.start()

        def all_streaming():
            st = rx.stats()
            return st if all(s["state"] in ("streaming", "failed") for s in st) else None
        st = kp.wait_for(all_streaming, 30, 0.2) or rx.stats()
        bad = [s for s in st if s["state"] != "streaming"]
        if bad:
            failures.append(f"N={n}: {len(bad)} receivers did not reach DTLS-SRTP, first: {bad[0]}")
            return res, failures
        res["connect_ms"] = pc.summary([s["connect_ms"] for s in st])
        time.sleep(args.warmup)

        m0 = {x: metric(k, admin, f"keeppeek_rtc_{x}") for x in ("packets_sent_total", "keyframe_drops_total")}
        sampler = Sampler(rtcd)
        s0 = {s["i"]: s for s in rx.stats()}
        res["load_before"] = pc.loadavg()
        others = {**procs, "receivers": rx.p.pid}
        o0, mach0, self0 = {nm: cpu_ticks(pid) for nm, pid in others.items()}, pc.cpu_jiffies(), os.times()
        u0 = udp_rcvbuf_errors()
        c0, t0 = cpu_ticks(rtcd), time.monotonic()
        sampler.start()
        time.sleep(args.window)
        c1, t1 = cpu_ticks(rtcd), time.monotonic()
        u1 = udp_rcvbuf_errors()
        o1, mach1, self1 = {nm: cpu_ticks(pid) for nm, pid in others.items()}, pc.cpu_jiffies(), os.times()
        res["load_after"] = pc.loadavg()
        s1 = {s["i"]: s for s in rx.stats()}
        sampler.stop_ev.set()
        sampler.join()
        m1 = {x: metric(k, admin, f"keeppeek_rtc_{x}") for x in m0}
        window = t1 - t0
        res["window_s"] = round(window, 3)
        cpu = (c1 - c0) / HZ
        res["rtcd_cpu_s"] = round(cpu, 3)
        res["rtcd_cores"] = round(cpu / window, 4)
        res["rtcd_cores_per_s"] = pc.summary([round(v, 4) for v in sampler.cpu_per_s])
        res["rtcd_rss_mib"] = {kk: (v if kk == "n" else round(v / 1048576, 2))
                               for kk, v in pc.summary(sampler.rss).items()}
        res["cpu_s"] = {nm: round((o1[nm] - o0[nm]) / HZ, 3) for nm in others
                        if o0.get(nm) is not None and o1.get(nm) is not None}
        driver = (self1.user + self1.system) - (self0.user + self0.system)
        busy = (mach1[0] - mach0[0]) / HZ
        res["machine"] = {"busy_cpu_s": round(busy, 2), "capacity_cpu_s": round(window * os.cpu_count(), 2),
                          "steal_cpu_s": round((mach1[1] - mach0[1]) / HZ, 2), "driver_cpu_s": round(driver, 3),
                          "other_cpu_s": round(max(0.0, busy - cpu - sum(res["cpu_s"].values()) - driver), 2)}
        per = {}
        for i in s1:
            a, b = s0[i], s1[i]
            per[i] = {f: b[f] - a[f] for f in ("packets", "bytes", "frames", "idr_starts", "expected", "lost",
                                               "srtp_failures")}
            per[i]["state"] = b["state"]
        res["receivers"] = {f: pc.summary([p[f] for p in per.values()])
                            for f in ("packets", "bytes", "frames", "idr_starts", "lost")}
        tot = {f: sum(p[f] for p in per.values()) for f in ("packets", "bytes", "expected", "lost",
                                                            "srtp_failures", "frames")}
        res["totals"] = tot
        res["loss_pct"] = round(100.0 * tot["lost"] / tot["expected"], 4) if tot["expected"] else None
        res["udp_rcvbuf_errors"] = u1 - u0
        res["delivered_mbit_s"] = round(tot["bytes"] * 8 / window / 1e6, 2)
        res["rtcd_packets_sent"] = (m1["packets_sent_total"] or 0) - (m0["packets_sent_total"] or 0)
        res["rtcd_keyframe_drops"] = (m1["keyframe_drops_total"] or 0) - (m0["keyframe_drops_total"] or 0)
        for i, p in per.items():
            if p["state"] != "streaming" or p["packets"] <= 0 or p["idr_starts"] <= 0 or p["srtp_failures"]:
                failures.append(f"N={n}: receiver {i} in the window: {p}")
                break
    finally:
        stop.set()
        if drainer:
            drainer.join()
        for ws in socks:
            try:
                ws.close()
            except OSError:
                pass
        rx.close()
    kp.wait_for(lambda: metric(k, admin, "keeppeek_rtc_sessions") == 0, 15, 0.2)
    return res, failures


def measure_idle(rtcd, window):
    sampler = Sampler(rtcd)
    c0, t0 = cpu_ticks(rtcd), time.monotonic()
    sampler.start()
    time.sleep(window)
    c1, t1 = cpu_ticks(rtcd), time.monotonic()
    sampler.stop_ev.set()
    sampler.join()
    cpu = (c1 - c0) / HZ
    return {"viewers": 0, "window_s": round(t1 - t0, 3), "rtcd_cpu_s": round(cpu, 3),
            "rtcd_cores": round(cpu / (t1 - t0), 4),
            "rtcd_cores_per_s": pc.summary([round(v, 4) for v in sampler.cpu_per_s]),
            "rtcd_rss_mib": {kk: (v if kk == "n" else round(v / 1048576, 2))
                             for kk, v in pc.summary(sampler.rss).items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)), help="source tree")
    ap.add_argument("--receiver", help="rtc-fanout-receiver (default BUILD/perf/rtc-fanout-receiver)")
    ap.add_argument("--viewers", default="1,10,50,100", help="comma-separated N values (at most 1,024)")
    ap.add_argument("--window", type=float, help="measured seconds (default 30, --quick 10)")
    ap.add_argument("--warmup", type=float, help="excluded seconds after every receiver is up (default 5, "
                    "--quick 3)")
    ap.add_argument("--quick", action="store_true", help="10 s windows after 3 s warm-up")
    ap.add_argument("--label", default="latest")
    a = ap.parse_args()
    a.window = a.window or (10.0 if a.quick else 30.0)
    a.warmup = a.warmup if a.warmup is not None else (3.0 if a.quick else 5.0)
    build = os.path.abspath(a.build)
    a.receiver = a.receiver or os.path.join(build, "perf", "rtc-fanout-receiver")
    os.environ["KP_BUILD_ROOT"] = build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402  (test/integration/kp.py: the real programs from the build tree)
    import kp_ws  # noqa: E402
    viewers = [int(x) for x in a.viewers.split(",")]
    report = {"benchmark": "rtc-fanout", "label": a.label, "machine": pc.machine(),
              "revision": pc.git_revision(a.source), "build": build, "window_s": a.window, "warmup_s": a.warmup,
              "stream": "test camera main: 1920x1080 H.264 baseline, 25 fps, 2 Mbit/s, keyframe every 1 s (RTSP)",
              "runs": [], "failures": []}
    work = tempfile.mkdtemp(prefix="kp-perf-rtc-")
    cam = kp.TestCamera(work, "cam", "h264", "rtsp")
    k = None
    log = open(os.path.join(work, "receiver.log"), "w")
    try:
        k = kp.Keeppeek(config=CONFIG + f'[camera "cam"]\nurl = {cam.url()}\n')
        k.wait_running(timeout=30)
        admin = k.token("admin")
        if not kp.wait_for(lambda: (c := kp.cameras(k)) and c["cam"]["streams"][0]["state"] == "streaming", 20):
            report["failures"].append("the camera's main stream did not start")
        elif not kp.wait_for(lambda: (metric(k, admin, "keeppeek_rtc_live_streams") or 0) >= 1, 15, 0.2):
            report["failures"].append("rtcd saw no live access units")
        else:
            st = k.status()
            rtcd = st["rtcd"]["pid"]
            procs = {"keeppeekd": k.proc.pid, "camera": cam.proc.pid,
                     **{w: st[w]["pid"] for w in kp.WORKERS if w != "rtcd"}}
            tokens = [k.token("viewer") for _ in range((max(viewers) + PER_SOCKET - 1) // PER_SOCKET)]
            time.sleep(a.warmup)
            report["quiet_check"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(60, 0.3)))
            print(f"idle baseline: {a.window:g} s", flush=True)
            report["baseline"] = measure_idle(rtcd, a.window)
            for n in viewers:
                print(f"N={n}: load average {pc.loadavg()}", flush=True)
                res, fails = run_n(kp, kp_ws, k, rtcd, procs, tokens, admin, n, a, log)
                if "rtcd_cpu_s" in res:
                    extra = res["rtcd_cores"] - report["baseline"]["rtcd_cores"]
                    res["cpu_ms_per_s_per_viewer"] = round(1000 * extra / n, 3)
                report["runs"].append(res)
                report["failures"] += fails
                for f in fails:
                    print("FAIL: " + f, file=sys.stderr, flush=True)
            if k.status()["rtcd"]["pid"] != rtcd:
                report["failures"].append("rtcd restarted during the benchmark")
    finally:
        log.close()
        cam.kill()
        if k is not None:
            k.cleanup()
    md = markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(build, "perf"), "rtc-fanout", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


def markdown(rep):
    out = [f"# rtc-fanout ({rep['label']})", "",
           f"Machine: {pc.machine_md(rep['machine'])}. Revision {rep['revision']}.",
           f"Stream: {rep['stream']}. Window {rep['window_s']:g} s after {rep['warmup_s']:g} s warm-up (every "
           "receiver up); rtcd CPU from /proc/PID/stat deltas over the window; CPU per viewer = (rtcd with N - "
           "rtcd idle) / N, in CPU ms per second; rtcd RSS sampled every 200 ms; nearest-rank percentiles. "
           "Receivers send no RTCP, so lost = RTP sequence gaps; UDP receive-buffer drops = delta of the kernel's "
           "Udp RcvbufErrors over the window (machine-wide): loopback loses datagrams only there.", ""]
    b = rep.get("baseline")
    out += ["| N | rtcd cores (window) | per-second p50 / p95 | CPU ms/s per viewer | rtcd RSS p50 / p95 MiB | "
            "Mbit/s delivered | packets decrypted | lost (%) | UDP receive-buffer drops (machine) | rtcd keyframe drops | "
            "IDR starts per receiver min | connect ms p50 / p95 |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    if b:
        out.append(f"| 0 (idle) | {b['rtcd_cores']:.4f} | {pc.fmt(b['rtcd_cores_per_s'].get('p50'), 4)} / "
                   f"{pc.fmt(b['rtcd_cores_per_s'].get('p95'), 4)} | - | {pc.fmt(b['rtcd_rss_mib'].get('p50'))} / "
                   f"{pc.fmt(b['rtcd_rss_mib'].get('p95'))} | - | - | - | - | - | - | - |")
    for r in rep["runs"]:
        if "rtcd_cpu_s" not in r:
            out.append(f"| {r['viewers']} | run failed | | | | | | | | | | |")
            continue
        out.append(f"| {r['viewers']} | {r['rtcd_cores']:.4f} | {pc.fmt(r['rtcd_cores_per_s'].get('p50'), 4)} / "
                   f"{pc.fmt(r['rtcd_cores_per_s'].get('p95'), 4)} | {r['cpu_ms_per_s_per_viewer']:.2f} | "
                   f"{pc.fmt(r['rtcd_rss_mib'].get('p50'))} / {pc.fmt(r['rtcd_rss_mib'].get('p95'))} | "
                   f"{r['delivered_mbit_s']} | {r['totals']['packets']:,} | {r['totals']['lost']:,} "
                   f"({r['loss_pct']}) | {r['udp_rcvbuf_errors']:,} | {int(r['rtcd_keyframe_drops'])} | {r['receivers']['idr_starts']['min']} | "
                   f"{pc.fmt(r['connect_ms'].get('p50'), 1)} / {pc.fmt(r['connect_ms'].get('p95'), 1)} |")
    out += ["", "CPU seconds in the window of the other processes (the receivers share the two cores with rtcd):", "",
            "| N | receivers | ingestd | webd | recorderd | keeppeekd | test camera | runner | other | load "
            "before/after |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rep["runs"]:
        if "cpu_s" not in r:
            continue
        c = r["cpu_s"]
        out.append(f"| {r['viewers']} | " + " | ".join(pc.fmt(c.get(x)) for x in ("receivers", "ingestd", "webd",
                                                                                 "recorderd", "keeppeekd",
                                                                                 "camera")) +
                   f" | {pc.fmt(r['machine']['driver_cpu_s'])} | {pc.fmt(r['machine']['other_cpu_s'])} | "
                   f"{r['load_before'][0]:.2f} / {r['load_after'][0]:.2f} |")
    out.append("")
    out.append("Result: " + ("all checks passed (every receiver reached DTLS-SRTP, decrypted packets and IDRs in "
                             "the window, no SRTP failure)." if not rep["failures"] else
                             "FAILED:\n\n" + "\n".join("* " + x for x in rep["failures"])))
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
