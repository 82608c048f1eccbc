"""Camera faults: a wrong password gives `auth-failed` with the camera's reason and is
retried with backoff, never in a tight loop; a camera killed and restarted streams again
without a restart of ingestd; a Baichuan body length of 16 MiB + 1 closes that
connection with a clear log line and a counted reconnect while other cameras stream on."""
import tempfile
import time

from kp import TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def streaming(kp, name):
    c = cameras(kp)
    return c and c[name]["state"] == "streaming"


def test(make):
    work = tempfile.mkdtemp(prefix="kp-faults-")
    good = TestCamera(work, "good", "h264", "baichuan", "aes")
    refusing = TestCamera(work, "refusing", "h264", "baichuan", "aes", faults=["wrong-password"])
    oversize = TestCamera(work, "oversize", "h264", "baichuan", "none", faults=["oversize"])
    cams = [good, refusing, oversize]
    try:
        config = CONFIG
        for cam in cams:
            config += f'[camera "{cam.name}"]\nurl = {cam.url()}\n'
        kp = make(config=config)
        st = kp.wait_running()
        ingestd_pid = st["ingestd"]["pid"]
        check(wait_for(lambda: streaming(kp, "good"), 8.0, 0.1), "the good camera streams")

        c = wait_for(lambda: (lambda c: c if c and c["refusing"]["state"] == "auth-failed" else None)(cameras(kp)),
                     8.0, 0.1)
        check(c is not None, "wrong password: state auth-failed")
        err = c["refusing"]["streams"][0]["last_error"]
        check("401" in err or "refused" in err, f"with the camera's reason: {err!r}")
        time.sleep(8.0)
        refused = refusing.stats()["logins_refused"]
        check(2 <= refused <= 6, f"login retried with backoff: {refused} attempts in ~10 s, not a tight loop")
        c = cameras(kp)
        check(c["refusing"]["state"] == "auth-failed", "still auth-failed while it keeps refusing")

        log = kp.log_text()
        check("exceeds the 16 MiB ceiling" in log, "oversize body: a clear log line")
        check(c["oversize"]["streams"][0]["reconnects"] >= 1, f"oversize body: counted ({c['oversize']['streams'][0]['reconnects']} reconnects)")
        check("16 MiB" in c["oversize"]["streams"][0]["last_error"], "oversize body: last_error says why")
        g = c["good"]["streams"]
        check(all(s["state"] == "streaming" and s["reconnects"] == 0 for s in g), "the good camera was unaffected")

        frames_before = c["good"]["streams"][0]["frames"]
        good.kill()
        check(wait_for(lambda: (lambda c: c and c["good"]["state"] != "streaming")(cameras(kp)), 10.0, 0.1),
              "camera killed: its streams leave `streaming`")
        time.sleep(2.0)
        good.start()
        check(wait_for(lambda: streaming(kp, "good"), 20.0, 0.2), "camera restarted: streaming again")
        # Counters reach the supervisor with each health round (every 2 s).
        check(wait_for(lambda: cameras(kp)["good"]["streams"][0]["frames"] > frames_before, 6.0, 0.2),
              "frames flow again")
        check(kp.status()["ingestd"]["pid"] == ingestd_pid, "ingestd was not restarted")
    finally:
        for cam in cams:
            cam.kill()


run(test)
