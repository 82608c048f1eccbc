#!/usr/bin/env python3
"""Authentication end to end, over real sockets against a demo keeppeekd and its webd:
the demo admin's printed password logs in and a wrong one does not; every /api/ route of
SPEC section 7 and /metrics answer 401 without credentials (and with a bogus token or
cookie) while /healthz needs none; a viewer token cannot POST /delete (403); a
cross-site POST with a session cookie is refused; a revoked token and a deleted user's
session stop working within webd's 10 s cache; sessions survive a webd restart; repeated
failed logins are slowed (429 with Retry-After), even for the right password; a second
demo start keeps the users and prints no password."""
import base64
import http.client
import json
import os
import re
import socket
import stat
import subprocess
import time

import kp
from kp import check, fail, wait_for

LOGIN = "/api/v1/login"
LOGOUT = "/api/v1/logout"
SESSION_COOKIE = "kp_session"
CSRF_COOKIE = "kp_csrf"  # and its copy in CSRF_HEADER: webd's double-submit CSRF check
CSRF_HEADER = "X-KeepPeek-CSRF"
CACHE_S = 10  # webd keeps positive answers at most this long (docs/auth.md)

# Every /api/ route of SPEC section 7 and /metrics: (method, path, body).
PROTECTED = [
    ("GET", "/metrics", None),
    ("GET", "/api/v1/cameras", None),
    ("POST", "/api/v1/events", '{"id":"x","revision":1,"camera":"demo-rtsp","stream":"sub",'
     '"start_ms":1,"end_ms":2,"labels":[]}'),
    ("GET", "/api/v1/events?limit=1", None),
    ("GET", "/api/v1/events/x/snapshot", None),
    ("GET", "/api/v1/events/x/keyframe?stream=main", None),
    ("GET", "/api/v1/coverage?from=0&to=1000&bucket=3600000", None),
    ("GET", "/api/v1/export?camera=demo-rtsp&stream=main&from=0&to=1000", None),
    ("POST", "/delete", '{"recordings":[],"events":[]}'),
    ("GET", "/api/v1/session", None),
    ("POST", LOGOUT, None),
]
WEBSOCKETS = ["/api/v1/live", "/api/v1/rtc"]


def ws_status(k, path, headers=None):
    """Opens a WebSocket: the HTTP status, and for 101 the close code and reason the
    server sent first (None if it sent something else or nothing within 5 s)."""
    s = socket.create_connection(("127.0.0.1", k.web_port), timeout=5)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "".join(f"{n}: {v}\r\n" for n, v in (headers or {}).items())
        s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"{extra}\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
        if status != 101:
            return status, None
        try:
            while len(rest) < 2 or len(rest) < 2 + (rest[1] & 0x7f):
                d = s.recv(4096)
                if not d:
                    break
                rest += d
        except socket.timeout:
            return status, None
        if len(rest) < 4 or rest[0] & 0x0f != 8:
            return status, None
        n = rest[1] & 0x7f
        payload = rest[2:2 + n]
        return status, (int.from_bytes(payload[:2], "big"), payload[2:].decode(errors="replace"))
    finally:
        s.close()


def login(k, user, password):
    """POST LOGIN as a same-origin browser would: (status, {lower-case header: value},
    body, {cookie name: (value, attributes in lower case)} from every Set-Cookie)."""
    c = http.client.HTTPConnection("127.0.0.1", k.web_port, timeout=10)
    try:
        c.request("POST", LOGIN, body=json.dumps({"user": user, "password": password}),
                  headers={"Content-Type": "application/json", "Origin": k.web_url})
        r = c.getresponse()
        body = r.read()
        cookies = {}
        for name, value in r.getheaders():
            if name.lower() == "set-cookie":
                first, _, attrs = value.partition(";")
                cname, _, cval = first.strip().partition("=")
                cookies[cname] = (cval, attrs.lower())
        return r.status, {n.lower(): v for n, v in r.getheaders()}, body, cookies
    finally:
        c.close()


def session_headers(cookies, csrf=True):
    """Headers of a same-origin browser request with the session (and CSRF) cookies."""
    h = {"Cookie": "; ".join(f"{n}={v[0]}" for n, v in cookies.items())}
    if csrf and SESSION_COOKIE in cookies and CSRF_COOKIE in cookies:
        h[CSRF_HEADER] = cookies[CSRF_COOKIE][0]
    return h


def ctl_in(k, text, *args):
    """keeppeekctl with text (and a newline, if any) on its standard input."""
    return subprocess.run([kp.KEEPPEEKCTL, "-s", k.sock, *args], input=text + "\n" if text else "",
                          capture_output=True, text=True, timeout=30)


def bearer(token):
    return {"Authorization": "Bearer " + token}


def wait_status(k, method, path, headers, want, timeout):
    return wait_for(lambda: k.http(method, path, None, headers)[0] == want, timeout, 0.25)


def test(make):
    k = make()
    k.wait_running(timeout=30)
    healthz = wait_for(lambda: _try(lambda: k.http("GET", "/healthz")[0]) == 200, 20, 0.1)
    check(healthz, "GET /healthz answers 200 without credentials")

    # ---- keeppeekctl user/token ----
    rc, out, _ = k.ctl("user", "list", "--json")
    check(rc == 0 and json.loads(out) == {"users": [{"name": "admin", "role": "admin"}]},
          "the demo created exactly the user admin (role admin)")
    password = k.demo_admin_password()
    check(password is not None and len(password) >= 16, "the demo printed the admin password once")
    check(k.log_text().count(password) == 1, "the password appears once in the output (printed, not logged)")
    check("its password was printed on standard output" in k.log_text(), "the log says it was printed")

    auth_dir = os.path.join(k.data, "auth")
    check(stat.S_IMODE(os.stat(auth_dir).st_mode) == 0o700, "data_dir/auth has mode 0700")
    check(stat.S_IMODE(os.stat(os.path.join(auth_dir, "users")).st_mode) == 0o600, "auth/users has mode 0600")

    k.add_user("vera", "vera-password-1", "viewer")
    rc, out, _ = k.ctl("user", "list")
    check(rc == 0 and re.search(r"^vera\s+viewer$", out, re.M), "user list shows vera as viewer")
    r = ctl_in(k, "another-password", "user", "add", "vera", "--role", "viewer")
    check(r.returncode == 1 and "exists" in r.stderr, "user add of an existing name exits 1")
    check(ctl_in(k, "short", "user", "add", "shorty", "--role", "viewer").returncode == 2,
          "user add with a 5-byte password exits 2")
    check(ctl_in(k, "long-enough-1", "user", "add", "x", "--role", "root").returncode == 2,
          "user add with an unknown role exits 2")
    check(ctl_in(k, "long-enough-1", "user", "add", "bad name", "--role", "viewer").returncode == 2,
          "user add with a space in the name exits 2")
    check(ctl_in(k, "", "user", "add", "empty", "--role", "viewer").returncode == 1,
          "user add with nothing on stdin exits 1")
    check(k.ctl("user", "frobnicate")[0] == 2, "an unknown user subcommand exits 2")
    check(k.ctl("user", "del", "nobody-here")[0] == 1, "user del of an unknown user exits 1")
    pwfile = os.path.join(k.dir, "pw")
    with open(pwfile, "w") as f:
        f.write("file-password-2\nsecond line ignored\n")
    rc, out, err = k.ctl("user", "add", "fred", "--role", "admin", "--password-file", pwfile)
    check(rc == 0, f"user add --password-file works ({err.strip()})")

    rc, out, err = k.ctl("token", "create", "--name", "viewer-bot", "--role", "viewer")
    check(rc == 0 and re.fullmatch(r"kp_[A-Za-z0-9_-]{43}\n", out) is not None and err == "",
          "token create prints only the token")
    viewer_token = out.strip()
    check(k.ctl("token", "create", "--name", "viewer-bot", "--role", "viewer")[0] == 1,
          "token create with a name in use exits 1")
    check(k.ctl("token", "create", "--name", "y")[0] == 2, "token create without --role exits 2")
    admin_token = k.token("admin", name="admin-bot")
    rc, out, _ = k.ctl("token", "list", "--json")
    toks = {t["name"]: t for t in json.loads(out)["tokens"]} if rc == 0 else {}
    check(set(toks) == {"viewer-bot", "admin-bot"} and toks["viewer-bot"]["role"] == "viewer"
          and abs(toks["admin-bot"]["created_ms"] / 1000 - time.time()) < 120,
          "token list --json names both tokens with role and creation time")
    with open(os.path.join(auth_dir, "tokens")) as f:
        text = f.read()
    check(viewer_token not in text and admin_token not in text, "the tokens file holds no token, only digests")
    with open(os.path.join(auth_dir, "users")) as f:
        text = f.read()
    check(password not in text and "vera-password-1" not in text and "$scrypt$ln=15,r=8,p=1$" in text,
          "the users file holds scrypt hashes, no password")

    # ---- no credentials: 401 on every protected route, 1008 on the WebSockets ----
    for method, path, body in PROTECTED:
        st, hd, b = k.http(method, path, body, {"Content-Type": "application/json"} if body else None)
        check(st == 401, f"{method} {path} without credentials: 401 (got {st})")
        st, _, _ = k.http(method, path, body, bearer("kp_" + "A" * 43))
        check(st == 401, f"{method} {path} with an unknown token: 401 (got {st})")
        forged = session_headers({SESSION_COOKIE: ("A" * 43, ""), CSRF_COOKIE: ("B" * 32, "")})
        st, _, _ = k.http(method, path, body, dict(forged, Origin=k.web_url))
        check(st == 401, f"{method} {path} with an unknown session cookie: 401 (got {st})")
    for path in WEBSOCKETS:
        st, close = ws_status(k, path)
        check(st == 401 or (st == 101 and close is not None and close[0] == 1008 and "401" in close[1]),
              f"WebSocket {path} without credentials: 401 or closed 1008/401 (got {st}, {close})")

    # ---- login ----
    st, hd, body, cookies = login(k, "admin", "wrong-password")
    check(st == 401 and SESSION_COOKIE not in cookies, f"login with a wrong password: 401, no cookie (got {st})")
    st, hd, body, cookies = login(k, "nosuchuser", "whatever-password")
    check(st == 401 and SESSION_COOKIE not in cookies, f"login as an unknown user: 401 (got {st})")
    st, hd, body, admin = login(k, "admin", password)
    check(st == 200 and SESSION_COOKIE in admin, f"login with the right password: 200 and a session cookie (got {st})")
    check(json.loads(body).get("role") == "admin", f"the login answer names the role ({body!r})")
    attrs = admin.get(SESSION_COOKIE, ("", ""))[1]
    check("httponly" in attrs and "samesite=strict" in attrs,
          f"the session cookie is HttpOnly, SameSite=Strict ({attrs})")
    admin_cookie = session_headers(admin, csrf=False)
    st, _, body = k.http("GET", "/api/v1/cameras", None, admin_cookie)
    check(st == 200 and "cameras" in json.loads(body), "the session cookie opens GET /api/v1/cameras")
    st, _, body = k.http("GET", "/api/v1/session", None, admin_cookie)
    check(st == 200 and json.loads(body).get("user") == "admin", "GET /api/v1/session names the admin")
    st, _, _ = k.http("GET", "/metrics", None, bearer(viewer_token))
    check(st == 200, f"a viewer token reads /metrics (got {st})")

    # ---- roles and cross-site requests ----
    delete_body = '{"recordings":[],"events":[]}'
    st, _, _ = k.http("POST", "/delete", delete_body, dict(bearer(viewer_token), **{"Content-Type": "application/json"}))
    check(st == 403, f"a viewer token cannot POST /delete: 403 (got {st})")
    st, _, _ = k.http("POST", "/delete", delete_body, dict(bearer(admin_token), **{"Content-Type": "application/json"}))
    check(st not in (401, 403), f"an admin token may POST /delete (got {st})")
    # A detector's publisher token publishes and does nothing else; viewers only watch and search.
    rc, out, err = k.ctl("token", "create", "--name", "detector", "--role", "publisher")
    check(rc == 0 and out.strip(), f"token create --role publisher ({rc} {err.strip()})")
    pub = bearer(out.strip())
    check(ctl_in(k, "long-enough-1", "user", "add", "pubuser", "--role", "publisher").returncode == 2,
          "publisher is a token role: user add --role publisher is refused")
    ev = '{"id":"role-1","revision":1,"camera":"demo-rtsp","stream":"sub","start_ms":%d,"end_ms":0,"labels":[]}'
    now = int(time.time() * 1000)
    json_h = {"Content-Type": "application/json"}
    st, _, b = k.http("POST", "/api/v1/events", ev % now, dict(pub, **json_h))
    check(st == 200, f"a publisher token publishes an event (got {st} {b[:120]!r})")
    st, _, b = k.http("POST", "/api/v1/events", ev.replace("role-1", "role-2") % now, dict(bearer(viewer_token), **json_h))
    check(st == 403, f"a viewer token cannot publish: 403 (got {st} {b[:120]!r})")
    for method, path, body in PROTECTED:
        if path == "/api/v1/events" and method == "POST":
            continue
        st, _, _ = k.http(method, path, body, dict(pub, **json_h))
        check(st == 403, f"a publisher token is refused {method} {path}: 403 (got {st})")
    for path in WEBSOCKETS:
        st, close = ws_status(k, path, pub)
        check(st == 403 or (st == 101 and close is not None and close[0] == 1008 and "403" in close[1]),
              f"a publisher token opens no {path} WebSocket: 403 (got {st} {close})")
    # Revisions move up by at most 2^20 at a time, so no one can publish the last one there is.
    for eid, rev, want in (("role-1", 2 + (1 << 20), 400), ("role-3", 4294967295, 400), ("role-1", 1 + (1 << 20), 200)):
        body = ev.replace('"role-1","revision":1', f'"{eid}","revision":{rev}') % now
        st, _, b = k.http("POST", "/api/v1/events", body, dict(pub, **json_h))
        check(st == want, f"event {eid} revision {rev}: {want} (got {st} {b[:140]!r})")
    check(k.ctl("token", "revoke", "detector")[0] == 0, "the publisher token is revoked")
    st, _, _ = k.http("POST", "/delete", delete_body, dict(admin_cookie, **{"Origin": "http://evil.example",
                                                                           "Content-Type": "application/json"}))
    check(st == 403, f"a cross-site POST /delete with the admin's session cookie is refused: 403 (got {st})")
    st, _, _ = k.http("POST", "/delete", delete_body, dict(session_headers(admin), **{
        "Origin": "http://evil.example", "Content-Type": "application/json"}))
    check(st == 403, f"... also when it copies the CSRF cookie into the header (got {st})")
    st, _, _ = k.http("POST", "/delete", delete_body, dict(session_headers(admin), **{
        "Origin": k.web_url, "Content-Type": "application/json"}))
    check(st not in (401, 403), f"a same-origin POST /delete with the CSRF header passes (got {st})")
    st, _, _ = k.http("POST", LOGIN, json.dumps({"user": "admin", "password": password}),
                      {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"})
    check(st == 403, f"a sign-in a browser marks cross-site (no Origin) is refused: 403 (got {st})")
    for page in ("/", "/login.html", "/events.html"):
        st, h, _ = k.http("GET", page)
        csp = h.get("content-security-policy", "")
        check(st == 200 and "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and
              h.get("x-content-type-options") == "nosniff",
              f"UI page {page}: CSP default-src 'self', frame-ancestors 'none', nosniff ({st} {csp!r})")

    # ---- sessions survive a webd restart ----
    old_pid = k.status()["webd"]["pid"]
    k.expect_restarts("webd")
    check(k.ctl("restart", "webd")[0] == 0, "keeppeekctl restart webd")
    wait_for(lambda: (k.status() or {}).get("webd", {}).get("pid") not in (None, 0, old_pid)
             and k.status()["webd"]["state"] == "running", 10, 0.05)
    check(wait_for(lambda: _try(lambda: k.http("GET", "/healthz")[0]) == 200, 30, 0.05),
          "the new webd serves /healthz")
    st, _, _ = k.http("GET", "/api/v1/cameras", None, admin_cookie)
    check(st == 200, f"the session still works after webd restarted (got {st})")

    # ---- revocation and deletion take effect within webd's cache bound ----
    check(k.http("GET", "/api/v1/cameras", None, bearer(admin_token))[0] == 200, "the admin token works")
    rc, out, _ = k.ctl("token", "revoke", "admin-bot")
    check(rc == 0, "token revoke admin-bot")
    check(k.ctl("token", "revoke", "admin-bot")[0] == 1, "revoking it again exits 1")
    t0 = time.monotonic()
    check(wait_status(k, "GET", "/api/v1/cameras", bearer(admin_token), 401, CACHE_S + 2),
          f"the revoked token gets 401 once webd's {CACHE_S} s cache lapses (took {time.monotonic() - t0:.1f} s)")
    st, hd, body, vera = login(k, "vera", "vera-password-1")
    vera_cookie = session_headers(vera, csrf=False)
    check(st == 200 and SESSION_COOKIE in vera, f"vera logs in (got {st})")
    check(k.http("GET", "/api/v1/cameras", None, vera_cookie)[0] == 200, "vera's session works")
    rc, out, _ = k.ctl("user", "del", "vera")
    check(rc == 0 and "1 sessions ended" in out, f"user del vera ends her session ({out.strip()})")
    check(wait_status(k, "GET", "/api/v1/cameras", vera_cookie, 401, CACHE_S + 2),
          f"a deleted user's session gets 401 once webd's {CACHE_S} s cache lapses")
    check(ctl_in(k, "fred-new-password", "user", "passwd", "fred").returncode == 0, "user passwd fred")
    check(login(k, "fred", "file-password-2")[0] == 401, "fred's old password no longer logs in")
    st, _, _, fred = login(k, "fred", "fred-new-password")
    check(st == 200, "fred's new password logs in")
    st, _, _ = k.http("POST", LOGOUT, None, dict(session_headers(fred), Origin=k.web_url))
    check(st == 200, f"fred logs out (got {st})")
    st, _, _ = k.http("GET", "/api/v1/cameras", None, session_headers(fred, csrf=False))
    check(st == 401, f"fred's session is over after logout: 401 (got {st})")

    # ---- repeated failures are slowed (last: it blocks 127.0.0.1 for a while) ----
    statuses = []
    retry_after = None
    for i in range(8):
        st, hd, _, _ = login(k, "admin", f"guess-{i}")
        statuses.append(st)
        if st == 429:
            retry_after = hd.get("retry-after")
            break
    check(429 in statuses and retry_after is not None and int(retry_after) >= 1,
          f"repeated failed logins get 429 with Retry-After (statuses {statuses}, Retry-After {retry_after})")
    st, hd, _, cookies = login(k, "admin", password)
    check(st == 429 and SESSION_COOKIE not in cookies,
          f"while slowed, even the right password is refused with 429 (got {st})")
    check(k.http("GET", "/api/v1/cameras", None, admin_cookie)[0] == 200,
          "an existing session is not affected by the slowing")

    # ---- a second demo start keeps the users and prints no password ----
    data = k.data
    k.stop()
    log_path = os.path.join(k.dir, "second.log")
    with open(log_path, "w") as log:
        p = subprocess.Popen([kp.KEEPPEEKD, "--demo", "--data-dir", data, "--listen", f"127.0.0.1:{kp.free_port()}"],
                             stdout=log, stderr=subprocess.STDOUT, cwd=k.dir, start_new_session=True)
        try:
            up = wait_for(lambda: k.ctl("user", "list", "--json")[0] == 0, 15, 0.1)
            rc, out, _ = k.ctl("user", "list", "--json")
            names = [u["name"] for u in json.loads(out)["users"]] if up and rc == 0 else None
            check(names == ["admin", "fred"], f"after a restart the users are admin and fred ({names})")
            rc, out, _ = k.ctl("token", "list", "--json")
            check(rc == 0 and [t["name"] for t in json.loads(out)["tokens"]] == ["viewer-bot"],
                  "after a restart the token list is viewer-bot")
        finally:
            k.known_pids |= k.descendants()
            p.terminate()
            p.wait(timeout=15)
    with open(log_path) as f:
        text = f.read()
    check("with password" not in text and password not in text, "the second start printed no password")


def _try(fn):
    try:
        return fn()
    except OSError:
        return None


if __name__ == "__main__":
    kp.run(test)
