"""Cameras found on the local segment, inside a network namespace this test makes (so
that its broadcasts and multicasts reach nothing else): a veth pair 10.77.0.1/24 -
10.77.0.2/24 with a multicast route. On it, a Reolink test camera on UDP 2015 with a UID
(answers the UID lookup, C2D_S, as BAICHUAN.md section 6 says) and an RTSP test camera
that answers WS-Discovery probes for ONVIF video transmitters (ONVIF Core Specification
7.3) and reports 10.77.0.1 in its XAddrs. `keeppeekctl cameras discover` (and --json)
lists both, each with a URL to start from; the test camera counted the probe it answered;
a camera added from the found URL streams; the Settings page's API gives the same list to
an admin and 403 to a viewer; no worker restarts."""
import json
import tempfile

from kp import TestCamera, in_own_netns, veth_segment, cameras, check, run, wait_for

in_own_netns()

UID = "95270000DISCOVER"

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""



def test(make):
    veth_segment(multicast=True)
    work = tempfile.mkdtemp(prefix="kp-discover-")
    reo = TestCamera(work, "reolink", "h264", "bcudp", "aes", port=2015, extra=["--host", "0.0.0.0", "--uid", UID])
    onvif = TestCamera(work, "onvif", "h264", "rtsp", "aes", extra=["--host", "0.0.0.0", "--wsd", "10.77.0.1"])
    try:
        kp = make(config=CONFIG, env={"KP_CAM_PW": reo.password})
        kp.wait_running()
        rc, out, err = kp.ctl("cameras", "discover")
        check(rc == 0 and UID in out and "onvif" in out and "KeepPeek Test / KP-TEST-CAM" in out,
              f"keeppeekctl cameras discover lists both cameras:\n{out}{err}")
        rc, out, err = kp.ctl("cameras", "discover", "--json")
        found = json.loads(out)["cameras"] if rc == 0 else []
        reolink = [c for c in found if c["kind"] == "baichuan"]
        onv = [c for c in found if c["kind"] == "onvif"]
        check(len(reolink) == 1 and reolink[0]["uid"] == UID and reolink[0]["port"] == 2015
              and reolink[0]["url"] == f"bcudp://admin:${{CAMERA_PASSWORD}}@{reolink[0]['address']}/?uid={UID}",
              f"the Reolink camera, its UID, port and a URL to start from: {reolink}")
        check(len(onv) == 1 and onv[0]["xaddr"] == "http://10.77.0.1/onvif/device_service"
              and onv[0]["name"] == "KeepPeek Test" and onv[0]["model"] == "KP-TEST-CAM"
              and onv[0]["url"].startswith("rtsp://admin:${CAMERA_PASSWORD}@"),
              f"the ONVIF camera, its device service, name and model: {onv}")
        check(onvif.stats()["wsd_probes_answered"] >= 1, f"the ONVIF camera answered our probes: {onvif.stats()}")

        admin = {"Authorization": "Bearer " + kp.token("admin")}
        viewer = {"Authorization": "Bearer " + kp.token("viewer")}
        st, _, body = kp.http("GET", "/api/v1/config/discover", None, viewer)
        check(st == 403, f"a viewer may not search ({st})")
        st, _, body = kp.http("GET", "/api/v1/config/discover", None, admin, timeout=20)
        web = json.loads(body)["cameras"] if st == 200 else []
        check(st == 200 and {c["kind"] for c in web} == {"baichuan", "onvif"}, f"the API lists both ({st} {web})")

        url = reolink[0]["url"].replace("${CAMERA_PASSWORD}", "${KP_CAM_PW}") if reolink else ""
        rc, out, err = kp.ctl("camera", "add", "found", url, "--set", "streams=main")
        check(rc == 0, f"a camera added from the URL found ({out}{err})")
        check(wait_for(lambda: (cameras(kp) or {}).get("found", {}).get("streams", [{}])[0].get("state") == "streaming",
                       20.0, 0.2), f"it streams: {(cameras(kp) or {}).get('found')}")
        check(not kp.unexpected_restarts(), f"no worker restarted: {kp.unexpected_restarts()}")
    finally:
        reo.kill()
        onvif.kill()


if __name__ == "__main__":
    run(test)
