"""Shared by the perf/ runners: nearest-rank percentiles, the machine description every
report carries, load-average and whole-machine CPU snapshots (to tell a measurement
taken on a busy machine from one taken on an idle one, and over a run: Window), and
report writing."""
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import threading
import time


def nearest_rank(values, p):
    """Nearest-rank percentile: the smallest value with at least p % of the values at or
    below it (rank ceil(p/100 * n), 1-based). No interpolation."""
    if not values:
        return None
    v = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(v)))
    return v[rank - 1]


def summary(values):
    if not values:
        return {"n": 0}
    return {"n": len(values), "min": min(values), "p50": nearest_rank(values, 50),
            "p95": nearest_rank(values, 95), "max": max(values)}


def loadavg():
    with open("/proc/loadavg") as f:
        a = f.read().split()
    return [float(a[0]), float(a[1]), float(a[2])]


def cpu_jiffies():
    """(busy, steal) jiffies of the whole machine from /proc/stat, all CPUs: busy is
    user + nice + system + irq + softirq (guest time is inside user); steal is time the
    hypervisor gave to someone else, which no process here used."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (8 - len(v))
    return v[0] + v[1] + v[2] + v[5] + v[6], v[7]


def wait_quiet(max_wait, threshold, probe=3.0):
    """Waits (at most max_wait s) until the machine's busy CPU over `probe` seconds is at
    most `threshold` cores, before anything of ours runs. Returns (cores, waited s)."""
    t0 = time.monotonic()
    while True:
        a = cpu_jiffies()
        time.sleep(probe)
        b = cpu_jiffies()
        cores = (b[0] - a[0]) / os.sysconf("SC_CLK_TCK") / probe
        waited = time.monotonic() - t0
        if cores <= threshold or waited >= max_wait:
            return round(cores, 2), round(waited, 1)


def machine():
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    os_name = ""
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu_model": model, "mem_gib": round(mem_kib / 1048576, 1),
            "kernel": platform.release(), "os": os_name, "python": platform.python_version(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def children(pid):
    """Child pids of pid (/proc/PID/task/PID/children); [] once it is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def comm(pid):
    """The program name of pid, "?" once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def git_revision(src):
    try:
        rev = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return ""


def fs_type(path):
    out = subprocess.run(["df", "--output=fstype", path], capture_output=True, text=True).stdout.split()
    return out[-1] if out else ""


def write_reports(outdir, name, report, markdown):
    os.makedirs(outdir, exist_ok=True)
    jpath = os.path.join(outdir, name + ".json")
    mpath = os.path.join(outdir, name + ".md")
    with open(jpath, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    with open(mpath, "w") as f:
        f.write(markdown)
    return jpath, mpath


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{digits}f}"


def machine_md(m):
    return (f"{m['nproc']} CPUs ({m['cpu_model']}), {m['mem_gib']} GiB RAM, Linux {m['kernel']}, "
            f"{m['os']}; {m['date_utc']}")


class Window(threading.Thread):
    """The machine over a benchmark's run, from its start: the load average sampled every
    second, and whole-machine CPU from /proc/stat. finish(report) stops it and writes
    load_after, load_during, window_s, machine_busy_cores, own_cores (this runner and
    every child it has reaped), other_cores and steal_cores into report."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples = []
        self.stop = threading.Event()
        self.jiffies0 = cpu_jiffies()
        self.t0 = time.monotonic()
        self.start()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(loadavg()[0])
            self.stop.wait(1.0)

    def finish(self, report):
        self.stop.set()
        self.join()
        jiffies1 = cpu_jiffies()
        window = time.monotonic() - self.t0
        hz = os.sysconf("SC_CLK_TCK")
        busy = (jiffies1[0] - self.jiffies0[0]) / hz
        own = sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
                  for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        report["load_after"] = loadavg()
        report["load_during"] = summary(self.samples)
        report["window_s"] = round(window, 1)
        report["machine_busy_cores"] = round(busy / window, 2)
        report["own_cores"] = round(own / window, 2)
        report["other_cores"] = round(max(0.0, busy - own) / window, 2)
        report["steal_cores"] = round((jiffies1[1] - self.jiffies0[1]) / hz / window, 2)
