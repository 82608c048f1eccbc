"""Configuration plans against the real keeppeekd: on a 64-camera file with comments,
`keeppeekctl config plan` changes five fields of the cameras a label names and `config
apply` writes exactly those (every other line, comment and the order kept; the previous
file kept as .bak); only the worker that reads the changed keys is told to reload and no
worker restarts; a stale plan, a plan that makes the file invalid and a written-out
password are refused with the reason; `camera add` brings a real test camera to
streaming and `camera remove` takes it away; the same through the HTTP API
(/api/v1/config/keys, /api/v1/config pages, /api/v1/config/plan and /apply: admins
only, 403 for a viewer); secrets appear in no plan, answer, output or log."""
import json
import os
import re

from kp import WORKERS, TestCamera, cameras, check, run, wait_for

SECRET = "s3cr3t-value"

HEAD = """; KeepPeek configuration for test_config_plan
[keeppeek]
data_dir = {dir}/data   ; catalog and recordings
run_dir = {dir}/run

[web]
listen = 127.0.0.1:{port}

[rtc]
addresses = 127.0.0.1
"""


def camera_block(i):
    label = "garden" if i % 2 == 0 else "street"
    return (f"\n# camera {i}\n[camera \"cam-{i:02d}\"]\n"
            f"url = rtsp://viewer:${{{{KP_IT_SECRET}}}}@127.0.0.1:1/cam{i}\n"
            f"record    = continuous   ; as it came\nlabels = {label}\nstreams = main\n")


def expected_after(text):
    """The file as the plan must leave it: in each garden camera, record's value replaced
    in place and the four other fields added after its last key, in plan order."""
    out = []
    blocks = re.split(r"(?=\n# camera \d+\n)", text)
    for b in blocks:
        if "labels = garden" in b:
            b = b.replace("record    = continuous   ; as it came", "record    = events   ; as it came")
            b += "retention_days = 7\nsnapshot_interval = 60\nmotion_events = no\nrollover_secs = 300\n"
        out.append(b)
    return "".join(out)


def api(kp):
    admin = {"Authorization": "Bearer " + kp.token("admin"), "Content-Type": "application/json"}
    viewer = {"Authorization": "Bearer " + kp.token("viewer"), "Content-Type": "application/json"}
    st, _, body = kp.http("GET", "/api/v1/config/keys", headers=viewer)
    keys = json.loads(body)["keys"] if st == 200 else []
    rec = [k for k in keys if k["section"] == "camera" and k["name"] == "record"]
    check(st == 200 and rec and rec[0]["values"] == ["continuous", "events", "off"],
          f"GET /api/v1/config/keys gives the table ({st}, {len(keys)} keys)")
    st, _, body = kp.http("GET", "/api/v1/config", headers=viewer)
    page = json.loads(body) if st == 200 else {}
    cams = page.get("cameras", [])
    check(st == 200 and page.get("total_cameras") == 63 and cams and cams[0]["values"]["record"] == "events",
          f"GET /api/v1/config gives the running configuration ({st}, {len(cams)} cameras on the page)")
    check(len(body) <= 64 * 1024 and SECRET not in body.decode(), f"a page is <= 64 KiB ({len(body)}) with no secret")
    if page.get("next_offset") is not None:
        st2, _, body2 = kp.http("GET", f"/api/v1/config?offset={page['next_offset']}", headers=viewer)
        check(st2 == 200 and len(json.loads(body2)["cameras"]) > 0, "the next page continues")
    req = json.dumps({"cameras": "label:street", "set": {"retention_days": 3, "motion_events": False}})
    st, _, body = kp.http("POST", "/api/v1/config/plan", body=req, headers=viewer)
    check(st == 403, f"a viewer may not make a plan ({st})")
    st, _, body = kp.http("POST", "/api/v1/config/plan", body=req, headers=admin)
    plan = json.loads(body) if st == 200 else {}
    check(st == 200 and "cam-01: retention_days: 0 -> 3" in plan.get("changes", []),
          f"an admin's plan comes with its changes ({st}: {body[:120]!r})")
    st, _, body = kp.http("POST", "/api/v1/config/apply", body=json.dumps({"plan": plan.get("plan", "")}),
                          headers=viewer)
    check(st == 403, f"a viewer may not apply ({st})")
    st, _, body = kp.http("POST", "/api/v1/config/apply", body=json.dumps({"plan": plan.get("plan", "")}),
                          headers=admin)
    check(st == 200 and "retention_days = 3" in open(kp.config_path).read(), f"an admin applies it ({st})")
    st, _, body = kp.http("POST", "/api/v1/config/apply", body=json.dumps({"plan": plan.get("plan", "")}),
                          headers=admin)
    err = json.loads(body) if body else {}
    check(st == 409 and err.get("code") == "stale_plan", f"applied twice: 409 stale_plan ({st} {err})")
    bad = json.dumps({"cameras": "cam-02", "set": {"record": "sometimes"}})
    st, _, body = kp.http("POST", "/api/v1/config/plan", body=bad, headers=admin)
    check(st == 400 and b"record must be" in body, f"an invalid plan: 400 with the reason ({st})")
    pw = json.dumps({"add": "x", "url": "rtsp://u:hunter2@127.0.0.1/"})
    st, _, body = kp.http("POST", "/api/v1/config/plan", body=pw, headers=admin)
    check(st == 400 and b"carries a password" in body and b"hunter2" not in body,
          f"a written-out password: 400, not echoed ({st})")


def test(make):
    config = HEAD + "".join(camera_block(i) for i in range(64))
    kp = make(config=config, env={"KP_IT_SECRET": SECRET, "KP_IT_CAM_PW": "cam-pass-42"})
    cam = TestCamera(kp.dir, "plan-cam", protocol="baichuan", password="cam-pass-42")
    try:
        st = kp.wait_running()
        pids = {w: st[w]["pid"] for w in WORKERS}
        before = open(kp.config_path).read()
        plan = os.path.join(kp.dir, "garden.plan")
        rc, out, err = kp.ctl("config", "plan", "--cameras", "label:garden", "--set", "record=events",
                              "--set", "retention_days=7", "--set", "snapshot_interval=60",
                              "--set", "motion_events=no", "--set", "rollover_secs=300", "-o", plan)
        check(rc == 0, f"config plan of 5 fields on 32 cameras exits 0 ({rc}: {err.strip()})")
        check("cam-00: record: continuous -> events" in out and "160 changes" in out,
              f"it prints the difference: {out.splitlines()[:2]} ... {out.splitlines()[-2:]}")
        text = open(plan).read()
        check(len(text.encode()) <= 64 * 1024, f"the plan is within 64 KiB ({len(text)} bytes)")
        check("cam-01" not in text.split("# ")[0], "the plan names only the garden cameras")
        check(SECRET not in text and SECRET not in out, "the plan holds no secret")

        gen_before = kp.log_text().count("reload to generation")
        rc, out, err = kp.ctl("config", "apply", plan)
        check(rc == 0, f"config apply exits 0 ({rc}: {err.strip()})")
        after = open(kp.config_path).read()
        check(after == expected_after(before),
              "the file changed in exactly the planned fields; comments, spacing and order kept")
        check(open(kp.config_path + ".bak").read() == before, "the previous file is kept as .bak")
        check(wait_for(lambda: kp.log_text().count("reload to generation") > gen_before, 10),
              "keeppeekd reloads")
        tail = kp.log_text().split("config apply:")[-1]
        check("sent to 2 workers" in tail,
              "only the readers of the changed keys are told: recorderd (record, retention_days, "
              "rollover_secs) and ingestd (snapshot_interval, motion_events)")
        rc, shown, _ = kp.ctl("config", "show")
        check("record = events" in shown and "retention_days = 7" in shown, "config show has the new values")

        rc, out, err = kp.ctl("config", "apply", plan)
        check(rc == 1 and "changed since this plan was made" in err, f"a stale plan is refused: {err.strip()}")
        rc, out, err = kp.ctl("config", "plan", "--cameras", "cam-0*", "--set", "record=sometimes")
        check(rc == 1 and "record must be continuous, events or off" in err,
              f"a plan that makes the file invalid is refused with the field and why: {err.strip()[:120]}")
        rc, out, err = kp.ctl("config", "plan", "--cameras", "nowhere", "--set", "record=off")
        check(rc == 1 and "no camera matches 'nowhere'" in err, "an unknown target is refused")
        rc, out, err = kp.ctl("config", "plan", "--cameras", "cam-*", "--set", "record=off")
        check(rc == 0, f"a plan over all 64 cameras is within the ceiling ({err.strip()[:100]})")
        rc, out, err = kp.ctl("camera", "add", "bad", "rtsp://u:hunter2@127.0.0.1:1/x")
        check(rc == 1 and "carries a password" in err, f"a written-out password is refused: {err.strip()}")

        rc, out, err = kp.ctl("camera", "remove", "cam-63")
        check(rc == 0 and "cam-63: removed" in out, f"camera remove: {out.strip()} {err.strip()}")
        url = f"baichuan://{cam.user}:${{KP_IT_CAM_PW}}@127.0.0.1:{cam.port}/?channel=0"
        rc, out, err = kp.ctl("camera", "test", url)
        check(rc == 0 and "ok, h264 1920x1080" in out and cam.password not in out,
              f"camera test: the camera answers with a keyframe ({out.strip()} {err.strip()})")
        rc, out, err = kp.ctl("camera", "test", url.replace("${KP_IT_CAM_PW}", "${KP_IT_SECRET}"))
        check(rc == 1 and "refused the credentials" in err and SECRET not in err,
              f"camera test with a wrong password says so ({err.strip()})")
        rc, out, err = kp.ctl("camera", "test", "rtsp://127.0.0.1:1/none")
        check(rc == 1 and "rtsp://127.0.0.1:1/none" in err, f"camera test of a closed port says why ({err.strip()})")
        rc, out, err = kp.ctl("camera", "test", "ftp://127.0.0.1/")
        check(rc == 1 and "must start with" in err, f"camera test of a bad URL says why ({err.strip()})")
        st, _, body = kp.http("POST", "/api/v1/config/test", json.dumps({"url": url}),
                              {"Authorization": "Bearer " + kp.token("admin"), "Content-Type": "application/json"},
                              timeout=20)
        res = json.loads(body) if st == 200 else {}
        check(st == 200 and res.get("ok") and res.get("width") == 1920 and cam.password not in body.decode(),
              f"POST /api/v1/config/test tries it too ({st} {res})")
        rc, out, err = kp.ctl("camera", "add", "plan-cam", url, "--set", "streams=main")
        check(rc == 0 and "plan-cam: added" in out, f"camera add: {out.strip()} {err.strip()}")

        def streaming():
            c = (cameras(kp) or {}).get("plan-cam")
            return c and any(s.get("state") == "streaming" for s in c["streams"])
        check(wait_for(streaming, 20), "the added camera streams")
        check("cam-63" not in (cameras(kp) or {}), "the removed camera is gone")
        rc, out, err = kp.ctl("camera", "remove", "plan-cam")
        check(rc == 0 and wait_for(lambda: "plan-cam" not in (cameras(kp) or {}), 10),
              "camera remove stops it")

        api(kp)
        st = kp.status()
        check(all(st[w]["pid"] == pids[w] for w in WORKERS), "no worker was restarted by any of it")
        check(not kp.unexpected_restarts(), f"no worker restarted: {kp.unexpected_restarts()}")
        log = kp.log_text()
        check(SECRET not in log and cam.password not in log and "hunter2" not in log, "no secret in the log")
    finally:
        cam.kill()


if __name__ == "__main__":
    run(test)
