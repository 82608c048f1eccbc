#!/usr/bin/env python3
"""rss-idle: RSS and PSS of every KeepPeek process of the idle demo, and where rtcd's goes.

    python3 perf/rss-idle/run.py --build build --base-build BASE [--rounds 2] [--settle 10] [--sessions 10]

For each round, the baseline build and then the new one: `keeppeekd --demo` (one Baichuan
and one RTSP test camera, both streaming, no viewer) with its data in a fresh temporary
directory; after `--settle` s, 10 samples 0.5 s apart of /proc/PID/smaps_rollup (Rss, Pss,
Anonymous, Pss_Anon, Pss_File) of keeppeekd and each child, and once /proc/PID/smaps of
rtcd summed per mapping and grouped by the library family that maps it (rtcd's libraries
come from libnice, OpenSSL and libsrtp2, each with its own dependency tree), and of
ingestd the part mapped by its FFmpeg module (keeppeek-ingestd-libav.so, the audio
converter until decision 0034; a build without the module has none: 0) and the libraries
only the module needs (`ldd` of the module less `ldd` of
ingestd; memory FFmpeg allocates is anonymous and not in it). Figures are
nearest-rank p50/p95 per process over all samples of a build. Checks (work really done):
keeppeekd and its four workers present in every sample with the same pids (no restart),
and the demo's recordings grew on disk during the sampling window (the cameras were
streaming into ingestd and recorderd). With --sessions N, after those samples the same
demo serves N WebRTC live sessions one after the other (Debian's python3-aiortc, as in
test/integration/kp_rtc.py; each until a frame is decoded, then closed), and after
--settle s more rtcd is sampled again (10 samples, smaps_rollup and families): rtcd idle
after sessions came and went (the new build keeps its session module loaded, decision
0024); each session must decode a frame. Reports: BUILD/perf/rss-idle.{json,md}; exit 1
when a check fails. Method: docs/perf/METHODOLOGY.md."""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
import perfcommon as pc  # noqa: E402

WORKERS = ("keeppeek-ingest", "keeppeek-record", "keeppeek-webd", "keeppeek-rtcd")  # comm is 15 chars
FIELDS = ("Rss", "Pss", "Anonymous", "Pss_Anon", "Pss_File")
# Library families of rtcd (by the prefix of the file name; `ldd` tells who needs what).
FAMILIES = [
    ("OpenSSL (DTLS)", ("libcrypto.", "libssl.")),
    ("libsrtp2 and its NSS", ("libsrtp2", "libnss3", "libnssutil3", "libnspr4", "libplc4", "libplds4",
                              "libsmime3", "libsoftokn3", "libfreebl")),
    ("libnice's GnuTLS", ("libgnutls", "libp11-kit", "libnettle", "libhogweed", "libgmp", "libunistring",
                          "libidn2", "libtasn1", "libffi")),
    ("libnice's UPnP (gupnp-igd, gupnp, gssdp, libsoup, libxml2, ICU, sqlite, Kerberos)",
     ("libgupnp", "libgssdp", "libsoup", "libxml2", "libicu", "libstdc++", "libgcc_s", "libsqlite3", "libpsl",
      "libnghttp2", "libbrotli", "libkrb5", "libk5crypto", "libgssapi", "libcom_err", "libkeyutils",
      "libresolv", "liblzma", "libz.")),
    ("rtcd's session module", ("keeppeek-rtcd-session",)),
    ("libnice, GLib, GObject, GIO", ("libnice", "libglib", "libgobject", "libgio", "libgmodule", "libpcre2",
                                     "libmount", "libblkid", "libselinux")),
    ("libc, libm, ld.so, libuv, libseccomp", ("libc.", "libm.", "ld-linux", "libuv", "libseccomp")),
]


def smaps_rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                p = line.split()
                if p[0][:-1] in FIELDS:
                    out[p[0][:-1]] = int(p[1]) * 1024
    except OSError:
        return None
    return out


def family(path):
    if path in ("[heap]",):
        return "heap (brk: malloc's main arena)"
    if path.startswith("[stack"):
        return "main thread stack"
    if path == "" or path.startswith("["):
        return "anonymous mappings (thread stacks, malloc arenas, mmap'd buffers)"
    base = os.path.basename(path)
    if base.startswith("keeppeek-rtcd-session"):
        return "rtcd's session module"
    if base.startswith("keeppeek-"):
        return "the rtcd executable"
    for name, prefixes in FAMILIES:
        if base.startswith(prefixes):
            return name
    return "other: " + base


def smaps_by_family(pid):
    """Rss/Pss/Anonymous per library family, and how many shared objects are mapped."""
    fam, cur, sos = {}, None, set()
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            p = line.split()
            if "-" in p[0] and len(p) >= 5 and ":" not in p[0]:
                path = p[5] if len(p) > 5 else ""
                cur = fam.setdefault(family(path), {"Rss": 0, "Pss": 0, "Anonymous": 0, "mappings": 0})
                cur["mappings"] += 1
                if ".so" in path:
                    sos.add(path)
            elif cur is not None and p[0][:-1] in ("Rss", "Pss", "Anonymous"):
                cur[p[0][:-1]] += int(p[1]) * 1024
    return fam, len(sos)


def ldd(path):
    """The real paths of the shared objects path needs (ldd)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    libs = set()
    for line in r.stdout.splitlines():
        if "=>" in line and "/" in line.split("=>")[1]:
            libs.add(os.path.realpath(line.split("=>")[1].split()[0]))
    return libs


def ffmpeg_part(pid, build):
    """RSS/PSS of ingestd's mappings of its FFmpeg module and the libraries only it needs."""
    module = os.path.join(build, "ingestd", "keeppeek-ingestd-libav.so")
    own = ldd(os.path.join(build, "ingestd", "keeppeek-ingestd"))
    only = (ldd(module) - own) | {os.path.realpath(module)}
    tot, cur, sos = {"Rss": 0, "Pss": 0}, None, set()
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            p = line.split()
            if "-" in p[0] and len(p) >= 5 and ":" not in p[0]:
                path = p[5] if len(p) > 5 else ""
                cur = os.path.realpath(path) in only if path.startswith("/") else False
                if cur:
                    sos.add(path)
            elif cur and p[0][:-1] in ("Rss", "Pss"):
                tot[p[0][:-1]] += int(p[1]) * 1024
    tot["shared_objects"] = len(sos)
    return tot


def threads(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None


def tree_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for n in files:
            try:
                total += os.path.getsize(os.path.join(root, n))
            except OSError:
                pass
    return total


def one_demo(keeppeekd, build, label, rnd, a, out, failures):
    d = tempfile.mkdtemp(prefix="kp-perf-rss-idle-")
    os.chmod(d, 0o755)  # the workers run as another user: they must reach the data directory
    log = open(os.path.join(d, "keeppeekd.log"), "w")
    port = 20000 + (os.getpid() + rnd * 7 + len(label)) % 20000
    p = subprocess.Popen([keeppeekd, "--demo", "--data-dir", os.path.join(d, "data"), "--listen",
                          f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT, cwd=d, start_new_session=True)
    try:
        time.sleep(a.settle)
        pids0 = {pc.comm(c): c for c in pc.children(p.pid)}
        bytes0 = tree_bytes(os.path.join(d, "data"))
        for _ in range(a.samples):
            procs = [("keeppeekd", p.pid)] + sorted((pc.comm(c), c) for c in pc.children(p.pid))
            for name, pid in procs:
                m = smaps_rollup(pid)
                if m:
                    out["samples"].setdefault(name, []).append(m)
            time.sleep(0.5)
        bytes1 = tree_bytes(os.path.join(d, "data"))
        pids1 = {pc.comm(c): c for c in pc.children(p.pid)}
        for w in WORKERS:
            if w not in pids0 or pids0.get(w) != pids1.get(w):
                failures.append(f"{label} round {rnd}: {w} missing or restarted ({pids0.get(w)} -> {pids1.get(w)})")
        if bytes1 <= bytes0:
            failures.append(f"{label} round {rnd}: recordings did not grow ({bytes0} -> {bytes1} bytes)")
        out["recorded_bytes_in_window"].append(bytes1 - bytes0)
        rtcd = pids1.get("keeppeek-rtcd")
        if rtcd:
            fam, nso = smaps_by_family(rtcd)
            out["rtcd_families"].append(fam)
            out["rtcd_shared_objects"].append(nso)
            out["rtcd_threads"].append(threads(rtcd))
        ing = pids1.get("keeppeek-ingest")
        if ing:
            out["ingestd_shared_objects"].append(smaps_by_family(ing)[1])
            out["ingestd_ffmpeg"].append(ffmpeg_part(ing, build))
        if a.sessions and rtcd:
            after_sessions(keeppeekd, d, port, rtcd, label, rnd, a, out, failures)
    finally:
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


def after_sessions(keeppeekd, d, port, rtcd, label, rnd, a, out, failures):
    """a.sessions live sessions one after the other on the demo's Baichuan camera, then
    rtcd sampled again after a.settle s."""
    import asyncio
    import types
    from kp_rtc import Signaling, Viewer, close_all  # Debian's python3 (main() re-executed in it)
    ctl = os.path.join(os.path.dirname(os.path.dirname(keeppeekd)), "supervisor", "keeppeekctl")
    r = subprocess.run([ctl, "-s", os.path.join(d, "data", "run", "control.sock"), "token", "create", "--name",
                        f"rss-idle-{rnd}", "--role", "viewer"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        failures.append(f"{label} round {rnd}: token create: {r.stderr.strip()}")
        return
    k = types.SimpleNamespace(web_port=port)

    async def sessions():
        done = 0
        for i in range(a.sessions):
            sig = Signaling(k, r.stdout.strip(), asyncio.get_running_loop())
            try:
                v = Viewer(sig, f"s{i}", "demo-baichuan")
                await v.open()
                done += await v.playing()
            finally:
                await close_all()
        return done
    played = asyncio.run(sessions())
    if played != a.sessions:
        failures.append(f"{label} round {rnd}: {played} of {a.sessions} sessions decoded a frame")
    time.sleep(a.settle)
    for _ in range(a.samples):
        m = smaps_rollup(rtcd)
        if m:
            out["samples"].setdefault(f"keeppeek-rtcd after {a.sessions} sessions", []).append(m)
        time.sleep(0.5)
    fam, nso = smaps_by_family(rtcd)
    out["rtcd_families_after"].append(fam)
    out["rtcd_shared_objects_after"].append(nso)
    out["rtcd_threads_after"].append(threads(rtcd))


def summarize(out):
    procs = {}
    for name, ss in out.pop("samples").items():
        procs[name] = {k: pc.summary([s[k] for s in ss if k in s]) for k in FIELDS}
    out["processes"] = procs
    tot = {}
    for k in ("Rss", "Pss"):
        tot[k] = sum(v[k]["p50"] for n, v in procs.items() if not n.startswith(("keeppeek-test", "keeppeek-rtcd after")))
    out["total_p50_sum"] = tot
    for key in ("rtcd_families", "rtcd_families_after"):
        fams = {}
        for f in out[key]:
            for n, v in f.items():
                fams.setdefault(n, []).append(v)
        out[key.replace("families", "by_family_p50")] = {
            n: {k: pc.nearest_rank([x[k] for x in vs], 50) for k in ("Rss", "Pss", "Anonymous")}
            for n, vs in fams.items()}


def mib(v):
    return "-" if v is None else f"{v / 2**20:.2f}"


def markdown(r):
    out = ["# rss-idle", "", f"{r['revision']}; load average before {r['load_before']} after {r['load_after']}; "
           f"{r['rounds']} rounds, {r['samples']} samples each, {r['settle']} s after the start", "",
           pc.machine_md(r["machine"]), "", "RSS / PSS p50 (p95) MiB per process, idle demo (1 Baichuan + 1 RTSP camera):",
           "", "| process | " + " | ".join(f"{b} RSS | {b} PSS" for b in r["builds"]) + " |",
           "| --- |" + " ---: | ---: |" * len(r["builds"])]
    names = sorted({n for b in r["builds"].values() for n in b["processes"]}, key=lambda n: (n.startswith("keeppeek-t"), n))
    for n in names:
        cells = []
        for b in r["builds"].values():
            v = b["processes"].get(n)
            cells.append("- | -" if not v else f"{mib(v['Rss']['p50'])} ({mib(v['Rss']['p95'])}) | "
                         f"{mib(v['Pss']['p50'])} ({mib(v['Pss']['p95'])})")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    out.append("| **keeppeekd + workers** | " + " | ".join(
        f"**{mib(b['total_p50_sum']['Rss'])}** | **{mib(b['total_p50_sum']['Pss'])}**" for b in r["builds"].values()) + " |")
    out += ["", "ingestd: its FFmpeg module and the libraries only the module needs (p50 over rounds):", "",
            "| build | shared objects of ingestd | of them FFmpeg's | FFmpeg's RSS MiB | FFmpeg's PSS MiB |",
            "| --- | ---: | ---: | ---: | ---: |"]
    for label, b in r["builds"].items():
        f = b.get("ingestd_ffmpeg") or []
        if f:
            out.append(f"| {label} | {pc.nearest_rank(b['ingestd_shared_objects'], 50)} | "
                       f"{pc.nearest_rank([x['shared_objects'] for x in f], 50)} | "
                       f"{mib(pc.nearest_rank([x['Rss'] for x in f], 50))} | {mib(pc.nearest_rank([x['Pss'] for x in f], 50))} |")
    for label, b in r["builds"].items():
        for suffix, when in (("", "idle"), ("_after", f"after {r['sessions']} sessions came and went")):
            if not b.get("rtcd_by_family_p50" + suffix):
                continue
            out += ["", f"rtcd by mapping family, {label}, {when} (p50 over rounds; "
                    f"{b['rtcd_shared_objects' + suffix]} shared objects, {b['rtcd_threads' + suffix]} threads):", "",
                    "| family | RSS KiB | PSS KiB | anonymous KiB |", "| --- | ---: | ---: | ---: |"]
            for n, v in sorted(b["rtcd_by_family_p50" + suffix].items(), key=lambda kv: -kv[1]["Rss"]):
                out.append(f"| {n} | {v['Rss'] // 1024:,} | {v['Pss'] // 1024:,} | {v['Anonymous'] // 1024:,} |")
    out += ["", "Result: " + ("PASS" if not r["failures"] else "FAIL: " + "; ".join(r["failures"]))]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--base-build", required=True, help="build tree of the baseline revision")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--sessions", type=int, default=0, help="WebRTC sessions, one after the other, after the idle "
                    "samples; then rtcd is sampled again")
    a = ap.parse_args()
    a.build, a.base_build = os.path.abspath(a.build), os.path.abspath(a.base_build)
    if a.sessions:
        os.environ["KP_BUILD_ROOT"] = a.build
        sys.path.insert(0, os.path.join(os.path.abspath(a.source), "test", "integration"))
        import kp_rtc  # noqa: F401,E402  (re-executes this runner in Debian's python3 when aiortc is not here)
    r = {"benchmark": "rss-idle", "machine": pc.machine(), "revision": pc.git_revision(a.source),
         "rounds": a.rounds, "samples": a.samples, "settle": a.settle, "sessions": a.sessions, "failures": [],
         "builds": {},
         "load_before": pc.loadavg()}
    for rnd in range(1, a.rounds + 1):
        for label, b in (("base", a.base_build), ("new", a.build)):
            out = r["builds"].setdefault(label, {"samples": {}, "rtcd_families": [], "rtcd_shared_objects": [],
                                                 "rtcd_threads": [], "ingestd_shared_objects": [],
                                                 "ingestd_ffmpeg": [],
                                                 "rtcd_families_after": [], "rtcd_shared_objects_after": [],
                                                 "rtcd_threads_after": [],
                                                 "recorded_bytes_in_window": []})
            one_demo(os.path.join(b, "supervisor", "keeppeekd"), b, label, rnd, a, out, r["failures"])
    r["load_after"] = pc.loadavg()
    for b in r["builds"].values():
        summarize(b)
    j, m = pc.write_reports(os.path.join(a.build, "perf"), "rss-idle", r, markdown(r))
    print(markdown(r))
    print(f"reports: {j} {m}")
    return 1 if r["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
