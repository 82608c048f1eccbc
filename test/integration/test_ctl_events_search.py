"""keeppeekctl events search (SPEC 8a): events published over HTTP are found from the
command line by camera, time range (Unix ms, ISO 8601, relative), label and terms; --json
prints the same JSON as GET /api/v1/events; the table shows local times, labels with
scores, ids, revisions and JPEGs, newest first, with the next page's cursor; paging
with --cursor; bad input exits 2 with a message, nothing found exits 0."""
import concurrent.futures
import datetime
import json
import os
import time
import urllib.parse

import kp_events as E
from kp import check, fail, free_port, run

CONFIG = E.CONFIG + """[camera "front"]
url = baichuan://admin:x@127.0.0.1:{front}/?channel=0
[camera "yard"]
url = baichuan://admin:x@127.0.0.1:{yard}/?channel=0
"""


def ctl(kp, *args):
    return kp.ctl("events", "search", *args)


def ctl_json(kp, *args):
    rc, out, err = ctl(kp, "--json", *args)
    if rc != 0:
        fail(f"events search --json {args}: exit {rc}: {err}")
    return json.loads(out)


def http_search(kp, tok, **params):
    st, got = E.get_json(kp, tok, "/api/v1/events?" + urllib.parse.urlencode(params))
    if st != 200:
        fail(f"GET /api/v1/events {params}: {st} {got}")
    return got


def ids(got):
    return [e["id"] for e in got["events"]]


def local_iso(ms):
    return datetime.datetime.fromtimestamp(ms // 1000).astimezone().isoformat(timespec="seconds")


def test(make):
    # A zone that is not UTC (POSIX form, no tzdata needed), for keeppeekctl's local times.
    os.environ["TZ"] = "<+0530>-5:30"
    time.tzset()
    # Two configured cameras that never answer: publication needs a known camera only.
    config = CONFIG.replace("{front}", str(free_port())).replace("{yard}", str(free_port()))
    kp = make(config=config)
    kp.wait_running()
    tok = kp.token("admin")
    jpeg = E.snapshot_jpeg()
    # Twelve events one minute apart, from 50.5 to 39.5 minutes ago.
    base = int(time.time() * 1000) - 50 * 60000 - 30000
    published = []
    for i in range(12):
        ev = E.event(f"k-{i:02d}", 1 + i % 2, start_ms=base + i * 60000, camera=("front", "yard")[i % 2],
                     labels=[(("person", "car", "dog")[i % 3], 0.5 + i / 100)],
                     attributes={"zone": ("porch", "driveway", "garden")[i % 3], "note": f"item{i}"})
        st, h, b = E.publish_json(kp, tok, ev, jpeg if i % 4 == 0 else None)
        if st != 200:
            fail(f"publish k-{i:02d}: {st} {b!r}")
        published.append(ev)
    newest = sorted(published, key=lambda e: -e["start_ms"])
    newest_ids = [e["id"] for e in newest]

    got = ctl_json(kp, "--limit", "500")
    check(got == http_search(kp, tok, limit=500), "--json prints the same JSON as GET /api/v1/events")
    check(ids(got) == newest_ids and got["next_cursor"] is None, f"every event, newest first: {ids(got)}")

    got = ctl_json(kp, "--camera", "yard")
    check(ids(got) == [e["id"] for e in newest if e["camera"] == "yard"], f"--camera yard: {ids(got)}")
    got = ctl_json(kp, "--label", "car")
    check(ids(got) == [e["id"] for e in newest if e["labels"][0]["name"] == "car"], f"--label car: {ids(got)}")
    got = ctl_json(kp, "drive")
    want = [e["id"] for e in newest if e["attributes"]["zone"] == "driveway"]
    check(ids(got) == want, f"a term (prefix of an attribute value): {ids(got)}")
    got = ctl_json(kp, "--camera", "front", "--label", "person", "porch", "item")
    want = [e["id"] for e in newest if e["camera"] == "front" and e["labels"][0]["name"] == "person"]
    check(ids(got) == want and got == http_search(kp, tok, camera="front", label="person", q="porch item"),
          f"camera, label and two terms together, as over HTTP: {ids(got)}")

    frm, to = base + 3 * 60000, base + 7 * 60000
    by_ms = ctl_json(kp, "--from", str(frm), "--to", str(to))
    check(ids(by_ms) == [f"k-{i:02d}" for i in range(6, 2, -1)], f"--from/--to in Unix ms: {ids(by_ms)}")
    iso = [datetime.datetime.fromtimestamp(t / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
           for t in (frm, to)]
    check(ctl_json(kp, "--from", iso[0], "--to", iso[1]) == by_ms, f"ISO 8601 UTC times {iso}")
    local = [datetime.datetime.fromtimestamp(t / 1000).isoformat(timespec="milliseconds") for t in (frm, to)]
    check(ctl_json(kp, "--from", local[0], "--to", local[1]) == by_ms, f"ISO 8601 local times {local}")
    # Relative: event i started 50.5 - i minutes ago; [-45m, -42m) holds 6, 7 and 8.
    got = ctl_json(kp, "--from", "-45m", "--to", "-42m")
    check(ids(got) == ["k-08", "k-07", "k-06"], f"--from -45m --to -42m: {ids(got)}")
    got = ctl_json(kp, "--from", "-1h", "--to", "now")
    check(ids(got) == newest_ids, f"--from -1h --to now: everything ({ids(got)})")

    # The table.
    rc, out, err = ctl(kp, "--camera", "front", "--limit", "500")
    lines = out.splitlines()
    front = [e for e in newest if e["camera"] == "front"]
    check(rc == 0 and lines[0].split() == ["TIME", "CAMERA", "LABELS", "ID", "REV", "JPEG"],
          f"table header ({rc}, {out!r}, {err!r})")
    check(len(lines) == 1 + len(front), f"one line per event and no cursor hint on the last page: {lines}")
    for line, e in zip(lines[1:], front):
        want = [local_iso(e["start_ms"]), "front", e["labels"][0]["name"], f"{e['labels'][0]['score']:.2f}",
                e["id"], str(e["revision"]), "yes" if int(e["id"][2:]) % 4 == 0 else "no"]
        check(line.split() == want, f"row {line!r} == {want}")

    # Paging: 5 per page, cursor passed back unchanged; the table names the same cursor.
    seen, cursor, pages = [], None, 0
    while pages < 10:
        args = ["--limit", "5"] + (["--cursor", cursor] if cursor else [])
        got = ctl_json(kp, *args)
        pages += 1
        check(len(got["events"]) <= 5, f"page {pages} holds at most 5")
        seen += ids(got)
        if got["next_cursor"]:
            rc, out, err = ctl(kp, *args)
            hint = out.splitlines()[-1]
            check(rc == 0 and hint.endswith("--cursor " + got["next_cursor"]),
                  f"the table ends with the next cursor: {hint!r}")
        cursor = got["next_cursor"]
        if not cursor:
            break
    check(seen == newest_ids and pages == 3, f"3 pages of at most 5 give every event once, in order ({pages})")

    # Nothing found is not a failure.
    rc, out, err = ctl(kp, "--label", "unicorn")
    check(rc == 0 and out.strip() == "no events found", f"nothing found: exit 0 ({rc}, {out!r}, {err!r})")
    rc, out, err = ctl(kp, "--camera", "nope")
    check(rc == 0 and "nope" in out, f"an unknown camera: exit 0 and says so ({rc}, {out!r})")
    check(ctl_json(kp, "--camera", "nope")["events"] == [], "and its JSON lists no events")

    # Bad input: exit 2 with a message.
    for args, why in ((["--from", "yesterday"], "is not a time"), (["--to", "2026-02-30T00:00:00Z"], "is not a time"),
                      (["--from", "-1w"], "is not a time"), (["--limit", "0"], "--limit"),
                      (["--limit", "501"], "--limit"), (["--cursor", "garbage"], "cursor"),
                      (["--color", "red"], "unknown option"), (["--camera"], "usage"),
                      (["--camera", "c" * 65], "too long"), (["w" * 257], "too long"),
                      (["--from", str(to), "--to", str(frm)], "before")):
        rc, out, err = ctl(kp, *args)
        check(rc == 2 and why in err and not out, f"{args}: exit 2 and '{why}' on stderr ({rc}, {out!r}, {err!r})")
    rc, out, err = kp.ctl("events", "find")
    check(rc == 2 and "usage" in err, f"events without search: usage ({rc}, {err!r})")

    # A page whose JSON would pass 256 KiB (one control answer) comes back smaller,
    # with a cursor: 260 events of about 5 KiB each, a day before the others.
    big_base = base - 86400000

    def publish_big(i):
        ev = E.event(f"big-{i:03d}", 1, start_ms=big_base + i * 1000, camera="front",
                     attributes={f"k{a:02d}": f"{i:03d}{a:02d}" + "v" * 123 for a in range(16)},
                     boxes=[("person", 0.1, 0.2, 0.3, 0.4, 0.5)] * 32)
        st, h, b = E.publish_json(kp, tok, ev)
        return st, b
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        for st, b in pool.map(publish_big, range(260)):
            if st != 200:
                fail(f"publish of a large event: {st} {b!r}")
    window = ["--from", str(big_base), "--to", str(big_base + 86400000 // 2)]
    want = [f"big-{i:03d}" for i in range(259, -1, -1)]
    whole = http_search(kp, tok, **{"from": big_base, "to": big_base + 86400000 // 2, "limit": 500})
    check(ids(whole) == want, f"over HTTP one page holds all 260 ({len(whole['events'])})")
    seen, cursor, sizes = [], None, []
    while len(sizes) < 30:
        rc, out, err = ctl(kp, "--json", "--limit", "500", *window, *(["--cursor", cursor] if cursor else []))
        check(rc == 0 and len(out) <= 256 * 1024, f"a page within 256 KiB ({rc}, {len(out)} bytes, {err!r})")
        got = json.loads(out)
        sizes.append(len(got["events"]))
        seen += ids(got)
        cursor = got["next_cursor"]
        if not cursor:
            break
    check(seen == want and len(sizes) > 1 and sizes[0] < 260,
          f"smaller pages with cursors give all 260 in order (page sizes {sizes})")


if __name__ == "__main__":
    run(test)
