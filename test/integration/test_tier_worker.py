"""keeppeek-tierd with keeppeekd, a test camera and a real Ceph RADOS Gateway (ceph_rgw.py):
with `[tier] after = 5s` and 25-second recordings, every closed recording is copied to the
bucket under its path (the main stream's ~6.7 MB files as multipart uploads of 5 MiB parts,
the sub stream's as one PUT) and each object reads back byte-identical to the local file,
which stays (`keep_local = 1h`; test_tier_read.py strips them). The access key comes from ${ENV} and the secret from file:. The store is stalled
(the OSD stopped) during the first multipart upload and tierd is killed with SIGKILL: it is
restarted alone, recorderd hands the recording over again with the upload id its journal
kept, tierd resumes that upload (or finds it completed) and the object is whole. The same
with recorderd killed during the next multipart upload, and with radosgw killed during the
third (started again 2 s later). Then retention (a quota set by a
reload) deletes the recordings, and their objects are deleted from the store. No other
worker restarts; the tier metrics count the copies and the deletes."""
import atexit
import json
import os
import re
import signal
import time

import ceph_rgw
from kp import TIME_SCALE, TestCamera, check, metric, run, wait_for, wait_streaming

CONFIG = """[keeppeek]
data_dir = {{dir}}/data
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
[tier]
{store}after = 5s
keep_local = 1h
part_size = 5
timeout = 30
[camera "tier-cam"]
url = {url}
rollover_secs = 25
"""


def closed_recordings(data):
    """Paths (relative to data) of the recordings that are closed: all but the newest of
    each stream."""
    out = []
    root = os.path.join(data, "recordings")
    for cam in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        for stream in sorted(os.listdir(os.path.join(root, cam))):
            d = os.path.join(root, cam, stream)
            files = sorted((f for f in os.listdir(d) if f.endswith(".mp4")), key=lambda f: int(f.split(".")[0]))
            out += [os.path.relpath(os.path.join(d, f), data) for f in files[:-1]]
    return out


def stored(rgw, key, local, got):
    """Whether the store has key with exactly local's bytes."""
    want = open(local, "rb").read()
    return rgw.object_bytes(key, got, len(want) + 1) == want


def test(make, rgw, work):
    cam = TestCamera(work, "tier-cam", "h264", "baichuan", "aes")
    atexit.register(cam.kill)  # also when a check fails before the end
    config = CONFIG.format(store=rgw.tier_keys(work), url=cam.url())
    kp = make(config=config, env=rgw.tier_env())
    kp.wait_running()
    st = wait_for(lambda: (s := kp.status())["tierd"]["state"] == "running" and s, 15, 0.05)
    check(st, f"tierd runs where [tier] has an endpoint ({kp.status()['tierd']})")
    wait_streaming(kp, "tier-cam", timeout=10.0)

    # The first main recording closes after 25 s and is 5 s old 5 s later.
    pat = re.compile(r"recording (\d+): multipart upload of (\d+) parts begun: (\S+)")
    begun = wait_for(lambda: pat.search(kp.log_text()), 90, 0.01)
    check(begun and int(begun.group(2)) >= 2, f"a closed main recording is copied in parts ({begun and begun.group(0)})")
    upload_id = begun.group(3)
    osd = rgw.procs["osd"]
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        # The stalled OSD holds the next request; meanwhile the group commit (every 250 ms)
        # makes recorderd's journal row with the upload id durable.
        time.sleep(2 * TIME_SCALE)
        rc, out, err = kp.ctl("tier", "status", "--json")
        stt = json.loads(out) if rc == 0 else {}
        cp = [c for c in stt.get("copies", []) if c["recording"] == int(begun.group(1))]
        check(stt.get("enabled") and stt.get("tierd_linked") and cp and cp[0]["state"] == "uploading" and
              cp[0]["parts"] >= 2, f"keeppeekctl tier status --json shows the upload under way ({rc} {out}{err})")
        rc, out, err = kp.ctl("tier", "status")
        check(rc == 0 and f"copying: recording {begun.group(1)} " in out and ": uploading" in out,
              f"and so does its text ({out.strip()}{err.strip()})")
        pid = kp.status()["tierd"]["pid"]
        kp.expect_restarts("tierd")
        os.kill(pid, signal.SIGKILL)
    finally:
        os.kill(osd.pid, signal.SIGCONT)
    st = wait_for(lambda: (s := kp.status())["tierd"]["restarts"] == 1 and s["tierd"]["state"] == "running" and s,
                  30, 0.05)
    check(st, "tierd killed mid-upload is restarted")
    short = upload_id[:16]
    resumed = wait_for(lambda: re.search(r"resuming upload " + re.escape(short) + r"\.\.\., \d+ parts on the store|"
                                         r"upload " + re.escape(short) + r"\.\.\. had completed before",
                                         kp.log_text()), 90, 0.05)
    check(resumed, f"recorderd hands the recording over again and tierd resumes upload {short}... "
                   f"({resumed and resumed.group(0)})")

    # recorderd killed during the next multipart upload: its journal kept the upload id;
    # once recorderd is back it hands the recording over again and tierd resumes it.
    second = wait_for(lambda: (ms := list(pat.finditer(kp.log_text()))) and len(ms) > 1 and ms[1], 90, 0.01)
    check(second and second.group(3) != upload_id, f"the next main recording is copied in parts "
                                                   f"({second and second.group(0)})")
    upload_id2 = second.group(3)
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        time.sleep(2 * TIME_SCALE)
        pid = kp.status()["recorderd"]["pid"]
        kp.expect_restarts("recorderd")
        os.kill(pid, signal.SIGKILL)
    finally:
        os.kill(osd.pid, signal.SIGCONT)
    st = wait_for(lambda: (s := kp.status())["recorderd"]["restarts"] == 1 and
                  s["recorderd"]["state"] == "running" and s, 30, 0.05)
    check(st, "recorderd killed mid-upload is restarted")
    short = upload_id2[:16]
    resumed = wait_for(lambda: re.search(r"resuming upload " + re.escape(short) + r"\.\.\., \d+ parts on the store|"
                                         r"upload " + re.escape(short) + r"\.\.\. had completed before",
                                         kp.log_text()), 90, 0.05)
    check(resumed, f"the restarted recorderd hands the recording over again from its journal and tierd resumes "
                   f"upload {short}... ({resumed and resumed.group(0)})")

    # radosgw killed during the next multipart upload (the OSD stalled first, so that the
    # upload is surely under way): tierd's request fails, recorderd tries again with its
    # backoff, and once radosgw is back the upload resumes from the parts the store lists.
    third = wait_for(lambda: (ms := list(pat.finditer(kp.log_text()))) and len(ms) > 2 and ms[2], 90, 0.01)
    check(third and third.group(3) not in (upload_id, upload_id2),
          f"a third main recording is copied in parts ({third and third.group(0)})")
    rec3 = third.group(1)
    os.kill(osd.pid, signal.SIGSTOP)
    try:
        time.sleep(1 * TIME_SCALE)
        rgw.kill("rgw")
    finally:
        os.kill(osd.pid, signal.SIGCONT)
    failed = wait_for(lambda: re.search(r"recording " + rec3 + r" \(\S+\): upload failed: .*", kp.log_text()), 30, 0.05)
    check(failed, f"with radosgw killed the copy fails and says why ({failed and failed.group(0)})")
    time.sleep(2 * TIME_SCALE)
    rgw.start("rgw")
    done = wait_for(lambda: re.search(r"recording " + rec3 + r": \S+ stored, \d+ bytes", kp.log_text()), 120, 0.1)
    check(done, f"once radosgw is back the copy of recording {rec3} resumes and completes")

    # Two closed recordings of each stream, each copied and byte-identical.
    closed = wait_for(lambda: (c := closed_recordings(kp.data)) and
                      sum("/main/" in p for p in c) >= 2 and sum("/sub/" in p for p in c) >= 2 and c, 120, 0.5)
    check(closed, f"two recordings of each stream closed ({closed_recordings(kp.data)})")
    got = os.path.join(work, "got.bin")
    for p in closed:
        ok = wait_for(lambda: stored(rgw, p, os.path.join(kp.data, p), got), 90, 1.0)
        check(ok, f"{p} ({os.path.getsize(os.path.join(kp.data, p))} bytes) is in the bucket, byte-identical")
        check(os.path.exists(os.path.join(kp.data, p)), f"{p}: the local file stays")
    token = kp.token()
    up = metric(kp, token, "keeppeek_tier_uploaded_total")
    closed_now = len(closed_recordings(kp.data))
    # Counted since recorderd's restart: at least the upload it resumed, none twice.
    check(up is not None and 1 <= up <= closed_now,
          f"keeppeek_tier_uploaded_total counts the copies, each recording once ({up}; {closed_now} closed)")
    nbytes = metric(kp, token, "keeppeek_tier_uploaded_bytes_total")
    check(nbytes and nbytes > 0, f"keeppeek_tier_uploaded_bytes_total ({nbytes})")
    check(metric(kp, token, "keeppeek_tier_failures_total") is not None, "keeppeek_tier_failures_total is shown")
    check(metric(kp, token, "keeppeek_tier_oldest_pending_seconds") is not None,
          "keeppeek_tier_oldest_pending_seconds is shown")

    # Retention under a 5 MB quota deletes every closed recording; the objects of those
    # copied go from the store too, after any copy still under way (decision 0036).
    with open(kp.config_path, "a") as f:
        f.write("[retention]\nmax_disk_gb = 0.005\n")
    rc, out, err = kp.ctl("reload")
    check(rc == 0, f"a reload with a 5 MB quota ({out.strip()}{err.strip()})")
    check(wait_for(lambda: not any(os.path.exists(os.path.join(kp.data, p)) for p in closed), 30, 0.2),
          f"retention deletes the {len(closed)} closed recordings")
    check(wait_for(lambda: all(rgw.absent(p) for p in closed), 60, 1.0),
          f"and their objects are deleted from the store ({[p for p in closed if not rgw.absent(p)]} remain)")
    deleted = wait_for(lambda: (n := metric(kp, token, "keeppeek_tier_deleted_total")) and n >= len(closed) and n, 30,
                       0.5)
    check(deleted, f"keeppeek_tier_deleted_total counts them ({metric(kp, token, 'keeppeek_tier_deleted_total')})")
    check(wait_for(lambda: metric(kp, token, "keeppeek_tier_deletes_pending") == 0, 30, 0.5),
          "and no delete is left pending")
    check(re.search(r"recording \d+: recordings/\S+ deleted from the store", kp.log_text()),
          "each delete is logged")
    rc, out, err = kp.ctl("tier", "status", "--json")
    stt = json.loads(out) if rc == 0 else {}
    check(stt.get("deleted", 0) >= len(closed) and stt.get("uploaded_bytes", 0) > 0 and
          stt.get("deletes_pending") == 0 and "journal_rows" in stt,
          f"keeppeekctl tier status counts the copies and deletes ({out.strip()}{err.strip()})")
    cam.kill()


def main():
    ceph_rgw.with_cluster("kp-tier-worker-", lambda rgw, d: run(lambda make: test(make, rgw, d)))


if __name__ == "__main__":
    main()
