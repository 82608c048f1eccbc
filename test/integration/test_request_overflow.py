"""Requests whose times, sizes and counts sit at the edges of 64 bits, from a viewer and
from keeppeekctl, get a clear 4xx or an exact answer, and no worker restarts (issue:
GET /api/v1/coverage?from=0&to=9223372036854775807&bucket=1h with a viewer token made
recorderd's bucket count overflow and write past its array: SIGSEGV, recording stopped)."""
from kp import check, run, wait_for

I64_MAX = 9223372036854775807


def test(make):
    kp = make()
    st = kp.wait_running()
    rec = st["recorderd"]["pid"]
    tok = kp.token("viewer")
    auth = {"Authorization": "Bearer " + tok}
    check(wait_for(lambda: kp.http("GET", "/api/v1/coverage?from=0&to=1000", headers=auth)[0] == 200, 20),
          "coverage answers")
    for path, want in [
        (f"/api/v1/coverage?from=0&to={I64_MAX}&bucket=1h", 400),
        (f"/api/v1/coverage?from=0&to={I64_MAX}", 400),
        (f"/api/v1/coverage?from={I64_MAX - 1}&to={I64_MAX}&bucket=1h", 200),
        (f"/api/v1/coverage?from=0&to={I64_MAX}&bucket={I64_MAX - I64_MAX % 3600000}", 200),
        (f"/api/v1/coverage?from=0&to=1000&bucket={I64_MAX}d", 400),
        (f"/api/v1/coverage?from=0&to=1000&bucket=2562047788016h", 400),
        (f"/api/v1/coverage?from=0&to=1000&offset=4294967295&limit=4294967295", 200),
        (f"/api/v1/coverage?from=0&to=1000&offset=1&limit=4294967295", 200),
        (f"/api/v1/coverage?from=0&to=1000&limit=4294967296", 400),
        (f"/api/v1/recordings?from=0&to={I64_MAX}", 200),
        (f"/api/v1/recordings?from={I64_MAX}&to={I64_MAX}", 400),
        (f"/api/v1/export?camera=demo-rtsp&stream=main&from={I64_MAX - 1}&to={I64_MAX}", 404),
        (f"/api/v1/events?from=0&to={I64_MAX}", 200),
    ]:
        code, _, body = kp.http("GET", path, headers=auth)
        check(code == want, f"GET {path} -> {want} ({code} {body[:120]!r})")
    rc, out, err = kp.ctl("coverage", "demo-rtsp", "main", "--to", str(I64_MAX))  # the day before it
    check(rc == 0 and f"to {I64_MAX} ms" in out, f"keeppeekctl coverage --to {I64_MAX} answers ({rc} {err.strip()})")
    for args in (["--from", "0", "--to", str(I64_MAX)], ["--from", "0", "--to", str(I64_MAX), "--bucket", "3600000"]):
        rc, out, err = kp.ctl("coverage", "demo-rtsp", "main", *args)
        check(rc != 0 and "bucket" in (out + err), f"keeppeekctl coverage {' '.join(args)} refused: {err.strip()}")
    rc, out, err = kp.ctl("coverage", "demo-rtsp", "main", "--from", str(I64_MAX - 1), "--to", str(I64_MAX))
    check(rc == 0, f"keeppeekctl coverage of the last millisecond of time answers ({rc} {err.strip()})")
    st = kp.status()
    check(st["recorderd"]["pid"] == rec and st["recorderd"]["restarts"] == 0,
          f"recorderd is the same process, 0 restarts ({st['recorderd']})")


if __name__ == "__main__":
    run(test)
