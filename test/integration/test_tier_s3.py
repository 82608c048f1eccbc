"""tierd's S3 client (tierd/s3.c, driven through tier-s3-probe) against a real Ceph RADOS
Gateway started by the test (ceph_rgw.py): PUT, HEAD, GET of whole objects and of byte
ranges, compared byte for byte with what was sent; a multipart upload; a multipart upload
stopped after its first part, radosgw killed and started again, then resumed from the
parts the store lists and completed; DELETE and abort idempotent; the wrong secret (403),
a range past the end (416), no gateway (connection refused); and a stalled OSD (SIGSTOP),
which holds a request without an error, ended by the client's own timeout, after which
the same PUT succeeds."""
import os
import random
import signal
import subprocess
import sys
import time

import ceph_rgw
from kp import BUILD, check

PROBE = os.path.join(BUILD, "tierd", "tier-s3-probe")


def probe(rgw, *args, secret=None, env_extra=None, timeout=120):
    env = rgw.probe_env(secret)
    env.update(env_extra or {})
    r = subprocess.run([PROBE] + list(args), capture_output=True, text=True, env=env, timeout=timeout)
    out = r.stdout.strip()
    if r.stderr.strip():
        print(r.stderr.strip(), file=sys.stderr)
    print(f"     probe {' '.join(args[:2])}: {out.splitlines()[-1] if out else r.stderr.strip()}")
    return r.returncode, out


def last(out):
    return out.splitlines()[-1] if out else ""


def main():
    ceph_rgw.with_cluster("kp-tier-s3-", run)
    print("1 passed, 0 failed")


def run(rgw, d):
    rnd = random.Random(22)
    small = os.path.join(d, "small.bin")
    big = os.path.join(d, "big.bin")
    with open(small, "wb") as f:
        f.write(rnd.randbytes(100_000))
    with open(big, "wb") as f:
        f.write(rnd.randbytes(12 * 1024 * 1024 + 12345))
    small_bytes = open(small, "rb").read()
    big_bytes = open(big, "rb").read()
    got = os.path.join(d, "got.bin")

    rc, out = probe(rgw, "mkbucket")
    check(rc == 0, "the bucket is made with a signed PUT")
    rc, out = probe(rgw, "mkbucket")
    check(rc == 0, "making a bucket we already own again is success")

    # PUT, HEAD, GET whole and ranged.
    rc, out = probe(rgw, "put", "cam1/main/a.mp4", small)
    check(rc == 0 and last(out).startswith("ok etag="), "a 100 kB PUT is answered with the MD5 we sent")
    rc, out = probe(rgw, "head", "cam1/main/a.mp4")
    check(rc == 0 and "size=100000" in out, "HEAD answers the object's size")
    rc, out = probe(rgw, "get", "cam1/main/a.mp4", "0", "100000", got)
    check(rc == 0 and open(got, "rb").read() == small_bytes, "GET of the whole object is byte-identical")
    rc, out = probe(rgw, "get", "cam1/main/a.mp4", "4096", "1000", got)
    check(rc == 0 and open(got, "rb").read() == small_bytes[4096:5096], "a Range GET returns exactly its bytes")
    rc, out = probe(rgw, "get", "cam1/main/a.mp4", "99990", "1000", got)
    check(rc == 0 and open(got, "rb").read() == small_bytes[99990:], "a Range GET over the end returns what is there")
    rc, out = probe(rgw, "get", "cam1/main/a.mp4", "100000", "10", got)
    check(rc == 1 and "ERANGE" in out, "a Range GET past the end is ERANGE (416)")
    rc, out = probe(rgw, "get", "cam1/main/none.mp4", "0", "10", got)
    check(rc == 1 and "ENOENT" in out, "a GET of a missing object is ENOENT")

    # Key names that need encoding are signed as sent.
    rc, out = probe(rgw, "put", "cam 2/x+y=z$.mp4", small)
    check(rc == 0, "a key with a space, '+', '=' and '$' is signed and stored")
    rc, out = probe(rgw, "get", "cam 2/x+y=z$.mp4", "0", "100000", got)
    check(rc == 0 and open(got, "rb").read() == small_bytes, "and read back under the same key")

    # Authentication.
    rc, out = probe(rgw, "head", "cam1/main/a.mp4", secret="x" * 40)
    check(rc == 1 and "EACCES" in out, "the wrong secret is refused (403, EACCES)")

    # Multipart, whole.
    rc, out = probe(rgw, "upload", "cam1/main/big.mp4", big, str(5 * 1024 * 1024))
    check(rc == 0 and last(out).endswith("parts=3"), "a 12 MiB multipart upload of 3 parts completes, its ETag checked")
    rc, out = probe(rgw, "get", "cam1/main/big.mp4", "0", str(len(big_bytes)), got)
    check(rc == 0 and open(got, "rb").read() == big_bytes, "the multipart object is byte-identical")
    rc, out = probe(rgw, "get", "cam1/main/big.mp4", str(5 * 1024 * 1024 - 10), "20", got)
    check(rc == 0 and open(got, "rb").read() == big_bytes[5 * 1024 * 1024 - 10:5 * 1024 * 1024 + 10],
          "a Range GET across a part boundary returns exactly its bytes")

    # Multipart, stopped after one part, the gateway killed and started again, resumed.
    rc, out = probe(rgw, "upload", "cam1/main/resumed.mp4", big, str(5 * 1024 * 1024), "1")
    check(rc == 0 and "ok stopped after 1 parts" in out, "an upload stops after its first part")
    upload_id = [ln.split()[1] for ln in out.splitlines() if ln.startswith("upload-id ")][0]
    rgw.kill("rgw")
    rc, out = probe(rgw, "head", "cam1/main/a.mp4", env_extra={"KP_S3_TIMEOUT_MS": "5000"})
    check(rc == 1 and "ECONNREFUSED" in out, "with radosgw killed the client says ECONNREFUSED")
    rgw.start("rgw")
    rc, out = probe(rgw, "resume", "cam1/main/resumed.mp4", big, str(5 * 1024 * 1024), upload_id)
    check(rc == 0 and "listed 1 parts" in out and "part 1 kept" in out and last(out).endswith("parts=3"),
          "after a gateway restart the upload lists its part, keeps it (its MD5 matches) and completes")
    rc, out = probe(rgw, "get", "cam1/main/resumed.mp4", "0", str(len(big_bytes)), got)
    check(rc == 0 and open(got, "rb").read() == big_bytes, "the resumed object is byte-identical")
    rc, out = probe(rgw, "resume", "cam1/main/resumed.mp4", big, str(5 * 1024 * 1024), upload_id)
    check(rc == 0 and "completed before" in out,
          "resuming a completed upload finds it gone and the object there, its ETag the one our parts make")
    rc, out = probe(rgw, "resume", "cam1/main/resumed.mp4", small, str(5 * 1024 * 1024), upload_id)
    check(rc == 1 and "EBADMSG" in out, "but not when other bytes are there")

    # Abort and delete, idempotent.
    rc, out = probe(rgw, "upload", "cam1/main/aborted.mp4", big, str(5 * 1024 * 1024), "1")
    aid = [ln.split()[1] for ln in out.splitlines() if ln.startswith("upload-id ")][0]
    rc, out = probe(rgw, "abort", "cam1/main/aborted.mp4", aid)
    check(rc == 0, "an upload is aborted")
    rc, out = probe(rgw, "abort", "cam1/main/aborted.mp4", aid)
    check(rc == 0, "aborting it again is success (NoSuchUpload)")
    rc, out = probe(rgw, "delete", "cam1/main/a.mp4")
    check(rc == 0, "an object is deleted")
    rc, out = probe(rgw, "head", "cam1/main/a.mp4")
    check(rc == 1 and "ENOENT" in out, "a deleted object is gone")
    rc, out = probe(rgw, "delete", "cam1/main/a.mp4")
    check(rc == 0, "deleting it again is success")

    # A stalled OSD holds the request without an error: our timeout ends it.
    osd = rgw.procs["osd"]
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        t = time.monotonic()
        rc, out = probe(rgw, "put", "cam1/main/stalled.mp4", small,
                        env_extra={"KP_S3_TIMEOUT_MS": "4000", "KP_S3_LOW_SPEED_SECS": "3"})
        took = time.monotonic() - t
    finally:
        os.kill(osd.pid, signal.SIGCONT)
    check(rc == 1 and "ETIMEDOUT" in out, f"a PUT to a stalled OSD ends in ETIMEDOUT ({took:.1f} s)")
    check(took < 15, "within the client's own timeout, not the store's")
    rc, out = probe(rgw, "put", "cam1/main/stalled.mp4", small, timeout=180)
    check(rc == 0, "once the OSD runs again the same PUT succeeds")
    rc, out = probe(rgw, "get", "cam1/main/stalled.mp4", "0", "100000", got)
    check(rc == 0 and open(got, "rb").read() == small_bytes, "and the object is byte-identical")
    check(rgw.alive("mon") and rgw.alive("osd") and rgw.alive("rgw"), "every Ceph daemon is still running")

    interrupted(rgw, d, "rgw", 0)
    interrupted(rgw, d, "osd", 10)


def interrupted(rgw, d, daemon, down_s):
    """An upload of 5 parts; after the first is acknowledged, `daemon` is killed (SIGKILL)
    and started again down_s seconds later; the upload is resumed until it completes."""
    rnd = random.Random(daemon)
    path = os.path.join(d, f"crash-{daemon}.bin")
    data = rnd.randbytes(5 * 5 * 1024 * 1024 - 777)
    with open(path, "wb") as f:
        f.write(data)
    key = f"cam1/main/crash-{daemon}.mp4"
    part = str(5 * 1024 * 1024)
    env = dict(os.environ, KP_S3_ENDPOINT=rgw.endpoint, KP_S3_BUCKET=rgw.bucket, KP_S3_ACCESS_KEY=rgw.access_key,
               KP_S3_SECRET=rgw.secret, KP_S3_TIMEOUT_MS="8000", KP_S3_LOW_SPEED_SECS="4")
    p = subprocess.Popen([PROBE, "upload", key, path, part], stdout=subprocess.PIPE, text=True, env=env)
    upload_id, acked = None, []
    for line in p.stdout:
        line = line.strip()
        if line.startswith("upload-id "):
            upload_id = line.split()[1]
        if line.startswith("part ") and line.endswith(" sent"):
            acked.append(int(line.split()[1]))
            break
    rgw.kill(daemon)
    rest = p.stdout.read()
    p.wait(timeout=60)
    acked += [int(ln.split()[1]) for ln in rest.splitlines() if ln.startswith("part ") and ln.endswith(" sent")]
    check(p.returncode == 1 and upload_id and acked,
          f"an upload fails when {daemon} is killed after part(s) {acked} were acknowledged ({last(rest)})")
    time.sleep(down_s)
    rgw.start(daemon)
    got = os.path.join(d, "got.bin")
    end = time.monotonic() + 120
    while True:
        rc, out = probe(rgw, "resume", key, path, part, upload_id, env_extra={"KP_S3_TIMEOUT_MS": "15000"})
        if rc == 0 or time.monotonic() > end:
            break
        time.sleep(2)
    kept = [int(ln.split()[1]) for ln in out.splitlines() if ln.startswith("part ") and ln.endswith(" kept")]
    # A completion whose answer timed out may have completed: the resume then finds the
    # upload gone and the object there with the ETag our parts make (Ceph 18 after an
    # OSD restart).
    check(rc == 0 and "parts=5" in last(out), f"after {daemon} is back the upload resumes and completes ({last(out)})")
    check("completed before" in out or set(acked) <= set(kept),
          f"every part acknowledged before the kill was kept ({acked} within {kept})")
    rc, out = probe(rgw, "get", key, "0", str(len(data)), got)
    check(rc == 0 and open(got, "rb").read() == data, f"the object uploaded across the {daemon} kill is byte-identical")
    check(rgw.alive("mon") and rgw.alive("osd") and rgw.alive("rgw"), "every Ceph daemon is running")


if __name__ == "__main__":
    main()
