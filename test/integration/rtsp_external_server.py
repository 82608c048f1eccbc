#!/usr/bin/python3
"""An RTSP server that is not ours: GStreamer's gst-rtsp-server serving an Annex-B H.264
or H.265 fixture, looped and paced in real time with continuous timestamps, on
rtsp://127.0.0.1:PORT/stream. Prints "ready" on stdout once listening; runs until
SIGTERM or SIGINT.

Debian packages: python3-gi, gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0 (GstRtsp),
gir1.2-gst-rtsp-server-1.0,
gstreamer1.0-plugins-base (appsrc), gstreamer1.0-plugins-good (rtph264pay, rtph265pay),
gstreamer1.0-plugins-bad (h264parse, h265parse). Run it with Debian's /usr/bin/python3,
where python3-gi lives.

The file is split into access units here (GStreamer's parsers do not timestamp a raw
elementary stream read from a file) and pushed through appsrc with one frame duration
per access unit; the server's sinks pace them against the pipeline clock. An MPEG-TS
fixture (FIXTURE.h264.ts, FIXTURE.h265.ts: B-frames) is copied to Annex-B by ffmpeg and
each access unit, in decode order, gets the PTS - DTS that ffprobe reads from the
transport stream; the payloader then stamps each RTP packet with the PTS.

With --audio aac the stream has a second track: a live 440 Hz tone, 16 kHz mono, encoded
by voaacenc and sent by rtpmp4gpay (mpeg4-generic, RFC 3640; gstreamer1.0-plugins-bad
and -good); with --audio pcmu the tone at 8 kHz through mulawenc and rtppcmupay (RFC 3551
PCMU); with --audio opus the tone at 48 kHz through opusenc and rtpopuspay (RFC 7587,
20 ms frames; gstreamer1.0-plugins-base and -good). GStreamer times both tracks on the
pipeline clock and sends its own RTCP sender reports.

usage: rtsp_external_server.py FIXTURE.h264|FIXTURE.h265|FIXTURE.h26x.ts PORT [--fps N] [--user U --password P]
         [--audio aac|pcmu|opus]
"""
import argparse
import re
import signal
import subprocess
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402


def split_nals(data):
    """(start offset of the start code, NAL header offset) for each NAL unit."""
    return [(m.start() - (1 if m.start() > 0 and data[m.start() - 1] == 0 else 0), m.end())
            for m in re.finditer(b"\x00\x00\x01", data)]


def starts_access_unit(codec, data, hdr):
    """True when the NAL unit at hdr begins a new access unit (H.264 7.4.1.2.3, H.265 7.4.2.4.4)."""
    if codec == "h264":
        t = data[hdr] & 0x1F
        if t in (6, 7, 8, 9, 10, 14, 15):
            return True
        return t in (1, 5) and hdr + 1 < len(data) and data[hdr + 1] & 0x80 != 0  # first_mb_in_slice == 0
    t = (data[hdr] >> 1) & 0x3F
    if t in (32, 33, 34, 35, 39):
        return True
    return t < 32 and hdr + 2 < len(data) and data[hdr + 2] & 0x80 != 0  # first_slice_segment_in_pic_flag


def access_units(codec, data):
    nals = split_nals(data)
    aus, start, seen_vcl = [], None, False
    for i, (sc, hdr) in enumerate(nals):
        if start is not None and seen_vcl and starts_access_unit(codec, data, hdr):
            aus.append(data[start:sc])
            start, seen_vcl = None, False
        if start is None:
            start = sc
        t = data[hdr] & 0x1F if codec == "h264" else (data[hdr] >> 1) & 0x3F
        seen_vcl = seen_vcl or (t in (1, 5) if codec == "h264" else t < 32)
    if start is not None:
        aus.append(data[start:])
    return aus


def ts_fixture(path, codec):
    """Access units of an MPEG-TS fixture in decode order, and each one's PTS - DTS in ns."""
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-f",
                          "h264" if codec == "h264" else "hevc", "-"], capture_output=True, check=True).stdout
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,dts",
                          "-of", "csv=p=0", path], capture_output=True, text=True, check=True).stdout
    times = [tuple(int(v) for v in l.split(",")[:2]) for l in out.split()]
    aus = access_units(codec, raw)
    if len(aus) != len(times):
        raise SystemExit(f"{path}: {len(aus)} access units but {len(times)} packets")
    return aus, [(pts - dts) * Gst.SECOND // 90000 for pts, dts in times]


class Feeder:
    """Pushes access units into a media's appsrc, looping, with continuous timestamps."""

    def __init__(self, aus, fps, cto=None):
        self.aus, self.fps, self.index = aus, fps, 0
        self.cto = cto or [0] * len(aus)

    def need_data(self, src, _length):
        for _ in range(5):
            au = self.aus[self.index % len(self.aus)]
            buf = Gst.Buffer.new_wrapped(au)
            buf.dts = self.index * Gst.SECOND // self.fps
            buf.pts = buf.dts + self.cto[self.index % len(self.aus)]
            buf.duration = Gst.SECOND // self.fps
            self.index += 1
            if src.emit("push-buffer", buf) != Gst.FlowReturn.OK:
                return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture")
    ap.add_argument("port", type=int)
    ap.add_argument("--fps", type=int, default=25)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--audio", choices=("aac", "pcmu", "opus"))
    args = ap.parse_args()
    name = args.fixture[:-3] if args.fixture.endswith(".ts") else args.fixture
    codec = "h265" if name.endswith((".h265", ".hevc")) else "h264"
    Gst.init(None)
    cto = None
    if name != args.fixture:
        aus, cto = ts_fixture(args.fixture, codec)
    else:
        with open(args.fixture, "rb") as f:
            aus = access_units(codec, f.read())
    if not aus:
        print(f"{args.fixture}: no access units", file=sys.stderr)
        return 1

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    factory = GstRtspServer.RTSPMediaFactory()
    caps = f"video/x-{codec},stream-format=byte-stream,alignment=au,framerate={args.fps}/1"
    audio = {
        None: "",
        "aac": " audiotestsrc is-live=true freq=440 ! audio/x-raw,rate=16000,channels=1 ! voaacenc bitrate=32000 "
               "! aacparse ! rtpmp4gpay name=pay1 pt=97",
        "pcmu": " audiotestsrc is-live=true freq=440 ! audio/x-raw,rate=8000,channels=1 ! mulawenc "
                "! rtppcmupay name=pay1",
        "opus": " audiotestsrc is-live=true freq=440 ! audio/x-raw,rate=48000,channels=1 ! opusenc bitrate=32000 "
                "frame-size=20 ! rtpopuspay name=pay1 pt=111",
    }[args.audio]
    factory.set_launch(f'( appsrc name=src is-live=true format=time caps="{caps}" '
                       f"! {codec}parse ! rtp{codec}pay name=pay0 pt=96 config-interval=-1{audio} )")
    factory.set_shared(True)

    def configure(_factory, media):
        src = media.get_element().get_child_by_name("src")
        src.connect("need-data", Feeder(aus, args.fps, cto).need_data)

    factory.connect("media-configure", configure)
    if args.user:
        auth = GstRtspServer.RTSPAuth()
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
        auth.add_digest(args.user, args.password or "", token)
        server.set_auth(auth)
        perms = GstRtspServer.RTSPPermissions()
        perms.add_role_from_structure(Gst.Structure.new_from_string(
            "user, media.factory.access=(boolean)true, media.factory.construct=(boolean)true"))
        factory.set_permissions(perms)
    server.get_mount_points().add_factory("/stream", factory)
    if server.attach(None) == 0:
        print(f"cannot listen on 127.0.0.1:{args.port}", file=sys.stderr)
        return 1

    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    print("ready", flush=True)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
