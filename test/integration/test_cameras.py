"""Four cameras on the real test camera: Baichuan TCP with AES (H.264), Baichuan TCP with
BC XOR (H.265), BCUDP with 5% packet loss (H.264), RTSP (H.265). Every stream is
`streaming` within 5 s of the workers running, and every frame the cameras sent over
about 10 s reached recorderd (BCUDP: after retransmission, none missing)."""
import os
import tempfile
import time

from kp import TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def test(make):
    work = tempfile.mkdtemp(prefix="kp-cams-")
    cams = {
        "bc-aes-h264": TestCamera(work, "bc-aes-h264", "h264", "baichuan", "aes"),
        "bc-xor-h265": TestCamera(work, "bc-xor-h265", "h265", "baichuan", "bc"),
        "bcudp-h264": TestCamera(work, "bcudp-h264", "h264", "bcudp", "aes", faults=["udp-loss=5"]),
        "rtsp-h265": TestCamera(work, "rtsp-h265", "h265", "rtsp"),
    }
    try:
        config = CONFIG
        for name, cam in cams.items():
            config += f'[camera "{name}"]\nurl = {cam.url()}\n'
            if cam.protocol == "rtsp":
                config += f"sub_url = {cam.sub_url()}\n"
        kp = make(config=config)
        kp.wait_running()
        t0 = time.monotonic()

        def all_streaming():
            c = cameras(kp)
            if not c or len(c) != 4:
                return None
            ok = all(s["state"] == "streaming" for cam in c.values() for s in cam["streams"])
            return c if ok else None
        c = wait_for(all_streaming, 5.0, 0.1)
        elapsed = time.monotonic() - t0
        check(c is not None, f"all 8 streams streaming within 5 s ({elapsed:.2f} s): {cameras(kp)}")
        want = {"bc-aes-h264": ("h264", 1920, 1080), "bc-xor-h265": ("h265", 1920, 1080),
                "bcudp-h264": ("h264", 1920, 1080), "rtsp-h265": ("h265", 1920, 1080)}
        for name, (codec, w, h) in want.items():
            main, sub = c[name]["streams"]
            check(main["codec"] == codec and (main["width"], main["height"]) == (w, h),
                  f"{name}/main is {main['codec']} {main['width']}x{main['height']}")
            check(sub["codec"] == codec and (sub["width"], sub["height"]) == (640, 360),
                  f"{name}/sub is {sub['codec']} {sub['width']}x{sub['height']}")
        time.sleep(10.0)
        sent = {name: cam.pause() for name, cam in cams.items()}

        def settled():
            cc = cameras(kp)
            for name, cam in cams.items():
                st = sent[name][cam.protocol]
                for i, s in enumerate(("main", "sub")):
                    if cc[name]["streams"][i]["recorded_frames"] < st[s]["frames_sent"]:
                        return None
            return cc
        final = wait_for(settled, 8.0, 0.2) or cameras(kp)
        for name, cam in cams.items():
            st = sent[name][cam.protocol]
            for i, s in enumerate(("main", "sub")):
                got = final[name]["streams"][i]
                check(st[s]["frames_sent"] > 200, f"{name}/{s}: the camera sent {st[s]['frames_sent']} frames")
                # Every protocol hands over each access unit once it is whole (RTSP: at
                # its marker bit, decision 0030), so every frame sent is recorded.
                check(got["recorded_frames"] == st[s]["frames_sent"] and got["recorded_gaps"] == 0,
                      f"{name}/{s}: recorderd received {got['recorded_frames']} of {st[s]['frames_sent']} "
                      f"(gaps {got['recorded_gaps']})")
                check(got["reconnects"] == 0, f"{name}/{s}: no reconnects")
        rc, out, _ = kp.ctl("cameras")
        check(rc == 0 and "bcudp-h264" in out and "streaming" in out, "keeppeekctl cameras prints a table")
    finally:
        for cam in cams.values():
            cam.kill()


run(test)
