"""The test camera's replay mode (decision 0026) recorded by the real keeppeekd: two H.264
cameras with AES in one replay process, one H.265 camera with full AES in another, and a
live H.264 camera beside them, recorded for 9 s. Every frame the replay cameras sent is
recorded; every file passes `ffprobe -v error` and decodes with `ffmpeg -v error`; the
frames of each replay stream (sizes and keyframe flags, in order) are the fixture's loop
from a keyframe on, as the live camera's recording of the same fixture shows it (for
H.265, the frames recorded from a live camera in normal mode are compared the same way)."""
import glob
import json
import os
import signal
import subprocess
import tempfile
import time

from kp import TestCamera, TestCameraGroup, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""
LOOP = 100  # frames in each fixture (test/fixtures), looped by the camera


def packets(data_dir, name, stream):
    """(size, keyframe) of every frame recorded for name/stream, files in order; each file
    probed and decoded without a message."""
    out = []
    files = sorted(glob.glob(os.path.join(data_dir, "recordings", name, stream, "*.mp4")))
    check(files, f"{name}/{stream}: recording files exist")
    for f in files:
        r = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=size,flags", "-of", "json", f],
                           capture_output=True, text=True)
        check(r.returncode == 0 and r.stderr == "", f"{f}: ffprobe -v error is silent ({r.stderr.strip()[:300]!r})")
        out += [(int(p["size"]), "K" in p["flags"]) for p in json.loads(r.stdout)["packets"]]
        r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", f, "-f", "null", "-"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and r.stderr == "", f"{f}: decodes cleanly ({r.stderr.strip()[:300]!r})")
    return out


def cyclic_match(seq, cycle):
    """The offset at which seq runs along cycle (repeated), or None."""
    for o in range(len(cycle)):
        if all(seq[i] == cycle[(o + i) % len(cycle)] for i in range(len(seq))):
            return o
    return None


def test(make):
    work = tempfile.mkdtemp(prefix="kp-replay-")
    h264 = TestCameraGroup(work, "replay-h264", 2, "h264", "aes", names=["rp-h264-a", "rp-h264-b"])
    h265 = TestCameraGroup(work, "replay-h265", 1, "h265", "full-aes", names=["rp-h265"])
    live264 = TestCamera(work, "live-h264", "h264", "baichuan", "aes")
    live265 = TestCamera(work, "live-h265", "h265", "baichuan", "full-aes")
    cams = {c.name: c for c in h264.cameras + h265.cameras + [live264, live265]}
    try:
        config = CONFIG
        for name, cam in cams.items():
            config += f'[camera "{name}"]\nurl = {cam.url()}\n'
        kp = make(config=config)
        kp.wait_running()

        def all_streaming():
            c = cameras(kp)
            ok = c and len(c) == len(cams) and all(s["state"] == "streaming" for cc in c.values()
                                                   for s in cc["streams"])
            return c if ok else None
        check(wait_for(all_streaming, 15.0, 0.1) is not None, f"every stream streaming: {cameras(kp)}")
        time.sleep(9.0)
        for p in (h264, h265):
            p.proc.send_signal(signal.SIGUSR1)  # media stops, counters final
        live264.pause()
        live265.pause()
        time.sleep(0.3)
        sent = {name: cam.stats()["baichuan"] for name, cam in cams.items()}

        def settled():
            cc = cameras(kp)
            ok = all(cc[n]["streams"][i]["recorded_frames"] == sent[n][s]["frames_sent"]
                     for n in cams for i, s in enumerate(("main", "sub")))
            return cc if ok else None
        final = wait_for(settled, 8.0, 0.2) or cameras(kp)
        for n in cams:
            for i, s in enumerate(("main", "sub")):
                got, want = final[n]["streams"][i], sent[n][s]["frames_sent"]
                check(want > 150 and got["recorded_frames"] == want and got["recorded_gaps"] == 0,
                      f"{n}/{s}: sent {want} frames, recorderd received {got['recorded_frames']}")
        check(kp.stop() is not None, "keeppeekd stops (recorderd commits what it holds)")

        for live, replayed in ((live264, h264.cameras), (live265, h265.cameras)):
            for s in ("main", "sub"):
                ref = packets(kp.data, live.name, s)
                check(len(ref) > LOOP and all(ref[i] == ref[i + LOOP] for i in range(len(ref) - LOOP)),
                      f"{live.name}/{s}: the live recording repeats the fixture's {LOOP}-frame loop")
                cycle = ref[:LOOP]
                for cam in replayed:
                    got = packets(kp.data, cam.name, s)
                    o = cyclic_match(got, cycle)
                    check(len(got) > LOOP and got[0][1] and o is not None,
                          f"{cam.name}/{s}: {len(got)} frames from a keyframe, the live camera's frames "
                          f"in the same order (offset {o})")
    finally:
        for c in (h264, h265, live264, live265):
            c.kill()


run(test)
