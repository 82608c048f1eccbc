"""When recorderd dies in the middle of a request, webd answers 503 at once (the link
dropped) instead of holding the client 30 s and answering 504; every request waiting for
recorderd gets that answer, and once recorderd is back the same requests are answered.
recorderd is stopped (SIGSTOP) so that the requests are surely in flight, then killed."""
import os
import signal
import threading
import time

from kp import check, run, wait_for


def test(make):
    kp = make()
    kp.wait_running()
    tok = kp.token("viewer")
    auth = {"Authorization": "Bearer " + tok}
    path = "/api/v1/coverage?from=0&to=1000"
    check(wait_for(lambda: kp.http("GET", path, headers=auth)[0] == 200, 20), "coverage answers")
    rec = kp.status()["recorderd"]["pid"]
    kp.expect_restarts("recorderd")
    os.kill(rec, signal.SIGSTOP)
    results = []

    def ask():
        t0 = time.monotonic()
        st, _, body = kp.http("GET", path, headers=auth, timeout=40)
        results.append((st, body, time.monotonic()))
    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the four questions wait in recorderd's stopped socket
    check(not results, f"no answer while recorderd is stopped ({results})")
    killed = time.monotonic()
    os.kill(rec, signal.SIGKILL)
    for t in threads:
        t.join(40)
    waits = [round(at - killed, 3) for _, _, at in results]
    check(len(results) == 4 and all(st == 503 and b"recorderd" in body for st, body, _ in results),
          f"every waiting request answered 503 naming recorderd ({[(s, b[:80]) for s, b, _ in results]})")
    check(max(waits) < 1.0, f"... within 1 s of the link dropping ({waits} s)")
    st = wait_for(lambda: (s := kp.status()) and s["recorderd"]["pid"] not in (0, rec) and
                  s["recorderd"]["state"] == "running" and s, 10)
    check(st, "recorderd is running again")
    check(wait_for(lambda: kp.http("GET", path, headers=auth)[0] == 200, 10), "and coverage answers again")


if __name__ == "__main__":
    run(test)
