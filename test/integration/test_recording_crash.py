"""Crash safety of recording: two Baichuan test cameras (H.264 with AES, H.265 with the
BC cipher), main and sub streams, recorded while recorderd is killed with SIGKILL ten
times, about every 3 s (each time once it runs again; the supervisor's restart backoff
grows with each quick failure, as SPEC section 1 says). Then 5 s more, the cameras stop
sending, and:
- `keeppeekctl check` reports zero problems (and so does `check --json`);
- the coverage of every stream (`keeppeekctl coverage --json`, from the maintained
  summaries) has gaps only around kills, each at most one GOP (1 s in the fixtures) plus
  the restart time measured for the kills inside it plus 1.5 s (the partial GOP lost at
  the kill and the wait for the next keyframe); the measured gaps are printed;
- every recording file decodes with `ffmpeg -v error -i F -f null -` without a message;
- ingestd was never restarted."""
import glob
import json
import os
import signal
import subprocess
import tempfile
import time

from kp import TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""

KILLS = 10
GOP_S = 1.0
SLACK_S = 1.5


def decode(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def kill_recorderd(kp):
    """SIGKILL to recorderd; returns (kill time in ms, seconds until it runs again)."""
    old = kp.status()["recorderd"]["pid"]
    t0 = time.time()
    kp.expect_restarts("recorderd")
    os.kill(old, signal.SIGKILL)

    def back():
        st = kp.status()
        r = st and st["recorderd"]
        return r if r and r["state"] == "running" and r["pid"] not in (0, old) else None
    r = wait_for(back, 60.0, 0.02)
    check(r is not None, f"recorderd (pid {old}) runs again after SIGKILL")
    return t0 * 1000.0, time.time() - t0


def test(make):
    work = tempfile.mkdtemp(prefix="kp-crash-")
    cams = {
        "bc-aes-h264": TestCamera(work, "bc-aes-h264", "h264", "baichuan", "aes"),
        "bc-xor-h265": TestCamera(work, "bc-xor-h265", "h265", "baichuan", "bc"),
    }
    try:
        config = CONFIG
        for name, cam in cams.items():
            config += f'[camera "{name}"]\nurl = {cam.url()}\n'
        kp = make(config=config)
        st = kp.wait_running()
        ingestd_pid = st["ingestd"]["pid"]
        start_ms = int(time.time() * 1000)

        def all_streaming():
            c = cameras(kp)
            ok = c and len(c) == 2 and all(s["state"] == "streaming" for cam in c.values() for s in cam["streams"])
            return c if ok else None
        check(wait_for(all_streaming, 10.0, 0.1) is not None, f"all 4 streams streaming: {cameras(kp)}")
        time.sleep(3.0)

        kills = []
        for i in range(KILLS):
            at_ms, restart_s = kill_recorderd(kp)
            kills.append((at_ms, restart_s))
            print(f"kill {i + 1}: recorderd back after {restart_s:.2f} s")
            # About every 3 s, and long enough after the restart for a GOP to be committed.
            time.sleep(max(at_ms / 1000.0 + 3.0 - time.time(), 2.6))
        time.sleep(5.0)
        for cam in cams.values():
            cam.pause()
        time.sleep(0.5)

        rc, out, err = kp.ctl("check")
        check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"keeppeekctl check is clean: {out.strip()} {err}")
        rc, out, err = kp.ctl("check", "--json")
        report = json.loads(out) if rc == 0 else {}
        check(rc == 0 and report.get("problem_count") == 0 and report.get("fragments", 0) > 0,
              f"check --json: {report.get('problem_count')} problems in {report.get('fragments')} fragments")

        for name in cams:
            for s in ("main", "sub"):
                rc, out, err = kp.ctl("coverage", name, s, "--from", str(start_ms - 60000), "--json")
                check(rc == 0, f"{name}/{s}: coverage answers ({err.strip()})")
                ranges = json.loads(out)["ranges"]
                gaps = [(a[1], b[0]) for a, b in zip(ranges, ranges[1:])]
                desc = ", ".join(f"{(e - b) / 1000.0:.2f}" for b, e in gaps)
                print(f"{name}/{s}: {len(ranges)} ranges, gaps (s): {desc}")
                check(ranges and ranges[0][0] < kills[0][0] and ranges[-1][1] > kills[-1][0] + 3000,
                      f"{name}/{s}: recorded before the first kill and after the last")
                check(len(gaps) <= KILLS, f"{name}/{s}: {len(gaps)} gaps for {KILLS} kills")
                for b, e in gaps:
                    inside = [k for k in kills if b - 100 <= k[0] <= e + 100]
                    bound = sum(r + GOP_S for _, r in inside) + SLACK_S
                    check(inside and (e - b) / 1000.0 <= bound,
                          f"{name}/{s}: gap of {(e - b) / 1000.0:.2f} s at {b} around {len(inside)} kill(s), "
                          f"bound {bound:.2f} s")

        st = kp.status()
        check(st["ingestd"]["pid"] == ingestd_pid and st["ingestd"]["restarts"] == 0,
              "ingestd was never restarted")
        check(st["recorderd"]["restarts"] == KILLS, f"recorderd restarted {st['recorderd']['restarts']} times")
        check(kp.stop() is not None, "keeppeekd stops")

        files = sorted(glob.glob(os.path.join(kp.data, "recordings", "*", "*", "*.mp4")))
        check(len(files) >= 4 * (KILLS + 1), f"{len(files)} recording files (a new one after every restart)")
        for f in files:
            rc, err = decode(f)
            check(rc == 0 and err == "",
                  f"{os.path.relpath(f, kp.data)} decodes without errors ({err.strip()[:300]!r})")
    finally:
        for cam in cams.values():
            cam.kill()


run(test)
