"""record = events and record = off with real test cameras (Baichuan, H.264) that send
motion alarms every 12 s (`--motion-interval 12`):
- before the first alarm, the events camera writes no recording file and reports its
  streams as "events-idle"; the record = off camera never writes one and reports "off";
- after the first alarm, the events camera records: its coverage starts at a keyframe
  at or before the alarm (at most one GOP + the alarm's delivery before it), and it
  keeps recording while alarms keep coming (each re-arms 30 s);
- the alarms are events in the catalog (`mdb_dump -s events`: ids
  `<camera>.motion.<ms>`), and `keeppeekctl check` is clean."""
import glob
import json
import os
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


def files(data, name):
    return sorted(glob.glob(os.path.join(data, "recordings", name, "*", "*.mp4")))


def stream_states(kp, name):
    c = cameras(kp)
    if not c or name not in c:
        return None
    return [s.get("recording", {}).get("state") for s in c[name]["streams"]]


def event_ids(data):
    out = subprocess.run(["mdb_dump", "-p", "-s", "events", os.path.join(data, "catalog")],
                         capture_output=True, text=True, check=True).stdout
    ids = []
    body = out.split("HEADER=END\n", 1)[1].splitlines()
    for key in body[0::2]:
        if key.startswith(" ") and not key.startswith(" DATA"):
            ids.append(key.strip())
    return ids


def test(make):
    work = tempfile.mkdtemp(prefix="kp-recev-")
    ev = TestCamera(work, "ev-cam", "h264", "baichuan", "aes", extra=("--motion-interval", "12"))
    off = TestCamera(work, "off-cam", "h264", "baichuan", "aes", extra=("--motion-interval", "12"))
    try:
        kp = make(config=CONFIG + f'[camera "ev-cam"]\nurl = {ev.url()}\nrecord = events\n'
                  f'[camera "off-cam"]\nurl = {off.url()}\nrecord = off\n')
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(s["state"] == "streaming" for n in ("ev-cam", "off-cam")
                                                         for s in c[n]["streams"]), 10.0, 0.1),
              "both cameras stream")
        # Before the first alarm (12 s after the camera's session started).
        time.sleep(4.0)
        sent0 = ev.stats()["motion_sent"]
        if sent0 == 0:
            check(files(kp.data, "ev-cam") == [], "events camera: no recording file before any alarm")
            check(wait_for(lambda: stream_states(kp, "ev-cam") == ["events-idle", "events-idle"], 5.0, 0.2),
                  f"events camera reports events-idle: {stream_states(kp, 'ev-cam')}")
        check(stream_states(kp, "off-cam") == ["off", "off"], f"off camera reports off: {stream_states(kp, 'off-cam')}")

        # The first alarm (after sent0) starts a recording.
        check(wait_for(lambda: ev.stats()["motion_sent"] > sent0, 15.0, 0.05), "the camera sent an alarm")
        alarm_ms = int(time.time() * 1000)
        check(wait_for(lambda: files(kp.data, "ev-cam"), 10.0, 0.1), "events camera: a recording file appears")
        check(wait_for(lambda: stream_states(kp, "ev-cam") == ["recording", "recording"], 5.0, 0.2),
              f"events camera reports recording: {stream_states(kp, 'ev-cam')}")
        time.sleep(14.0)  # a second alarm arrives meanwhile: still recording
        check(stream_states(kp, "ev-cam") == ["recording", "recording"], "still recording after the next alarm")
        check(files(kp.data, "off-cam") == [], "off camera: never a recording file")

        rc, out, err = kp.ctl("coverage", "ev-cam", "main", "--from", str(alarm_ms - 600000), "--json")
        check(rc == 0, f"coverage answers ({err.strip()})")
        cov = json.loads(out)
        ranges = cov["ranges"]
        check(len(ranges) >= 1, f"coverage has ranges: {ranges}")
        first = ranges[0][0]
        print(f"alarm seen at {alarm_ms}, recording starts at {first} ({alarm_ms - first} ms before)")
        check(first <= alarm_ms and alarm_ms - first <= 6000,
              "the recording starts at the keyframe before the alarm (pre-roll of one GOP)")
        check(ranges[-1][1] - first >= 10000, f"recorded {ranges[-1][1] - first} ms since the alarm")

        rc, out, err = kp.ctl("check")
        check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"check is clean: {out.strip()}")
        check(kp.stop() is not None, "keeppeekd stops")
        ids = event_ids(kp.data)
        print("events:", ids)
        check(any(i.startswith("ev-cam.motion.") for i in ids), "the alarms are events in the catalog")
        for f in files(kp.data, "ev-cam"):
            r = subprocess.run(["ffmpeg", "-v", "error", "-i", f, "-f", "null", "-"], capture_output=True, text=True)
            check(r.returncode == 0 and not r.stderr.strip(), f"{os.path.basename(f)} decodes without errors")
    finally:
        ev.kill()
        off.kill()


if __name__ == "__main__":
    run(test)
