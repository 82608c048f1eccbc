"""Camera events get their keyframes (issue 20): a Baichuan test camera (H.264, main and
sub, recording always) sends motion alarms every 5 s (`--motion-interval 5`); recorderd
stores each alarm at once, while the GOP holding its start is still being written, and
links it to that GOP's keyframe when the fragment commits (recorderd/event_link.c):
- every alarm older than two GOPs lists a keyframe for main and for sub in its JSON,
  at or before its start and less than one GOP (+ delivery) before it;
- /keyframe?stream=main answers the bytes `keeppeekctl keyframe` gives at the linked
  time (the link names that keyframe)."""
import json
import os
import subprocess
import tempfile
import time

from kp import TestCamera, check, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def test(make):
    work = tempfile.mkdtemp(prefix="kp-evkf-")
    cam = TestCamera(work, "front", "h264", "baichuan", "aes", extra=("--motion-interval", "5"))
    try:
        kp = make(config=CONFIG + f'[camera "front"]\nurl = {cam.url()}\n')
        kp.wait_running()
        wait_streaming(kp, "front", timeout=10.0)
        auth = {"Authorization": "Bearer " + kp.token()}

        def events():
            s, _, b = kp.http("GET", "/api/v1/events?camera=front&limit=100", headers=auth)
            if s != 200:
                check(False, f"events answer 200 ({s} {b[:200]!r})")
            return [e for e in json.loads(b)["events"] if e.get("source") == "camera"]

        check(wait_for(lambda: len(events()) >= 2, 20.0, 0.2), "the camera's alarms are events")
        time.sleep(5.0)  # the GOPs holding their starts are committed
        now = int(time.time() * 1000)
        old = [e for e in events() if e["start_ms"] < now - 5000]
        check(len(old) >= 1, f"alarms older than 5 s: {len(old)}")
        for e in old:
            links = {x["stream"]: x["time_ms"] for x in e.get("keyframes", [])}
            print(e["id"], e["start_ms"], links)
            check(set(links) == {"main", "sub"}, f"{e['id']}: keyframes for main and sub: {e.get('keyframes')}")
            check(all(e["start_ms"] - 4000 <= t <= e["start_ms"] for t in links.values()),
                  f"{e['id']}: its keyframes are at or less than one GOP before its start")
        e = old[0]
        s, _, kf = kp.http("GET", f"/api/v1/events/{e['id']}/keyframe?stream=main", headers=auth)
        t = {x["stream"]: x["time_ms"] for x in e["keyframes"]}["main"]
        r = subprocess.run([os.path.join(os.environ["KP_BUILD_ROOT"], "supervisor", "keeppeekctl"), "-s", kp.sock,
                            "keyframe", "front", "main", str(t)], capture_output=True)
        check(s == 200 and r.returncode == 0 and r.stdout == kf, "/keyframe is the linked keyframe")
        rc, out, err = kp.ctl("check")
        check(rc == 0 and out.rstrip().endswith(": 0 problems"), f"check is clean: {out.strip()}")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
