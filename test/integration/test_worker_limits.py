#!/usr/bin/env python3
"""The resource limits each worker declares in its kp_worker_def (ingestd/main.c,
recorderd/main.c, webd/main.c, rtcd/main.c: .rlimit_nofile, .rlimit_as) are the ones it
runs with, soft and hard, read from /proc/PID/limits of the running workers (demo
cameras): RLIMIT_NOFILE always, RLIMIT_AS unless the build has sanitizers,
RLIMIT_CORE 0, RLIMIT_NPROC KP_WORKER_NPROC (kp_limits.h) when the worker runs under
another uid than keeppeekd.
The kernel refuses the descriptor or the mapping one past them (EMFILE, ENOMEM).
(rtcd's libnice thread, on a stack of KP_RTC_THREAD_STACK with a guard page below it,
starts at the first WebRTC offer: test_rtc_session_module checks it.)"""
import os
import re
import sys

from kp import WORKERS, check, proc_status, run, sanitized

SRC = os.environ["KP_SOURCE_ROOT"]
MIB = 1024 * 1024


def c_value(expr, defines):
    """A C constant expression of the worker definitions (1024ull * KP_MIB) in Python."""
    e = re.sub(r"\b(\d+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)\b", r"\1", expr)
    return eval(e.replace("/", "//"), {"__builtins__": {}}, defines)


def limits_h():
    out = {}
    with open(os.path.join(SRC, "common", "kp_limits.h")) as f:
        for m in re.finditer(r"^#define (KP_\w+)\s+(.+?)\s*(?:/\*.*)?$", f.read(), re.M):
            try:
                out[m.group(1)] = c_value(m.group(2), out)
            except (NameError, SyntaxError):
                pass
    return out


def declared(worker, defines):
    with open(os.path.join(SRC, worker, "main.c")) as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    body = re.search(r"struct kp_worker_def \w+ = \{(.*?)\n\};", text, re.S).group(1)
    return {k: c_value(re.search(r"\." + k + r"\s*=\s*([^,]+),", body).group(1), defines)
            for k in ("rlimit_nofile", "rlimit_as")}


def proc_limits(pid):
    """{"Max open files": (soft, hard), ...} with "unlimited" as None."""
    out = {}
    with open(f"/proc/{pid}/limits") as f:
        for line in f.readlines()[1:]:
            m = re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
            if m:
                out[m.group(1)] = tuple(None if v == "unlimited" else int(v) for v in m.group(2, 3))
    return out



def test(make):
    defines = limits_h()
    k = make()
    st = k.wait_running(timeout=30)
    me = os.getuid()
    for w in WORKERS:
        want = declared(w, defines)
        pid = st[w]["pid"]
        lim = proc_limits(pid)
        check(lim["Max open files"] == (want["rlimit_nofile"],) * 2,
              f"{w} runs with RLIMIT_NOFILE {want['rlimit_nofile']} as its kp_worker_def says "
              f"(soft, hard: {lim['Max open files']})")
        if sanitized():
            print(f"note: sanitizer build: {w}'s RLIMIT_AS is not applied (common/sandbox.c)")
        else:
            check(lim["Max address space"] == (want["rlimit_as"],) * 2,
                  f"{w} runs with RLIMIT_AS {want['rlimit_as'] // MIB} MiB as its kp_worker_def says "
                  f"(soft, hard: {lim['Max address space']})")
        check(lim["Max core file size"] == (0, 0), f"{w} runs with RLIMIT_CORE 0 ({lim['Max core file size']})")
        uid = int(proc_status(pid)["Uid"].split()[0])
        if uid != me:
            n = defines["KP_WORKER_NPROC"]
            check(lim["Max processes"] == (n, n),
                  f"{w} (uid {uid}) runs with RLIMIT_NPROC {n} ({lim['Max processes']})")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: reading another user's /proc/PID/limits needs root")
        sys.exit(77)
    run(test)
