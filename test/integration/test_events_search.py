"""Event search over HTTP (SPEC 6, 7): by camera, time range, label and free-text terms
(prefix match, all words must match), newest first, with cursor paging that neither
repeats nor skips an event; and POST /delete of events."""
import http.client
import json
import time
import urllib.parse

import kp_events as E
from kp import check, fail, run


def search(kp, tok, **params):
    st, got = E.get_json(kp, tok, "/api/v1/events?" + urllib.parse.urlencode(params))
    if st != 200:
        fail(f"search {params}: {st} {got}")
    return got


def ids(got):
    return [e["id"] for e in got["events"]]


def test(make):
    kp, tok, cam = E.start(make)
    base = int(time.time() * 1000) - 3600 * 1000
    published = []
    for i in range(23):
        label = ("person", "car", "dog")[i % 3]
        attrs = {"zone": ("porch", "driveway")[i % 2], "note": f"colour {('red', 'blue')[i % 2]} item{i}"}
        ev = E.event(f"s-{i:02d}", 1, start_ms=base + i * 60000, labels=[(label, 0.5 + i / 100)], attributes=attrs)
        st, h, b = E.publish_json(kp, tok, ev)
        if st != 200:
            raise AssertionError(f"publish s-{i:02d}: {st} {b!r}")
        published.append(ev)
    check(len(published) == 23, "23 events published with labels, attributes and times")
    newest_first = [e["id"] for e in sorted(published, key=lambda e: -e["start_ms"])]

    got = search(kp, tok, camera=E.CAMERA, limit=500)
    check(ids(got) == newest_first, f"camera filter: all 23, newest first ({ids(got)})")
    check(got["next_cursor"] is None, "one page when the limit covers everything")

    got = search(kp, tok, label="car", limit=500)
    want = [e["id"] for e in published if e["labels"][0]["name"] == "car"][::-1]
    check(ids(got) == want, f"label=car: {ids(got)} == {want}")

    got = search(kp, tok, q="drive", limit=500)
    want = [e["id"] for e in published if e["attributes"]["zone"] == "driveway"][::-1]
    check(ids(got) == want, f"q=drive (prefix of an attribute value): {ids(got)}")

    got = search(kp, tok, q="blu drive", limit=500)
    check(ids(got) == want, "two words, both must match (blue and driveway go together)")
    got = search(kp, tok, q="red drive", limit=500)
    check(ids(got) == [], f"two words that never meet match nothing: {ids(got)}")

    frm, to = base + 5 * 60000, base + 10 * 60000
    got = search(kp, tok, **{"from": frm, "to": to, "limit": 500})
    check(ids(got) == [f"s-{i:02d}" for i in range(9, 4, -1)], f"time range [5, 10) minutes: {ids(got)}")

    st, h, b = kp.http("GET", "/api/v1/events?camera=nope", None, E.auth(tok))
    check(st == 404 and E.error_of(b)[0] == "not_found", f"an unknown camera -> 404 ({st} {b!r})")

    # Paging: 5 per page, cursor passed back unchanged.
    seen, cursor, pages = [], None, 0
    while True:
        params = {"camera": E.CAMERA, "limit": 5}
        if cursor:
            params["cursor"] = cursor
        got = search(kp, tok, **params)
        pages += 1
        check(len(got["events"]) <= 5, f"page {pages} holds at most 5")
        seen += ids(got)
        cursor = got["next_cursor"]
        if not cursor or pages > 10:
            break
    check(seen == newest_first and pages == 5, f"5 pages of 5 give every event once, in order ({pages} pages)")
    st, h, b = kp.http("GET", "/api/v1/events?cursor=garbage", None, E.auth(tok))
    check(st == 400 and E.error_of(b)[0] == "bad_cursor", f"a forged cursor -> 400 bad_cursor ({st} {b!r})")
    st, h, b = kp.http("GET", "/api/v1/events?limit=501", None, E.auth(tok))
    check(st == 400, f"limit 501 -> 400 ({st})")
    st, h, b = kp.http("GET", "/api/v1/events?from=yesterday", None, E.auth(tok))
    check(st == 400 and E.error_of(b)[0] == "bad_parameter", f"a bad time -> 400 ({st} {b!r})")

    # POST /delete of events.
    body = json.dumps({"events": ["s-00", "s-01", "missing"]})
    st, h, b = kp.http("POST", "/delete", body, E.auth(tok, {"Content-Type": "application/json"}))
    check(st == 200, f"delete answered 200 ({st} {b!r})")
    d = json.loads(b)
    check(d["deleted_events"] == 2 and d["missing_events"] == ["missing"], f"delete counts: {d}")
    st, h, b = kp.http("GET", "/api/v1/events/s-00", None, E.auth(tok))
    check(st == 404, f"a deleted event is gone ({st})")
    got = search(kp, tok, camera=E.CAMERA, limit=500)
    check(ids(got) == newest_first[:-2], "and no longer found by search")
    st, h, b = kp.http("POST", "/delete", "{\"events\": 5}", E.auth(tok, {"Content-Type": "application/json"}))
    check(st == 400, f"a malformed delete -> 400 ({st} {b!r})")
    # A browser session searches without the CSRF header (only changes need it).
    kp.add_user("viewer1", "correct horse battery", "viewer")
    c = http.client.HTTPConnection("127.0.0.1", kp.web_port, timeout=10)
    c.request("POST", "/api/v1/login", json.dumps({"user": "viewer1", "password": "correct horse battery"}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    cookies = "; ".join(v.split(";")[0] for k, v in r.getheaders() if k.lower() == "set-cookie")
    c.close()
    check(r.status == 200 and cookies, f"viewer logs in ({r.status})")
    st, h, b = kp.http("GET", f"/api/v1/events?camera={E.CAMERA}&limit=1", None, {"Cookie": cookies})
    check(st == 200 and len(json.loads(b)["events"]) == 1, f"session search without a CSRF header: 200 ({st} {b[:200]!r})")
    viewer = kp.token("viewer")
    st, h, b = kp.http("POST", "/delete", body, E.auth(viewer, {"Content-Type": "application/json"}))
    check(st == 403, f"a viewer cannot delete ({st})")
    cam.kill()


if __name__ == "__main__":
    run(test)
