#!/usr/bin/env python3
"""worker-restart: kill -9 of each worker under load, until it is `running` again and until
it serves again (SPEC section 14: "back and serving within 1 s"), against a planned restart
(`keeppeekctl restart WORKER`) measured the same way in the same run (SPEC section 13).

    python3 perf/worker-restart/run.py --build build [--kills 20] [--settle 3] [--quick]

Workload: `keeppeekd --demo` from the build tree (one Baichuan H.264 and one RTSP H.265
test camera, main + sub, recorded), `wrk -t 1 -c 50` on GET /healthz for the whole run.
--kills rounds; in each round, for each worker in turn: wait until every worker is
`running` with its links up and serving (below), --settle s, then SIGKILL the worker
(event "kill"); wait again, --settle s, then `keeppeekctl restart WORKER` (event
"planned": SIGTERM, clean exit, spawned again at once). Per event, from the moment before
the signal (or before keeppeekctl is exec'd):

* running: `keeppeekctl status --json` shows the worker `running` with a new pid (polled
  every 10 ms; each poll is an exec of keeppeekctl, 5-10 ms on this machine);
* serving, probed every 10 ms once the old process has exited (a pidfd; so the old
  process never answers a probe, which matters for the planned restart, whose old
  process serves until it exits):
  - webd: GET /healthz answers 200 on a new connection;
  - recorderd: GET /api/v1/coverage (admin token) answers 200: webd relays it to
    recorderd's catalog, and answers 503 while recorderd is away;
  - ingestd: `keeppeekctl cameras --json` shows all four streams `streaming` with a
    frame count below the one read just before the event (the new ingestd counts from 0,
    so the row comes from it and not from the old one's last report);
  - rtcd: an SDP offer for demo-baichuan's main stream on a new /api/v1/rtc WebSocket is
    answered with an SDP answer (then bye).

Why a planned restart between kills: a kill is a first failure (100 ms backoff,
KP_BACKOFF_INITIAL_MS) only when the worker had run KP_BACKOFF_RESET_MS (60 s) since its
last exit, or when its last exit was a planned restart, which sets the failure count to 0
(supervisor/proc.c on_exit_cb, restart_now). Waiting 60 s before each kill would take
80 min for 20 kills of 4 workers; alternating kill and planned restart makes every kill a
first failure in the same state the supervisor is in after 60 s of uptime, and gives the
baseline at the same time. Checked per kill: no "WORKER: restarting in" line in keeppeekd's
log (written only for a longer backoff) and no status poll showing backoff_ms above 100 or
consecutive_failures above 1.

Checks (work really done; a failure exits 1): per event the worker's pid changed, its
restarts counter went up by exactly 1, its last exit says "killed by signal 9" (kill), no
other worker changed pid or restarts counter, and both milestones were reached within
--timeout s; wrk completed requests; kill -> serving p95 of every worker within --budget-ms
(1,000: SPEC 14). Load: 1-minute load average before and after, whole-machine busy CPU and
steal over the run from /proc/stat, and other CPU s = busy - KeepPeek processes (keeppeekd,
its live children and every child it reaped) - wrk - this runner and its keeppeekctl
children. Reports: BUILD/perf/worker-restart.{json,md}. Method: docs/perf/METHODOLOGY.md."""
import argparse
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

WORKERS = ("ingestd", "recorderd", "webd", "rtcd")
RTC_CAMERA = "demo-baichuan"  # the demo's H.264 camera: answered without the transcoder
POLL_S = 0.01
MIN_FRAMES = 50  # 2 s at 25 fps: the new ingestd's first reports count fewer
FP = ":".join(["AB"] * 32)
OFFER_SDP = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
             "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\n"
             "a=ice-ufrag:perf\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
             f"a=fingerprint:sha-256 {FP}\r\na=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
             "a=rtpmap:102 H264/90000\r\n"
             "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n")


def ms(a, b):
    return None if a is None or b is None else round((b - a) * 1000.0, 1)


def proc_cpu(pid, with_children):
    """utime + stime (+ cutime + cstime) of pid in clock ticks, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    t = int(v[11]) + int(v[12])
    return t + int(v[13]) + int(v[14]) if with_children else t


class Bench:
    def __init__(self, kp, a):
        self.kp, self.a = kp, a
        self.k = kp.Keeppeek()
        self.k.expect_restarts(*WORKERS)  # on purpose, every one of them; the checks are per event
        self.token = None
        self.sid = 0

    # ---- probes: True when the worker serves ----
    def healthz(self):
        try:
            with socket.create_connection(("127.0.0.1", self.k.web_port), timeout=0.5) as s:
                s.settimeout(1.0)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return s.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def coverage(self):
        now = int(time.time() * 1000)
        c = http.client.HTTPConnection("127.0.0.1", self.k.web_port, timeout=2)
        try:
            c.request("GET", f"/api/v1/coverage?from={now - 3600000}&to={now}",
                      headers={"Authorization": "Bearer " + self.token})
            r = c.getresponse()
            body = r.read()
            return r.status == 200 and b"demo-baichuan" in body
        except (OSError, http.client.HTTPException):
            return False
        finally:
            c.close()

    def streams(self, below=None, seen=None, t0=None):
        """All four demo streams streaming (with frame counts below `below`, per stream,
        when given: rows the new ingestd reported); returns {camera/stream: frames} or None.
        seen collects, per stream, ms from t0 to the first poll that showed it back."""
        rc, out, _ = self.k.ctl("cameras", "--json")
        if rc != 0:
            return None
        got = {}
        for c in json.loads(out)["cameras"]:
            for s in c["streams"]:
                key = f"{c['name']}/{s['name']}"
                if s["state"] == "streaming" and (below is None or s["frames"] < below.get(key, 0)):
                    got[key] = s["frames"]
                    if seen is not None and key not in seen:
                        seen[key] = ms(t0, time.monotonic())
        return got if len(got) == 4 else None

    def rtc_offer(self):
        import kp_ws
        try:
            ws = kp_ws.connect("127.0.0.1", self.k.web_port, "/api/v1/rtc",
                               {"Authorization": "Bearer " + self.token}, timeout=2.0)
        except (OSError, kp_ws.HandshakeError):
            return False
        try:
            self.sid += 1
            sid = f"perf{self.sid}"
            ws.send_text(json.dumps({"type": "offer", "sid": sid, "sdp": OFFER_SDP, "camera": RTC_CAMERA,
                                     "stream": "main", "mode": "live"}))
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                kind, data = ws.recv(timeout=max(0.05, deadline - time.monotonic()))
                if kind != "text":
                    return False
                m = json.loads(data)
                if m.get("sid") in (sid, None) and m["type"] in ("answer", "error"):
                    if m["type"] == "answer":
                        ws.send_text(json.dumps({"type": "bye", "sid": sid}))
                        return "a=fingerprint:sha-256 " in m.get("sdp", "")
                    return False
            return False
        except (OSError, ValueError, KeyError):
            return False
        finally:
            try:
                ws.close(timeout=0.5)
            except OSError:
                pass

    def serving(self, w, below=None, seen=None, t0=None):
        if w == "webd":
            return self.healthz()
        if w == "recorderd":
            return self.coverage()
        if w == "rtcd":
            return self.rtc_offer()
        return self.streams(below, seen, t0) is not None

    def status(self):
        rc, out, _ = self.k.ctl("status", "--json")
        return {x["name"]: x for x in json.loads(out)["workers"]} if rc == 0 else None

    def steady(self, timeout):
        """Every worker running with links up and serving; returns the status or None."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self.k.wait_running(timeout=max(1, end - time.monotonic()))
            if all(self.serving(w) for w in WORKERS):
                return st
            time.sleep(0.1)
        return None

    # ---- one event ----
    def event(self, w, how, failures):
        if self.steady(self.a.timeout * 3) is None:
            failures.append(f"{w} {how}: not every worker running and serving before the event")
            return None
        time.sleep(self.a.settle)
        before = self.status()
        frames = None
        if w == "ingestd":  # the old ingestd's rows must count more frames than the new one's first
            frames = self.kp.wait_for(lambda: (f := self.streams()) and min(f.values()) >= MIN_FRAMES and f,
                                    self.a.timeout)
        if before is None or (w == "ingestd" and frames is None):
            failures.append(f"{w} {how}: no status before the event")
            return None
        old = before[w]["pid"]
        log0 = self.k.log_text().count(f"{w}: restarting in")
        pidfd = os.pidfd_open(old)
        res = {"worker": w, "event": how, "old_pid": old}
        seen = {"backoff_ms": 0, "consecutive_failures": 0, "polls": 0, "probes": 0, "failed_probes": 0}
        t_run, t_serve = [None, None], [None]

        def poll_status():
            end = time.monotonic() + self.a.timeout
            while time.monotonic() < end:
                st = self.status()
                seen["polls"] += 1
                if st:
                    v = st[w]
                    seen["backoff_ms"] = max(seen["backoff_ms"], v.get("backoff_ms", 0))
                    seen["consecutive_failures"] = max(seen["consecutive_failures"], v.get("consecutive_failures", 0))
                    if v["state"] == "running" and v["pid"] not in (0, old):
                        t_run[0], t_run[1] = time.monotonic(), st
                        return
                time.sleep(POLL_S)

        def poll_serving():
            end = time.monotonic() + self.a.timeout
            if not select.select([pidfd], [], [], self.a.timeout)[0]:
                return  # the old process never exited
            res["old_exit_ms"] = ms(t0, time.monotonic())
            while time.monotonic() < end:
                seen["probes"] += 1
                if self.serving(w, frames, res.setdefault("streams_back_ms", {}) if frames else None, t0):
                    t_serve[0] = time.monotonic()
                    return
                seen["failed_probes"] += 1
                time.sleep(POLL_S)

        threads = [threading.Thread(target=poll_status), threading.Thread(target=poll_serving)]
        t0 = time.monotonic()
        if how == "kill":
            os.kill(old, signal.SIGKILL)
        else:
            rc, out, err = self.k.ctl("restart", w)
            if rc != 0:
                failures.append(f"{w} planned: keeppeekctl restart exited {rc}: {err.strip()}")
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        os.close(pidfd)
        res.update({"running_ms": ms(t0, t_run[0]), "serving_ms": ms(t0, t_serve[0]), **seen})
        tag = f"{w} {how} {old}"
        if t_run[0] is None or t_serve[0] is None:
            failures.append(f"{tag}: not running ({res['running_ms']}) or not serving ({res['serving_ms']}) "
                            f"within {self.a.timeout} s")
            return res
        after = t_run[1]
        res["new_pid"] = after[w]["pid"]
        if after[w]["restarts"] != before[w]["restarts"] + 1:
            failures.append(f"{tag}: restarts {before[w]['restarts']} -> {after[w]['restarts']}, not +1")
        if how == "kill" and not after[w]["last_exit"].startswith("killed by signal 9"):
            failures.append(f"{tag}: last exit {after[w]['last_exit']!r}")
        for o in WORKERS:
            if o != w and (after[o]["pid"], after[o]["restarts"]) != (before[o]["pid"], before[o]["restarts"]):
                failures.append(f"{tag}: {o} restarted too ({before[o]['pid']} -> {after[o]['pid']})")
        if how == "kill":
            first = (self.k.log_text().count(f"{w}: restarting in") == log0 and seen["backoff_ms"] <= 100
                     and seen["consecutive_failures"] <= 1)
            res["first_failure"] = first
            if not first:
                failures.append(f"{tag}: not a first failure (backoff {seen['backoff_ms']} ms, "
                                f"{seen['consecutive_failures']} failures in a row)")
        return res


def start_wrk(url, a):
    return subprocess.Popen(["wrk", "-t", str(a.wrk_threads), "-c", str(a.wrk_connections), "-d", "7200s",
                             "--timeout", "2s", url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop_wrk(p):
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    r = {"returncode": p.returncode, "output": out.strip().splitlines()[-8:]}
    for line in out.splitlines():
        s = line.split()
        if "requests in" in line:
            r["requests"] = int(s[0])
        elif line.strip().startswith("Socket errors:"):
            r["socket_errors"] = line.split(":", 1)[1].strip()
        elif line.strip().startswith("Non-2xx"):
            r["non_2xx"] = int(s[-1])
        elif line.startswith("Requests/sec:"):
            r["requests_per_s"] = float(s[1])
    return r


def summarize(samples, budget):
    out = {}
    for w in WORKERS:
        if not any(s["worker"] == w for s in samples):
            continue
        out[w] = {}
        for how in ("kill", "planned"):
            ss = [s for s in samples if s["worker"] == w and s["event"] == how]
            out[w][how] = {"running_ms": pc.summary([s["running_ms"] for s in ss if s.get("running_ms") is not None]),
                           "serving_ms": pc.summary([s["serving_ms"] for s in ss if s.get("serving_ms") is not None]),
                           "old_exit_ms": pc.summary([s["old_exit_ms"] for s in ss if s.get("old_exit_ms") is not None]),
                           "over_budget": sum(1 for s in ss if (s.get("serving_ms") or 0) > budget),
                           "failed_probes": sum(s.get("failed_probes", 0) for s in ss),
                           "events_with_a_failed_probe": sum(1 for s in ss if s.get("failed_probes"))}
            keys = sorted({k for s in ss for k in s.get("streams_back_ms", {})})
            if keys:
                out[w][how]["streams_back_ms"] = {k: pc.summary([s["streams_back_ms"][k] for s in ss
                                                                 if k in s.get("streams_back_ms", {})]) for k in keys}
    return out


def markdown(r):
    ld = r.get("load", {})
    out = ["# worker-restart", "", f"{r['revision']}; {r['kills']} kills and {r['kills']} planned restarts per worker, "
           f"settle {r['settle']} s; wrk -t {r['wrk_threads']} -c {r['wrk_connections']} on /healthz throughout", "",
           pc.machine_md(r["machine"]), "",
           f"Load: 1-min load average before {ld.get('load_before')} after {ld.get('load_after')}; machine busy "
           f"{pc.fmt(ld.get('busy_cores'))} cores of {r['machine']['nproc']} over {pc.fmt(ld.get('window_s'), 0)} s "
           f"(steal {pc.fmt(ld.get('steal_cores'))}); KeepPeek {pc.fmt(ld.get('keeppeek_cpu_s'))} CPU s, wrk "
           f"{pc.fmt(ld.get('wrk_cpu_s'))}, runner {pc.fmt(ld.get('runner_cpu_s'))}, **other "
           f"{pc.fmt(ld.get('other_cpu_s'))} CPU s** ({pc.fmt(ld.get('other_cores'))} cores)", "",
           "Milliseconds from SIGKILL (kill) or from the exec of `keeppeekctl restart` (planned), nearest rank:", "",
           "| worker | event | n | running p50 / p95 / max | serving p50 / p95 / max | serving > "
           f"{r['budget_ms']:,.0f} ms | old exit p50 | events with a failed probe |",
           "| --- | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for w, v in r.get("summary", {}).items():
        for how, s in v.items():
            ru, se = s["running_ms"], s["serving_ms"]
            out.append(f"| {w} | {how} | {se.get('n', 0)} | {pc.fmt(ru.get('p50'), 0)} / {pc.fmt(ru.get('p95'), 0)} / "
                       f"{pc.fmt(ru.get('max'), 0)} | {pc.fmt(se.get('p50'), 0)} / **{pc.fmt(se.get('p95'), 0)}** / "
                       f"{pc.fmt(se.get('max'), 0)} | {s['over_budget']} | {pc.fmt(s['old_exit_ms'].get('p50'), 0)} | "
                       f"{s['events_with_a_failed_probe']} |")
    ing = r.get("summary", {}).get("ingestd", {})
    if any("streams_back_ms" in v for v in ing.values()):
        out += ["", "ingestd: ms until each stream was back `streaming` (reported by the new ingestd), p50 / p95 / max:",
                "", "| event | " + " | ".join(sorted(ing["kill"].get("streams_back_ms", {}))) + " |",
                "| --- |" + " ---: |" * len(ing["kill"].get("streams_back_ms", {}))]
        for how, v in ing.items():
            cells = [f"{pc.fmt(x['p50'], 0)} / {pc.fmt(x['p95'], 0)} / {pc.fmt(x['max'], 0)}"
                     for _, x in sorted(v.get("streams_back_ms", {}).items())]
            out.append(f"| {how} | " + " | ".join(cells) + " |")
    wr = r.get("wrk", {})
    out += ["", f"wrk: {wr.get('requests', '-')} requests, {wr.get('requests_per_s', '-')} requests/s, socket errors "
            f"{wr.get('socket_errors', 'none')}, non-2xx {wr.get('non_2xx', 0)}",
            "", "Every kill a first failure (100 ms backoff): "
            + str(all(s.get("first_failure") for s in r.get("samples", []) if s["event"] == "kill")),
            "", "Result: " + ("PASS" if not r["failures"] else "FAIL: " + "; ".join(r["failures"][:20]))]
    return "\n".join(out) + "\n"


def run(kp, a, r):
    failures = r["failures"]
    b = Bench(kp, a)
    k = b.k
    wrk = None
    try:
        k.wait_running(timeout=60)
        b.token = k.token("admin")
        if b.steady(90) is None:
            failures.append("the demo never had every worker serving (streams, coverage, rtc offer)")
            return
        wrk = start_wrk(f"{k.web_url}/healthz", a)
        time.sleep(2)
        r["load"] = {"load_before": pc.loadavg()}
        c0, t0, self0 = pc.cpu_jiffies(), time.monotonic(), os.times()
        kp0 = proc_cpu(k.proc.pid, True) + sum(proc_cpu(p, False) for p in k.descendants())
        wrk0 = proc_cpu(wrk.pid, False)
        samples = r["samples"]
        for i in range(a.kills):
            for w in a.workers:
                for how in ("kill", "planned"):
                    s = b.event(w, how, failures)
                    if s:
                        s["round"] = i + 1
                        samples.append(s)
                        print(f"round {i + 1} {w:9s} {how:7s} running {s['running_ms']} ms, serving "
                              f"{s['serving_ms']} ms", flush=True)
        kp1 = proc_cpu(k.proc.pid, True) + sum(proc_cpu(p, False) for p in k.descendants())
        wrk_ticks = proc_cpu(wrk.pid, False) - wrk0
        c1, t1, self1 = pc.cpu_jiffies(), time.monotonic(), os.times()
        hz = os.sysconf("SC_CLK_TCK")
        win = t1 - t0
        busy, steal = (c1[0] - c0[0]) / hz, (c1[1] - c0[1]) / hz
        runner = sum(self1[i] - self0[i] for i in range(4))
        other = busy - (kp1 - kp0) / hz - wrk_ticks / hz - runner
        r["load"].update({"window_s": round(win, 1), "busy_cores": round(busy / win, 2),
                          "steal_cores": round(steal / win, 2), "keeppeek_cpu_s": round((kp1 - kp0) / hz, 1),
                          "wrk_cpu_s": round(wrk_ticks / hz, 1), "runner_cpu_s": round(runner, 1),
                          "other_cpu_s": round(other, 1), "other_cores": round(other / win, 2),
                          "load_after": pc.loadavg()})
    finally:
        if wrk is not None:
            r["wrk"] = stop_wrk(wrk)
            if not r["wrk"].get("requests"):
                failures.append(f"wrk completed no requests: {r['wrk']['output']}")
        k.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--kills", type=int, default=20, help="kills (and planned restarts) per worker")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds of steady service before each event")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds allowed per milestone")
    ap.add_argument("--budget-ms", type=float, default=1000.0, help="kill -> serving p95 per worker (SPEC 14)")
    ap.add_argument("--wrk-threads", type=int, default=1)
    ap.add_argument("--wrk-connections", type=int, default=50)
    ap.add_argument("--workers", default=",".join(WORKERS), help="the workers to kill, in this order")
    ap.add_argument("--quick", action="store_true", help="3 kills per worker, 1 s settle")
    a = ap.parse_args()
    if a.quick:
        a.kills, a.settle = 3, 1.0
    a.build = os.path.abspath(a.build)
    a.workers = a.workers.split(",")
    if not set(a.workers) <= set(WORKERS):
        ap.error(f"--workers: one of {', '.join(WORKERS)}")
    os.environ["KP_BUILD_ROOT"] = a.build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402
    r = {"benchmark": "worker-restart", "machine": pc.machine(), "revision": pc.git_revision(a.source),
         "build": a.build, "kills": a.kills, "settle": a.settle, "budget_ms": a.budget_ms,
         "wrk_threads": a.wrk_threads, "wrk_connections": a.wrk_connections, "failures": [], "samples": []}
    run(kp, a, r)
    r["summary"] = summarize(r["samples"], a.budget_ms)
    for w, v in r["summary"].items():
        p95 = v["kill"]["serving_ms"].get("p95")
        if p95 is not None and p95 > a.budget_ms:
            r["failures"].append(f"{w}: kill -> serving p95 {p95} ms over the {a.budget_ms:.0f} ms budget")
    md = markdown(r)
    j, m = pc.write_reports(os.path.join(a.build, "perf"), "worker-restart", r, md)
    print(md)
    print(f"reports: {j} {m}")
    return 1 if r["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
