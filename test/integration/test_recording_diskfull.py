"""Disk full: one Baichuan test camera (H.264, main and sub streams) recorded into a data_dir
on a 12 MB tmpfs (`[camera] rollover_secs = 4`, so new files are also started while full). A
filler file leaves about 1 MB free, and recording fills the rest. Then:
- both streams' recording.state becomes `disk-full`, with last_error naming ENOSPC, and stays
  `disk-full` while the disk is full (across the 5 s retries: a retry that fails again must not
  show `recording` nor log that recording resumed);
- keeppeekd, ingestd and recorderd are not restarted (same pids, no restarts) and ingest keeps
  streaming (frames keep rising);
- `keeppeekctl check` reports zero problems while full;
and after the filler is deleted:
- both streams record again (state `recording`, bytes_written rising), the log says so;
- `keeppeekctl check` is still clean, every file on disk is a catalogued recording (a failed
  retry leaves no file behind), and every recording file decodes without errors.
Needs root for mount(8); without it (or when mounting is refused) it exits 77 (skip)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from kp import TestCamera, cameras, check, fail, run, wait_for

SIZE_MB = 12
FREE_LEFT = 1 << 20  # what the filler leaves
FULL_HOLD = 12.0  # seconds watched while full: two 5 s retries
CONFIG = """[keeppeek]
data_dir = {mnt}
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
"""


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def streams(kp, name="full-cam"):
    c = cameras(kp)
    return c and c[name]["streams"]


def files(data):
    return sorted(glob.glob(os.path.join(data, "recordings", "*", "*", "*.mp4")))


def worker_pids(kp):
    st = kp.status()
    if not st:
        return None
    return {w: (st[w]["pid"], st[w]["restarts"]) for w in ("ingestd", "recorderd")}


def check_clean(kp, when):
    rc, out, err = kp.ctl("check")
    check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"check {when} is clean: {out.strip()} {err.strip()}")


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test(make):
    if os.geteuid() != 0:
        skip("needs root to mount a tmpfs")
    work = tempfile.mkdtemp(prefix="kp-diskfull-")
    os.chmod(work, 0o755)
    mnt = os.path.join(work, "data")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=0755", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        skip(f"mounting a tmpfs was refused: {r.stderr.strip()}")
    cam = kp = None
    try:
        cam = TestCamera(work, "full-cam", "h264", "baichuan", "aes")
        kp = make(config=CONFIG.format(mnt=mnt) + f'[camera "full-cam"]\nurl = {cam.url()}\nrollover_secs = 4\n')
        kp.wait_running()
        check(wait_for(lambda: (s := streams(kp)) and all(x["state"] == "streaming" and
                                                          x["recording"]["state"] == "recording" and
                                                          x["recording"]["bytes_written"] > 0 for x in s),
                       15.0, 0.1), f"both streams streaming and recording: {streams(kp)}")
        pids = worker_pids(kp)
        daemon = kp.proc.pid

        filler = os.path.join(mnt, "filler")
        size = free_bytes(mnt) - FREE_LEFT
        with open(filler, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, size)
        print(f"filler of {size} bytes; {free_bytes(mnt)} bytes free")
        t_fill = time.monotonic()
        full = wait_for(lambda: (s := streams(kp)) and all(x["recording"]["state"] == "disk-full" for x in s) and s,
                        30.0, 0.1)
        check(full, f"both streams reach disk-full ({time.monotonic() - t_fill:.1f}s after the filler): {streams(kp)}")
        for x in full:
            err = x["recording"]["last_error"]
            check("No space left on device" in err, f"{x['name']}: last_error names the cause: {err!r}")
        log_at = len(kp.log_text())
        check(all(f"full-cam/{x['name']}" in kp.log_text() and "recording stopped until space returns"
                  in kp.log_text() for x in full), "the log names each stream that stopped")

        # "Full" must stay full: a GOP that still fits in what recorderd's own truncations
        # gave back would rightly be recorded. Take the rest of the space too.
        top_up = os.path.join(mnt, "filler-top-up")
        fd = os.open(top_up, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        print(f"topped up; {free_bytes(mnt)} bytes free")

        # Held full across two retries: state stays disk-full, ingest keeps going.
        frames0 = {x["name"]: x["frames"] for x in full}
        states, end, checked = set(), time.monotonic() + FULL_HOLD, False
        while time.monotonic() < end:
            s = streams(kp)
            if s:
                states |= {(x["name"], x["recording"]["state"]) for x in s}
            if not checked and time.monotonic() > end - FULL_HOLD / 2:
                check_clean(kp, "while the disk is full")
                checked = True
            time.sleep(0.1)
        s = streams(kp)
        check(states == {("main", "disk-full"), ("sub", "disk-full")},
              f"recording.state stayed disk-full for {FULL_HOLD:.0f}s while full: seen {sorted(states)}")
        for x in s:
            check(x["state"] == "streaming" and x["frames"] > frames0[x["name"]] + 100,
                  f"{x['name']}: ingest keeps streaming while full ({frames0[x['name']]} -> {x['frames']} frames)")
            check(x["recording"]["frames_dropped"] > 0, f"{x['name']}: dropped frames are counted "
                  f"({x['recording']['frames_dropped']})")
        check("recording again" not in kp.log_text()[log_at:], "no 'recording again' logged while still full")
        check(worker_pids(kp) == pids and kp.proc.poll() is None and kp.proc.pid == daemon,
              f"keeppeekd, ingestd and recorderd not restarted: {pids} -> {worker_pids(kp)}")
        check_clean(kp, "at the end of the full period")

        # Space returns.
        os.unlink(filler)
        os.unlink(top_up)
        t_free = time.monotonic()
        back = wait_for(lambda: (s := streams(kp)) and all(x["recording"]["state"] == "recording" for x in s) and s,
                        20.0, 0.1)
        check(back, f"both streams record again ({time.monotonic() - t_free:.1f}s after the filler went): "
              f"{streams(kp)}")
        written = {x["name"]: x["recording"]["bytes_written"] for x in back}
        check(wait_for(lambda: (s := streams(kp)) and all(x["recording"]["state"] == "recording" and
                                                          x["recording"]["bytes_written"] > written[x["name"]]
                                                          for x in s), 10.0, 0.1),
              f"bytes_written rising again: {written} -> "
              f"{ {x['name']: x['recording']['bytes_written'] for x in streams(kp)} }")
        check(all(f"full-cam/{n}: recording again" in kp.log_text() for n in ("main", "sub")),
              "the log says each stream records again")
        time.sleep(3.0)
        check_clean(kp, "after space returned")
        check(worker_pids(kp) == pids and kp.proc.poll() is None,
              f"keeppeekd, ingestd and recorderd still not restarted: {pids} -> {worker_pids(kp)}")
        cam.pause()
        time.sleep(0.5)
        rc, out, err = kp.ctl("check")
        check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"check at the end is clean: {out.strip()}")
        m = re.search(r"(\d+) recordings", out)
        check(m and int(m.group(1)) == len(files(mnt)),
              f"every file is a catalogued recording (no file left by a failed retry): "
              f"{m and m.group(1)} recordings, files {[os.path.relpath(f, mnt) for f in files(mnt)]}")
        check(kp.stop() is not None, "keeppeekd stops")
        got = files(mnt)
        check(len(got) >= 2, f"{len(got)} recording files")
        for f in got:
            r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", f, "-f", "null", "-"],
                               capture_output=True, text=True)
            check(r.returncode == 0 and r.stderr == "",
                  f"{os.path.relpath(f, mnt)} ({os.path.getsize(f)} bytes) decodes without errors "
                  f"({r.stderr.strip()[:200]!r})")
    finally:
        if kp is not None:
            kp.stop()  # before unmounting: nothing may hold the tmpfs
        if cam is not None:
            cam.kill()
        r = subprocess.run(["umount", mnt], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"umount {mnt}: {r.stderr.strip()}; detaching lazily", file=sys.stderr)
            subprocess.run(["umount", "-l", mnt])
        shutil.rmtree(work, ignore_errors=True)


run(test)
