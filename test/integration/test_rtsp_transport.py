"""RTSP transports against the test camera (keeppeek.conf(5) transport): tcp, udp, auto
with UDP working, auto with a camera whose UDP never arrives (udp-silent: ingestd falls
back to TCP after 5 s), auto with a camera that answers 461 Unsupported Transport to
UDP (udp-461: TCP at once), and udp with adjacent RTP packets swapped (udp-reorder:
ingestd's reorder window puts them back). A camera set to udp whose UDP never
arrives fails with "no media within 5 s of PLAY" and is retried. Each stream shows the
transport it ended
on in `keeppeekctl cameras --json`, never reconnected, and every frame the cameras sent
reached recorderd (none is held: ingestd's RTP depacketizer completes an access unit at
its marker bit, decision 0030); every recording decodes with `ffmpeg -v error`."""
import glob
import os
import re
import socket
import subprocess
import tempfile
import time

from kp import TestCamera, cameras, check, free_port_run, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""

# name: (transport key, test camera faults, transport expected in use)
CAMERAS = {
    "tcp": ("tcp", [], "tcp"),
    "udp": ("udp", [], "udp"),
    "auto-udp": ("auto", [], "udp"),
    "auto-silent": ("auto", ["udp-silent"], "tcp"),
    "auto-461": ("auto", ["udp-461"], "tcp"),
    "udp-reorder": ("udp", ["udp-reorder"], "udp"),
}
STREAMS = {"udp-reorder": ("main", "sub")}  # both over UDP from one narrow port range
HELD = 0  # an access unit is complete at its marker bit: nothing is held back (decision 0030)


def decode(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtsp-tr-")
    cams = {name: TestCamera(work, name, "h264", "rtsp", faults=faults)
            for name, (_, faults, _) in CAMERAS.items()}
    silent = TestCamera(work, "udp-silent", "h264", "rtsp", faults=["udp-silent"])
    try:
        config = CONFIG
        for name, cam in cams.items():
            config += f'[camera "{name}"]\nurl = {cam.url()}\ntransport = {CAMERAS[name][0]}\n'
        lo = free_port_run(10, socket.SOCK_DGRAM)
        config += f"sub_url = {cams['udp-reorder'].sub_url()}\nrtp_ports = {lo}-{lo + 9}\n"  # the last camera
        config += f'[camera "udp-silent"]\nurl = {silent.url()}\ntransport = udp\n'
        kp = make(config=config)
        kp.wait_running()

        def all_streaming():
            c = cameras(kp)
            ok = c and len(c) == len(cams) + 1 and all(
                len(c[n]["streams"]) == len(STREAMS.get(n, ("main",)))
                and all(s["state"] == "streaming" for s in c[n]["streams"]) for n in cams)
            return c if ok else None
        c = wait_for(all_streaming, 20.0, 0.2)
        check(c is not None, f"every camera streaming within 20 s: {cameras(kp)}")
        for name, (_, _, want) in CAMERAS.items():
            for s in c[name]["streams"]:
                check(s["transport"] == want, f"{name}/{s['name']}: RTP over {s['transport']!r}, expected {want}")
        log = kp.log_text()
        for name in ("auto-silent", "auto-461"):
            check(f"camera {name}: main stream: over UDP:" in log and "trying RTP over TCP" in log,
                  f"{name}: the fall back to TCP is logged")
        check("no media within 5 s of PLAY" in log, "auto-silent: the log says why (no media within 5 s)")
        check("461 Unsupported Transport" in log, "auto-461: the log names the 461")
        def silent_failed():
            c = cameras(kp)
            s = c and c["udp-silent"]["streams"][0]
            return s if s and "no media within 5 s of PLAY" in s["last_error"] else None
        s = wait_for(silent_failed, 15.0, 0.2)
        check(s is not None and s["state"] in ("unreachable", "backoff", "connecting") and s["transport"] == "udp",
              f"udp-silent: fails with 'no media within 5 s of PLAY': {s or cameras(kp)['udp-silent']}")
        with open(cams["udp-reorder"].log_path) as f:
            ports = [tuple(map(int, m)) for m in re.findall(r"RTP over UDP to client ports (\d+)-(\d+)", f.read())]
        check(len(set(ports)) == 2 and all(lo <= a < b <= lo + 9 and a % 2 == 0 and b == a + 1 for a, b in ports),
              f"udp-reorder: main and sub each on an even/odd pair within rtp_ports {lo}-{lo + 9}: {ports}")
        time.sleep(6.0)
        sent = {name: cam.pause() for name, cam in cams.items()}

        def settled():
            cc = cameras(kp)
            for name in cams:
                for i, st in enumerate(STREAMS.get(name, ("main",))):
                    s = cc[name]["streams"][i]
                    slack = 1 if name == "udp-reorder" else 0
                    if s["recorded_frames"] < (sent[name]["rtsp"][st]["frames_sent"] - HELD - s["loss_dropped"]
                                               - s["overrun_dropped"] - slack):
                        return None
            return cc
        final = wait_for(settled, 8.0, 0.2) or cameras(kp)
        for name, st, i in ((n, st, i) for n in cams for i, st in enumerate(STREAMS.get(n, ("main",)))):
            want = sent[name]["rtsp"][st]["frames_sent"]
            s = final[name]["streams"][i]
            check(want > 100, f"{name}/{st}: the camera sent {want} frames")
            # udp-reorder: the camera may still hold the last frame's packet for its swap.
            slack = 1 if name == "udp-reorder" else 0
            # A loaded machine may leave ingestd's loop behind the RTSP reader: those
            # drops are counted (overrun_dropped), and nothing else may go missing.
            dropped = s["loss_dropped"] + s["overrun_dropped"]
            check(0 <= want - HELD - dropped - s["recorded_frames"] <= slack and s["recorded_gaps"] == 0,
                  f"{name}/{st}: recorderd received {s['recorded_frames']} of {want} frames ({HELD} held, "
                  f"{s['loss_dropped']} dropped for loss, {s['overrun_dropped']} with ingestd behind)")
            check(s["reconnects"] == 0, f"{name}/{st}: no reconnects ({s['reconnects']})")
            # Swapping the first two packets loses the first: ingestd takes the first
            # packet it receives as the start of the sequence (as libavformat did); its
            # frame and those up to the next keyframe are dropped. Every later swap is put
            # back in order, unless the reading thread was kept off the CPU for longer than
            # the reorder window waits for a missing packet (100 ms), which a loaded
            # machine does now and then: such a
            # loss is counted and dropped like the first. Hundreds of swaps are sent, so a
            # reorder queue that did not work would lose far more than 5.
            lost = (1, 5) if name == "udp-reorder" else (0, 0)
            check(lost[0] <= s["rtp_lost_packets"] <= lost[1] and (s["loss_dropped"] > 0) == (lost[0] > 0)
                  and s["truncated_dropped"] == 0,
                  f"{name}/{st}: {s['rtp_lost_packets']} RTP packets lost (expected {lost[0]} to {lost[1]}), "
                  f"{s['loss_dropped']} access units dropped for loss, {s['truncated_dropped']} truncated")
        check(kp.stop() is not None, "keeppeekd stops")
        for name, st in ((n, st) for n in cams for st in STREAMS.get(n, ("main",))):
            files = sorted(glob.glob(os.path.join(kp.data, "recordings", name, st, "*.mp4")))
            check(files, f"{name}/{st}: recorded files")
            for f in files:
                rc, err = decode(f)
                check(rc == 0 and err == "", f"{f}: ffmpeg -v error is clean ({err.strip()[:300]!r})")
    finally:
        for cam in (*cams.values(), silent):
            cam.kill()


run(test)
