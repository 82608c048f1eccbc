"""Revocation ends access at once, not when webd's 10 s answer cache runs out: after
`token revoke`, `user del` or `user passwd`, that principal's live-event and signaling
WebSockets close (1008, "credentials revoked") within 1 s, its WebRTC sessions end with
them in rtcd, and its next HTTP request is refused; other principals keep theirs."""
import json
import subprocess
import time

import kp
import kp_ws
from kp import check, run, wait_for
from test_auth import bearer, login, session_headers

OFFER_FP = ":".join(["AB"] * 32)


def offer(sid):
    sdp = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
           "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\n"
           "a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
           f"a=fingerprint:sha-256 {OFFER_FP}\r\na=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n"
           "a=rtpmap:102 H264/90000\r\n"
           "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n")
    return json.dumps({"type": "offer", "sid": sid, "sdp": sdp, "camera": "demo-baichuan", "stream": "sub"})


def open_sockets(k, headers, sid):
    headers = dict(headers, Origin=k.web_url)  # a page of the UI, as a browser sends it
    live = kp_ws.connect("127.0.0.1", k.web_port, "/api/v1/live", headers)
    rtc = [kp_ws.connect("127.0.0.1", k.web_port, "/api/v1/rtc", headers)]

    def answered():
        rtc[0].send_text(offer(sid))
        end = time.monotonic() + 5
        while time.monotonic() < end:
            kind, data = rtc[0].recv(timeout=5)
            if kind == "close" and data[0] == 1012:
                # rtcd announced its start after this socket opened (keeppeekd just
                # started): webd closes signaling sockets then, and a page reconnects.
                rtc[0] = kp_ws.connect("127.0.0.1", k.web_port, "/api/v1/rtc", headers)
                return False
            if kind != "text":
                check(False, f"{sid}: the signaling WebSocket stays open ({kind} {data})")
            m = json.loads(data)
            if m.get("sid") == sid and m["type"] in ("answer", "error"):
                return m["type"] == "answer"
        return False
    check(wait_for(answered, 20, 0.5), f"{sid}: a WebRTC session is answered")
    return live, rtc[0]


def closed_within(ws, seconds):
    """(seconds until the server's close frame, (code, reason)), or None."""
    t0 = time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        try:
            kind, data = ws.recv(timeout=max(0.05, end - time.monotonic()))
        except TimeoutError:
            return None
        except ConnectionError:
            return time.monotonic() - t0, None
        if kind == "close":
            return time.monotonic() - t0, data
    return None


def rtc_sessions(k, admin):
    st, _, body = k.http("GET", "/metrics", headers=bearer(admin))
    for line in body.decode().splitlines():
        if line.startswith("keeppeek_rtc_sessions "):
            return float(line.split()[1])
    return None


def revoke_case(k, admin, what, headers, act, sid, other):
    live, rtc = open_sockets(k, headers, sid)
    st, _, _ = k.http("GET", "/api/v1/cameras", headers=headers)
    check(st == 200, f"{what}: the credentials work before ({st})")  # now cached in webd
    before = rtc_sessions(k, admin)
    act()
    for name, ws in (("live", live), ("rtc", rtc)):
        r = closed_within(ws, 1.0)
        check(r is not None and (r[1] is None or (r[1][0] == 1008 and "revoked" in r[1][1])),
              f"{what}: its {name} WebSocket closed within 1 s ({r})")
    st, _, _ = k.http("GET", "/api/v1/cameras", headers=headers)
    check(st == 401, f"{what}: the next request is refused at once: 401 (got {st})")
    check(wait_for(lambda: rtc_sessions(k, admin) == before - 1, 2.0),
          f"{what}: rtcd ended its WebRTC session ({before} -> {rtc_sessions(k, admin)})")
    st, _, _ = k.http("GET", "/api/v1/cameras", headers=other)
    check(st == 200, f"{what}: another principal is untouched ({st})")


def test(make):
    k = make()
    k.wait_running()
    admin = k.token("admin")
    keep = bearer(k.token("viewer"))

    tok = k.token("viewer", name="to-revoke")
    revoke_case(k, admin, "token revoke", bearer(tok), lambda: k.ctl("token", "revoke", "to-revoke"), "t1", keep)

    def user(name, password):
        k.add_user(name, password, "viewer")
        st, _, _, cookies = login(k, name, password)
        check(st == 200, f"{name} signs in ({st})")
        return session_headers(cookies)

    h = user("dora", "dora-password-1")
    revoke_case(k, admin, "user del", h, lambda: k.ctl("user", "del", "dora"), "u1", keep)

    h = user("paul", "paul-password-1")
    passwd = lambda: subprocess.run([kp.KEEPPEEKCTL, "-s", k.sock, "user", "passwd", "paul"],
                                    input="paul-password-2\n", capture_output=True, text=True, timeout=30)
    revoke_case(k, admin, "user passwd", h, passwd, "p1", keep)


if __name__ == "__main__":
    run(test)
