"""RTSP media that ends or arrives damaged. A camera cuts its TCP connection in the
middle of a frame's RTP packets (cut-mid-frame=3): the cut access unit is dropped and
counted (truncated_dropped, and a log line), never recorded, so recorderd holds exactly
the frames sent whole; ingestd reconnects once. A camera over UDP loses 1% of its RTP
packets (udp-loss=1): the losses are counted (rtp_lost_packets), the damaged access
units and those up to the next keyframe are dropped (loss_dropped). Every recording of
both decodes with `ffmpeg -v error` clean, and no worker restarted."""
import glob
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
HELD = 0  # an access unit is complete at its marker bit: nothing is held back (decision 0030)


def decode(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtsp-cut-")
    cams = {"cut": TestCamera(work, "cut", "h264", "rtsp", faults=["cut-mid-frame=3"]),
            "lossy": TestCamera(work, "lossy", "h264", "rtsp", faults=["udp-loss=1"])}
    try:
        config = CONFIG
        config += f'[camera "cut"]\nurl = {cams["cut"].url()}\ntransport = tcp\n'
        config += f'[camera "lossy"]\nurl = {cams["lossy"].url()}\ntransport = udp\n'
        kp = make(config=config)
        kp.wait_running()

        def cut_and_back():
            c = cameras(kp)
            s = c and c["cut"]["streams"][0]
            return c if s and s["truncated_dropped"] >= 1 and s["state"] == "streaming" else None
        c = wait_for(cut_and_back, 20.0, 0.2)
        check(c is not None, f"cut: the cut frame is counted and the stream is back: {cameras(kp)}")
        check(c["cut"]["streams"][0]["truncated_dropped"] == 1, "cut: one truncated access unit dropped")
        check("may be cut and is dropped" in kp.log_text(), "cut: the drop is logged")
        time.sleep(4.0)
        sent = {name: cam.pause() for name, cam in cams.items()}
        want = sent["cut"]["rtsp"]["main"]["frames_sent"]

        def settled():
            cc = cameras(kp)
            return cc if cc["cut"]["streams"][0]["recorded_frames"] >= want - HELD else None
        final = wait_for(settled, 8.0, 0.2) or cameras(kp)
        s = final["cut"]["streams"][0]
        check(s["recorded_frames"] == want - HELD and s["recorded_gaps"] == 0,
              f"cut: recorderd received {s['recorded_frames']} frames, {want} sent whole ({HELD} held)")
        check(s["reconnects"] == 1 and s["truncated_dropped"] == 1,
              f"cut: one reconnect ({s['reconnects']}), one truncated ({s['truncated_dropped']})")
        lossy = final["lossy"]["streams"][0]
        check(lossy["transport"] == "udp" and lossy["rtp_lost_packets"] > 0 and lossy["loss_dropped"] > 0,
              f"lossy: losses counted over UDP ({lossy['rtp_lost_packets']} packets, "
              f"{lossy['loss_dropped']} access units dropped)")
        check(lossy["recorded_frames"] > 0 and lossy["reconnects"] == 0,
              f"lossy: {lossy['recorded_frames']} frames recorded, {lossy['reconnects']} reconnects")
        check("RTP packets lost" in kp.log_text(), "lossy: the losses are logged")
        check(kp.stop() is not None, "keeppeekd stops")
        for name in cams:
            files = sorted(glob.glob(os.path.join(kp.data, "recordings", name, "main", "*.mp4")))
            check(files, f"{name}: recorded files")
            for f in files:
                rc, err = decode(f)
                check(rc == 0 and err == "", f"{f}: ffmpeg -v error is clean ({err.strip()[:300]!r})")
    finally:
        for cam in cams.values():
            cam.kill()


run(test)
