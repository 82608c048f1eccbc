"""RTSP quirks of real cameras (decision 0030, "Real cameras"), each reproduced by one test
camera fault and read by ingestd's own RTSP client over TCP (the sequence jump over UDP too): Hikvision's "ssrc= X"
(ssrc-space), Anjvision's Content-Base without a scheme (base-no-scheme), XMeye's
session id changing at the audio SETUP (session-change), Reolink's marked parameter
sets with the last frame's timestamp (sps-marker), live555 proxies' missing marker bits
(no-marker), Geovision's PT 50 duplicates (pt50-dup), a sequence jump (seq-jump, Reolink's
stale LIVE555 session) and an encoder restart (ssrc-change), a malformed
sprop-parameter-sets (bad-sprop) and 302 redirects (redirect: 3 are followed, a camera
that needs 4 fails with a log line saying so). Each other camera streams
without a reconnect; those whose stream is whole record every frame sent (the marker-less
one all but the last, which waits for the next timestamp); the restarted ones lose at most
the frames up to the next keyframe and log the restart; every recording decodes clean and
no worker restarted."""
import glob
import os
import subprocess
import tempfile
import time

from kp import FIXTURES, TestCamera, cameras, check, metric, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""
GOP = 25  # the fixtures' keyframe interval, in frames

# name: (faults, frames that may be missing at the end, a log line that must appear)
QUIRKS = {
    "hikvision": (["ssrc-space"], 0, None),
    "anjvision": (["base-no-scheme"], 0, "is no rtsp:// URL"),
    "xmeye": (["session-change"], 0, "the first is kept"),
    "reolink": (["sps-marker"], 0, None),
    "proxy": (["no-marker"], 1, "marker bits do not end its pictures"),
    "geovision": (["pt50-dup"], 0, "payload type other than the SDP's"),
    "jump": (["seq-jump=3"], GOP, "RTP source restarted"),
    "jump-udp": (["seq-jump=3"], GOP, "RTP source restarted"),  # through the UDP reorder window
    "restart": (["ssrc-change=3"], GOP, "RTP source restarted"),
    "sprop": (["bad-sprop"], 0, "malformed parameter sets in the SDP"),
    "moved": (["redirect"], 0, "redirected (302)"),
}


def decode(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rtsp-quirks-")
    cams = {}
    try:
        for name, (faults, _, _) in QUIRKS.items():
            extra = ("--audio", os.path.join(FIXTURES, "audio.aac")) if name == "xmeye" else ()
            cams[name] = TestCamera(work, name, "h264", "rtsp", faults=faults, main="sub.h264", extra=extra)
        config = CONFIG
        for name, cam in cams.items():
            url = cam.url()
            if name == "moved":  # each redirect takes one /moved off: 3, the most followed
                url = url.replace("/main", "/moved/moved/moved/main")
            config += f'[camera "{name}"]\nurl = {url}\ntransport = {"udp" if name.endswith("-udp") else "tcp"}\n'
        too_far = TestCamera(work, "moved4", "h264", "rtsp", faults=["redirect"], main="sub.h264")
        cams["moved4"] = too_far
        config += (f'[camera "moved4"]\nurl = {too_far.url().replace("/main", "/moved/moved/moved/moved/main")}\n'
                   'transport = tcp\n')
        kp = make(config=config)
        kp.wait_running()

        def all_streaming():
            c = cameras(kp)
            ok = c and all(c[n]["streams"][0]["state"] == "streaming" and c[n]["streams"][0]["recorded_frames"] > 0
                           for n in QUIRKS)
            return c if ok else None
        check(wait_for(all_streaming, 30.0, 0.3) is not None, f"every quirky camera streams: {cameras(kp)}")
        time.sleep(6.0)  # past the seq-jump and ssrc-change at 3 s
        sent = {name: cam.pause() for name, cam in cams.items() if name in QUIRKS}

        def settled():
            c = cameras(kp)
            return c if all(c[n]["streams"][0]["recorded_frames"] >=
                            sent[n]["rtsp"]["main"]["frames_sent"] - QUIRKS[n][1] for n in QUIRKS) else None
        final = wait_for(settled, 8.0, 0.3) or cameras(kp)
        log = kp.log_text()
        for name, (faults, missing, line) in QUIRKS.items():
            s = final[name]["streams"][0]
            want = sent[name]["rtsp"]["main"]["frames_sent"]
            got = s["recorded_frames"]
            check(want - missing <= got <= want,
                  f"{name} ({faults[0]}): {got} frames recorded of {want} sent (at most {missing} missing)")
            check(s["reconnects"] == 0, f"{name}: no reconnect ({s['reconnects']})")
            if missing == 0:
                check(s["loss_dropped"] == 0 and s["rtp_lost_packets"] == 0,
                      f"{name}: nothing lost or dropped ({s['rtp_lost_packets']} lost, {s['loss_dropped']} dropped)")
            if line:
                check(f"camera {name}" in log and line in log, f"{name}: the log says {line!r}")
            # Each fault counted where it belongs (keeppeekctl(8), cameras): a source restart
            # once, PT 50 packets as foreign; nothing of either for the others.
            restarts = 1 if faults[0].startswith(("seq-jump", "ssrc-change")) else 0
            check(s["rtp_resyncs"] == restarts, f"{name}: {restarts} RTP source restarts counted ({s['rtp_resyncs']})")
            if faults[0] == "pt50-dup":
                check(s["rtp_foreign_dropped"] > 0, f"{name}: PT 50 packets counted as foreign ({s['rtp_foreign_dropped']})")
            elif restarts == 0:
                check(s["rtp_foreign_dropped"] == 0, f"{name}: no foreign packets counted ({s['rtp_foreign_dropped']})")
            # After a restart the first packet may continue a fragmentation unit begun
            # before it: that one is malformed for us (the log names it).
            check(s["rtp_malformed"] <= restarts and s["audio_dropped"] == 0,
                  f"{name}: at most {restarts} malformed RTP ({s['rtp_malformed']}), no audio dropped "
                  f"({s['audio_dropped']})")
        token = kp.token()
        check(metric(kp, token, 'keeppeek_stream_rtp_resyncs_total{camera="restart",stream="main"}') == 1,
              "the restart is on /metrics")
        check((metric(kp, token, 'keeppeek_stream_rtp_foreign_dropped_total{camera="geovision",stream="main"}') or 0) > 0,
              "Geovision's PT 50 packets are on /metrics")
        check("more than 3 redirects" in log and "camera moved4" in log, "moved4: a 4th redirect is refused")
        check(final["moved4"]["streams"][0]["recorded_frames"] == 0, "moved4: nothing recorded")
        check(kp.stop() is not None, "keeppeekd stops")
        for name in QUIRKS:
            files = sorted(glob.glob(os.path.join(kp.data, "recordings", name, "main", "*.mp4")))
            check(files, f"{name}: recorded files")
            for f in files:
                rc, err = decode(f)
                check(rc == 0 and err == "", f"{f}: ffmpeg -v error is clean ({err.strip()[:300]!r})")
    finally:
        for cam in cams.values():
            cam.kill()


run(test)
