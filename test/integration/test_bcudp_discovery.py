"""Battery cameras over BCUDP found by UID, inside a network namespace this test makes
(so that its broadcasts reach nothing else): a veth pair 10.77.0.1/24 - 10.77.0.2/24, and
two test cameras on it with different UIDs, one on port 2015 and one on 2018, the ports
real cameras listen on. Three keeppeek cameras:
  - by-uid: bcudp://admin:pw@/?uid=UID_A, no address: ingestd broadcasts C2D_C naming
    UID_A on the segment (2015 and 2018); only camera A answers, camera B ignores it;
  - looked-up: bcudp://admin:pw@10.77.0.1:2018/ with no UID: a C2D_S lookup to camera B
    gives its UID, then C2D_C with it;
  - wrong-uid: bcudp://admin:pw@10.77.0.1:2015/?uid=<another>: camera A refuses, and
    `keeppeekctl cameras` shows why (the UID) while the other two record.
Sources of the cameras' behaviour: BAICHUAN.md section 6 (neolink discovery.rs and
dissector/udp.md; reolink_aio udp_protocol.py), named in test/camera/bcudp/bcudp_server.h."""
import tempfile

from kp import TestCamera, in_own_netns, veth_segment, cameras, check, run, wait_for

in_own_netns()

UID_A = "95270000KPCAMERA"
UID_B = "95270000KPOTHER2"

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""



def test(make):
    veth_segment(multicast=False)
    work = tempfile.mkdtemp(prefix="kp-bcudp-disc-")
    cam_a = TestCamera(work, "cam-a", "h264", "bcudp", "aes", port=2015, extra=["--host", "0.0.0.0", "--uid", UID_A])
    cam_b = TestCamera(work, "cam-b", "h264", "bcudp", "aes", port=2018, password=cam_a.password,
                       extra=["--host", "0.0.0.0", "--uid", UID_B])
    try:
        pw = cam_a.password
        config = CONFIG
        config += f'[camera "by-uid"]\nurl = bcudp://admin:{pw}@/?uid={UID_A}\nstreams = main\n'
        config += f'[camera "looked-up"]\nurl = bcudp://admin:{pw}@10.77.0.1:2018/\nstreams = main\n'
        config += f'[camera "wrong-uid"]\nurl = bcudp://admin:{pw}@10.77.0.1:2015/?uid=95270000NOTTHIS1\nstreams = main\n'
        kp = make(config=config)
        kp.wait_running()

        def two_streaming():
            c = cameras(kp)
            if not c:
                return None
            ok = all(c[n]["streams"][0]["state"] == "streaming" for n in ("by-uid", "looked-up"))
            return c if ok else None
        c = wait_for(two_streaming, 15.0, 0.2)
        check(c is not None, f"the camera by UID alone and the looked-up one stream: {cameras(kp)}")
        c = wait_for(lambda: (lambda cc: cc if cc["by-uid"]["streams"][0]["recorded_frames"] > 30
                              and cc["looked-up"]["streams"][0]["recorded_frames"] > 30 else None)(cameras(kp)),
                     15.0, 0.2) or cameras(kp)
        check(c["by-uid"]["streams"][0]["recorded_frames"] > 30, "the camera found by broadcast records")
        check(c["looked-up"]["streams"][0]["recorded_frames"] > 30, "the camera found by lookup records")
        a, b = cam_a.stats(), cam_b.stats()
        # by-uid reached A (2015) only; looked-up reached B (2018) only.
        check(a["bcudp"]["main"]["sessions"] == 1 and b["bcudp"]["main"]["sessions"] == 1
              and a["bcudp"]["main"]["frames_sent"] > 0 and b["bcudp"]["main"]["frames_sent"] > 0,
              f"each test camera streamed to exactly one client (A {a['bcudp']}, B {b['bcudp']})")
        wrong = wait_for(lambda: (lambda w: w if "UID" in w["streams"][0]["last_error"] else None)(
            cameras(kp)["wrong-uid"]), 15.0, 0.2) or cameras(kp)["wrong-uid"]
        check(wrong["streams"][0]["state"] != "streaming" and wrong["streams"][0]["recorded_frames"] == 0
              and "UID" in wrong["streams"][0]["last_error"],
              f"the camera named by a wrong UID is not connected, and its error names the UID: {wrong}")
        rc, out, _ = kp.ctl("cameras")
        check(rc == 0 and "UID" in out, f"keeppeekctl cameras says the UID is the problem:\n{out}")
    finally:
        cam_a.kill()
        cam_b.kill()


if __name__ == "__main__":
    run(test)
