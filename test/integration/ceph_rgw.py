"""A one-node Ceph cluster with a RADOS Gateway, started by a test from Debian's packages
(ceph-mon, ceph-osd, radosgw; no mgr) in a private directory on loopback ports chosen at
run time: one monitor, one bluestore OSD on an 8 GiB sparse file (memstore loses its data
when the OSD dies, which the crash tests need it not to), pools of size 1, and an S3 user
made with radosgw-admin. Each daemon runs in the foreground in its own session (setsid),
so that a test's timeout does not kill it by its process group, and can be killed and
started again on its own. Decision 0027 records the settings and why.

    with CephRgw(base) as rgw:
        rgw.endpoint, rgw.access_key, rgw.secret
        rgw.kill("osd"); rgw.start("osd")

or, for a whole test, with_cluster("kp-tier-x-", lambda rgw, workdir: ...).
"""
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

DAEMONS = ["ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "monmaptool", "ceph-authtool", "ceph"]


def missing():
    """The programs this harness needs that are not installed (a test skips on them
    only when KP_CEPH_OPTIONAL is set; CI installs them, scripts/install-deps)."""
    out = [d for d in DAEMONS if not shutil.which(d)]
    if not class_dir():
        out.append("libcls_rgw.so (ceph-base)")
    return out


def class_dir():
    """Where the OSD's object classes are. Debian 13's Ceph 18.2.7 defaults
    osd_class_dir to the relative "lib/x86_64-linux-gnu/rados-classes", which the OSD
    resolves against its working directory: started anywhere but "/", it loads no class,
    and every call radosgw makes to cls_version, cls_user, cls_rgw ... fails with
    EOPNOTSUPP (radosgw exits "Couldn't init storage provider", radosgw-admin "user
    create" fails). So the harness names the directory, found by the class rgw needs."""
    for d in sorted(glob.glob("/usr/lib/*/rados-classes")) + ["/usr/lib64/rados-classes", "/usr/lib/rados-classes"]:
        if os.path.exists(os.path.join(d, "libcls_rgw.so")):
            return d
    return None


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CephRgw:
    def __init__(self, base, bucket="keeppeek"):
        self.base = base
        self.bucket = bucket
        self.fsid = str(uuid.uuid4())
        self.mon_port = _free_port()
        self.rgw_port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.rgw_port}"
        self.access_key = "KPTEST" + uuid.uuid4().hex[:14].upper()
        self.secret = uuid.uuid4().hex + uuid.uuid4().hex[:8]
        self.conf = os.path.join(base, "ceph.conf")
        self.procs = {}
        self.osd_uuid = str(uuid.uuid4())

    # -- what tests ask of it ----------------------------------------------
    def tier_keys(self, workdir):
        """This store's lines of a [tier] section, for a keeppeek.conf template that kp's
        make() formats (its braces doubled): endpoint, bucket, the access key from
        $KP_TIER_ACCESS_KEY (pass env=rgw.tier_env() to make) and the secret from a file
        written in workdir (0600)."""
        secret_file = os.path.join(workdir, "tier.secret")
        with open(secret_file, "w") as f:
            f.write(self.secret)
        os.chmod(secret_file, 0o600)
        return (f"endpoint = {self.endpoint}\nbucket = {self.bucket}\n"
                "access_key = ${{KP_TIER_ACCESS_KEY}}\n" f"secret = file:{secret_file}\n")

    def tier_env(self):
        return {"KP_TIER_ACCESS_KEY": self.access_key}

    def probe_env(self, secret=None):
        """The environment of tier-s3-probe (tierd's S3 client from the command line)."""
        return dict(os.environ, KP_S3_ENDPOINT=self.endpoint, KP_S3_BUCKET=self.bucket,
                    KP_S3_ACCESS_KEY=self.access_key, KP_S3_SECRET=secret or self.secret)

    def probe(self, *args, timeout=60):
        from kp import BUILD
        return subprocess.run([os.path.join(BUILD, "tierd", "tier-s3-probe"), *args], capture_output=True,
                              text=True, env=self.probe_env(), timeout=timeout)

    def absent(self, key):
        """Whether the store answers HEAD of key with 404."""
        r = self.probe("head", key)
        return r.returncode == 1 and r.stdout.startswith("error ENOENT")

    def object_bytes(self, key, path, most=64 << 20):
        """The bytes of object key (read through path), or None."""
        r = self.probe("get", key, "0", str(most), path, timeout=120)
        if r.returncode != 0:
            return None
        with open(path, "rb") as f:
            return f.read()

    # -- set-up ------------------------------------------------------------
    def _write_conf(self):
        b = self.base
        text = f"""[global]
fsid = {self.fsid}
mon_host = v2:127.0.0.1:{self.mon_port}
ms_bind_msgr1 = false
keyring = {b}/keyring
auth_allow_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
run_dir = {b}/run
admin_socket = {b}/run/$name.asok
log_file = {b}/log/$name.log
log_to_stderr = false
err_to_stderr = true
mon_data = {b}/mon/$cluster-$id
osd_data = {b}/osd/$cluster-$id
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
osd_crush_chooseleaf_type = 0
paxos_propose_interval = 0.1
osd_objectstore = bluestore
osd_class_dir = {class_dir()}
bluestore_block_path = {b}/osd/block
bluestore_block_size = 8589934592
bluestore_block_create = true
bluestore_fsck_on_mkfs = false
osd_memory_target = 939524096
bluestore_cache_autotune = false
bluestore_cache_size = 134217728
rgw_frontends = beast endpoint=127.0.0.1:{self.rgw_port}
rgw_data = {b}/rgw
rgw_exit_timeout_secs = 5
rgw_enable_usage_log = false
"""
        with open(self.conf, "w") as f:
            f.write(text)

    def _run(self, *args, timeout=60):
        r = subprocess.run(list(args) + ["-c", self.conf], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        return r.stdout

    def ceph(self, *args, timeout=60):
        return self._run("ceph", "--connect-timeout", "20", *args, timeout=timeout)

    def _spawn(self, name):
        cmd = {
            "mon": ["ceph-mon", "-f", "-i", "a"],
            "osd": ["ceph-osd", "-f", "-i", "0"],
            "rgw": ["radosgw", "-f", "-n", "client.rgw"],
        }[name] + ["-c", self.conf]
        log = open(os.path.join(self.base, "log", f"{name}.out"), "ab")
        # start_new_session: the daemon runs in its own session (setsid).
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.base,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

    def start(self, name):
        self._spawn(name)
        if name == "rgw":
            self.wait_rgw()

    def kill(self, name, sig=signal.SIGKILL):
        p = self.procs.pop(name)
        p.send_signal(sig)
        p.wait(timeout=30)

    def alive(self, name):
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    def wait_rgw(self, timeout=120):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            if not self.alive("rgw"):
                raise RuntimeError("radosgw exited: " + self.log_tail("rgw"))
            try:
                with urllib.request.urlopen(self.endpoint + "/", timeout=5) as r:
                    if r.status == 200:
                        return
            except Exception as e:  # not up yet
                last = e
            time.sleep(0.2)
        raise RuntimeError(f"radosgw did not answer on {self.endpoint} within {timeout} s ({last})")

    def log_tail(self, name, n=3000):
        out = ""
        for f in (f"{name}.out", {"mon": "mon.a.log", "osd": "osd.0.log", "rgw": "client.rgw.log"}[name]):
            try:
                with open(os.path.join(self.base, "log", f), errors="replace") as fh:
                    out += f"--- {f}\n" + fh.read()[-n:]
            except FileNotFoundError:
                pass
        return out

    def __enter__(self):
        for d in ("mon", "osd", "rgw", "run", "log"):
            os.makedirs(os.path.join(self.base, d), exist_ok=True)
        self._write_conf()
        try:
            self._bootstrap()
        except BaseException:
            self.stop()
            raise
        return self

    def _bootstrap(self):
        b = self.base
        monmap = os.path.join(b, "monmap")
        keyring = os.path.join(b, "keyring")
        # cephx with one keyring for all: radosgw (Ceph 16) asks for cephx whatever
        # auth_client_required says, and fails with EACCES against a cluster without it.
        for name, caps in (("mon.", ["mon", "allow *"]),
                           ("client.admin", ["mon", "allow *", "osd", "allow *", "mgr", "allow *"]),
                           ("osd.0", ["mon", "allow profile osd", "osd", "allow *"]),
                           ("client.rgw", ["mon", "allow rw", "osd", "allow rwx"])):
            args = ["ceph-authtool", keyring, "--gen-key", "-n", name]
            if not os.path.exists(keyring):
                args.insert(1, "--create-keyring")
            for i in range(0, len(caps), 2):
                args += ["--cap", caps[i], caps[i + 1]]
            subprocess.run(args, check=True, capture_output=True)
        subprocess.run(["monmaptool", "--create", "--fsid", self.fsid, "--addv", "a",
                        f"[v2:127.0.0.1:{self.mon_port}]", monmap], check=True, capture_output=True)
        self._run("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", keyring)
        self._spawn("mon")
        self.ceph("osd", "create", self.osd_uuid, "0")
        with open(os.path.join(b, "osd", "block"), "wb") as f:
            f.truncate(8 << 30)  # 8 GiB, sparse
        os.makedirs(os.path.join(b, "osd", "ceph-0"), exist_ok=True)
        self._run("ceph-osd", "--mkfs", "-i", "0", "--osd-uuid", self.osd_uuid, timeout=120)
        self._spawn("osd")
        self.ceph("osd", "crush", "add", "osd.0", "1.0", "host=localhost", "root=default")
        self._spawn("rgw")
        self.wait_rgw()
        self._run("radosgw-admin", "user", "create", "--uid", "keeppeek", "--display-name", "KeepPeek tests",
                  "--access-key", self.access_key, "--secret-key", self.secret, timeout=120)

    def stop(self):
        for name in ("rgw", "osd", "mon"):
            p = self.procs.pop(name, None)
            if p is None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)

    def __exit__(self, *exc):
        self.stop()
        return False


def with_cluster(prefix, test):
    """Runs test(rgw, workdir) against a new cluster in a temporary directory (below
    $KP_TEST_TMP when set): fails at once when Ceph's programs are missing, stops the
    daemons on SIGTERM too (meson's timeout; they run in sessions of their own), and
    prints the daemons' log tails when the test fails."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: stopping the Ceph daemons"))
    gone = missing()
    if gone:
        sys.exit(f"FAIL: Ceph programs missing: {', '.join(gone)} (scripts/install-deps installs them)")
    with tempfile.TemporaryDirectory(prefix=prefix, dir=os.environ.get("KP_TEST_TMP")) as d:
        base = os.path.join(d, "ceph")
        os.makedirs(base)
        t0 = time.monotonic()
        with CephRgw(base) as rgw:
            print(f"     cluster up in {time.monotonic() - t0:.1f} s")
            try:
                test(rgw, d)
            except (SystemExit, AssertionError):
                for n in ("rgw", "osd", "mon"):
                    print(rgw.log_tail(n, 1500), file=sys.stderr)
                raise
