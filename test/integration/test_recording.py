"""Recording from the real test camera: two Baichuan cameras (H.264 with AES, H.265 with
the BC cipher), main and sub streams, recorded for 30 s. Every recording file passes
`ffprobe -v error` with the right codec and a duration within 5% of the catalog's, and
`ffmpeg -v error -i FILE -f null -` decodes it without a message; a file still being
written plays up to its last complete fragment; the counts recorderd reports keep
matching what the cameras sent."""
import glob
import os
import struct
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

# struct cat_recording (recorderd/catalog.h), host byte order.
RECORDING = struct.Struct("<QIIHHIqqQIIqQ160s")


def catalog_recordings(data_dir):
    """Every row of the catalog's recordings table, read with mdb_dump(1)."""
    out = subprocess.run(["mdb_dump", "-s", "recordings", os.path.join(data_dir, "catalog")],
                         capture_output=True, text=True, check=True).stdout
    lines = out.split("HEADER=END\n", 1)[1].split("\n")
    rows = []
    values = [bytes.fromhex(l.strip()) for l in lines if l.startswith(" ")]
    for raw in values[1::2]:
        f = RECORDING.unpack(raw)
        rows.append({"id": f[0], "stream_id": f[1], "codec": f[2], "open": f[5], "start_ms": f[6],
                     "end_ms": f[7], "bytes": f[8], "fragments": f[9],
                     "path": f[13].split(b"\0", 1)[0].decode()})
    return rows


def probe(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_name",
                        "-of", "default=nw=1", path], capture_output=True, text=True)
    info = dict(l.split("=", 1) for l in r.stdout.split() if "=" in l)
    return r.returncode, r.stderr, info


def decode(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def test(make):
    work = tempfile.mkdtemp(prefix="kp-rec-")
    cams = {
        "bc-aes-h264": TestCamera(work, "bc-aes-h264", "h264", "baichuan", "aes"),
        "bc-xor-h265": TestCamera(work, "bc-xor-h265", "h265", "baichuan", "bc"),
    }
    codec = {"bc-aes-h264": "h264", "bc-xor-h265": "hevc"}
    try:
        config = CONFIG
        for name, cam in cams.items():
            config += f'[camera "{name}"]\nurl = {cam.url()}\n'
        kp = make(config=config)
        kp.wait_running()

        def all_streaming():
            c = cameras(kp)
            ok = c and len(c) == 2 and all(s["state"] == "streaming" for cam in c.values() for s in cam["streams"])
            return c if ok else None
        check(wait_for(all_streaming, 10.0, 0.1) is not None, f"all 4 streams streaming: {cameras(kp)}")
        time.sleep(15.0)

        # A file being written plays up to its last complete fragment.
        for name in cams:
            files = sorted(glob.glob(os.path.join(kp.data, "recordings", name, "main", "*.mp4")))
            check(len(files) >= 1, f"{name}/main: a recording file exists while recording")
            rc, err, info = probe(files[-1])
            check(rc == 0 and err == "" and info.get("codec_name") == codec[name],
                  f"{name}/main: the open file probes cleanly ({info}, {err.strip()!r})")
            rc, err = decode(files[-1])
            check(rc == 0 and err == "", f"{name}/main: the open file decodes cleanly ({err.strip()[:300]!r})")

        time.sleep(15.0)
        sent = {name: cam.pause() for name, cam in cams.items()}

        def settled():
            cc = cameras(kp)
            for name, cam in cams.items():
                for i, s in enumerate(("main", "sub")):
                    if cc[name]["streams"][i]["recorded_frames"] != sent[name][cam.protocol][s]["frames_sent"]:
                        return None
            return cc
        final = wait_for(settled, 8.0, 0.2) or cameras(kp)
        for name, cam in cams.items():
            for i, s in enumerate(("main", "sub")):
                got = final[name]["streams"][i]
                want = sent[name][cam.protocol][s]["frames_sent"]
                check(got["recorded_frames"] == want and got["recorded_gaps"] == 0,
                      f"{name}/{s}: recorderd received {got['recorded_frames']} of {want} frames")
        check(kp.stop() is not None, "keeppeekd stops (recorderd commits what it holds)")

        rows = {r["path"]: r for r in catalog_recordings(kp.data)}
        for name in cams:
            for s in ("main", "sub"):
                files = sorted(glob.glob(os.path.join(kp.data, "recordings", name, s, "*.mp4")))
                check(len(files) >= 1, f"{name}/{s}: {len(files)} recording files")
                total = 0.0
                for f in files:
                    rel = os.path.relpath(f, kp.data)
                    row = rows.get(rel)
                    check(row is not None and row["fragments"] > 0 and row["open"] == 0,
                          f"{rel}: in the catalog, closed ({row and row['fragments']} fragments)")
                    check(os.path.getsize(f) == row["bytes"], f"{rel}: file size matches the catalog")
                    rc, err, info = probe(f)
                    cat_s = (row["end_ms"] - row["start_ms"]) / 1000.0
                    dur = float(info.get("duration", "0"))
                    check(rc == 0 and err == "" and info.get("codec_name") == codec[name],
                          f"{rel}: ffprobe clean, codec {info.get('codec_name')}")
                    check(abs(dur - cat_s) <= 0.05 * cat_s, f"{rel}: ffprobe {dur:.3f} s, catalog {cat_s:.3f} s")
                    rc, err = decode(f)
                    check(rc == 0 and err == "", f"{rel}: ffmpeg decodes it without errors ({err.strip()[:300]!r})")
                    total += cat_s
                check(total >= 25.0, f"{name}/{s}: {total:.1f} s recorded in about 30 s")
    finally:
        for cam in cams.values():
            cam.kill()


run(test)
