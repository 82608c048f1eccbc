"""Retention by disk quota: one Baichuan test camera (H.264, main and sub streams)
recorded for about 40 s into 3-second files (`[camera] rollover_secs = 3`) under a
5 MB quota (`[retention] max_disk_gb = 0.005`). The files are watched throughout, and:
- recordings were deleted, oldest first: for each stream what remains is the newest
  files seen, the newest of all among them;
- the bytes of all recording files never exceed the quota plus one rollover's worth
  (the largest file of each stream);
- `keeppeekctl check` stays clean, during the run and at the end;
- every file left decodes without errors."""
import glob
import os
import subprocess
import tempfile
import time

from kp import TestCamera, check, run, wait_streaming

QUOTA = 5_000_000
CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
[retention]
max_disk_gb = 0.005
"""


def scan(data):
    """{path relative to data: size} of every recording file now."""
    out = {}
    for f in glob.glob(os.path.join(data, "recordings", "*", "*", "*.mp4")):
        try:
            out[os.path.relpath(f, data)] = os.path.getsize(f)
        except FileNotFoundError:
            pass
    return out


def start_of(path):
    return int(os.path.basename(path).split(".")[0])


def test(make):
    work = tempfile.mkdtemp(prefix="kp-quota-")
    cam = TestCamera(work, "quota-cam", "h264", "baichuan", "aes")
    try:
        kp = make(config=CONFIG + f'[camera "quota-cam"]\nurl = {cam.url()}\nrollover_secs = 3\n')
        kp.wait_running()
        wait_streaming(kp, "quota-cam", timeout=10.0)
        seen, peak, peak_at, largest = {}, 0, None, {}
        end = time.monotonic() + 40.0
        next_check = end - 30.0
        while time.monotonic() < end:
            now = scan(kp.data)
            seen.update(now)
            for p, size in now.items():
                stream = os.path.dirname(p)
                largest[stream] = max(largest.get(stream, 0), size)
            total = sum(now.values())
            if total > peak:
                peak, peak_at = total, dict(now)
            if time.monotonic() >= next_check:  # every 10 s while recording and deleting
                rc, out, err = kp.ctl("check")
                check(rc == 0, f"check during the run is clean: {out.strip()} {err.strip()}")
                next_check += 10.0
            time.sleep(0.2)
        cam.pause()
        rc, out, err = kp.ctl("check")
        check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"check at the end is clean: {out.strip()}")

        left = scan(kp.data)
        seen.update(left)  # a file begun after the loop's last scan is seen here first
        bound = QUOTA + sum(largest.values())
        print(f"peak {peak} bytes in {len(peak_at or {})} files; quota {QUOTA}, bound {bound}")
        check(peak <= bound, f"recording files peaked at {peak} bytes, within quota + one rollover ({bound})")
        for stream in sorted({os.path.dirname(p) for p in seen}):
            all_files = sorted((p for p in seen if os.path.dirname(p) == stream), key=start_of)
            kept = sorted((p for p in left if os.path.dirname(p) == stream), key=start_of)
            print(f"{stream}: {len(all_files)} files seen, {len(kept)} kept")
            check(len(kept) < len(all_files), f"{stream}: old recordings were deleted")
            if kept != all_files[-len(kept):]:
                print("all:", [os.path.basename(p) for p in all_files], "kept:", [os.path.basename(p) for p in kept])
            check(kept and kept == all_files[-len(kept):],
                  f"{stream}: what remains is the newest files, oldest deleted first")
        check(kp.stop() is not None, "keeppeekd stops")
        for p in sorted(scan(kp.data)):
            r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", os.path.join(kp.data, p), "-f", "null",
                                "-"], capture_output=True, text=True)
            check(r.returncode == 0 and r.stderr == "", f"{p} decodes without errors ({r.stderr.strip()[:200]!r})")
    finally:
        cam.kill()


run(test)
