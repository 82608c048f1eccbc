#!/usr/bin/env python3
"""webd with [web] tls_cert/tls_key: a self-signed P-256 certificate made with openssl(1)
is loaded before confinement; /healthz answers over TLS (1.2 or later), a plain-text
request on the TLS port gets no HTTP answer, /api/ routes still need credentials, a
sign-in sets the session cookie with Secure, and a key that does not match the
certificate keeps webd from starting with a log line naming the file."""
import http.client
import json
import os
import ssl
import subprocess
import tempfile

from kp import check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {{dir}}/data
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
tls_cert = {cert}
tls_key = {key}
"""


def make_cert(d, name):
    cert, key = os.path.join(d, name + ".crt"), os.path.join(d, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    os.chmod(key, 0o644)
    os.chmod(d, 0o755)
    return cert, key


def https(k, method, path, body=None, headers=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = http.client.HTTPSConnection("127.0.0.1", k.web_port, timeout=10, context=ctx)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.getheaders(), r.read(), c.sock.version()
    finally:
        c.close()


def test(make):
    d = tempfile.mkdtemp(prefix="kp-tls-")
    cert, key = make_cert(d, "web")
    k = make(config=CONFIG.format(cert=cert, key=key))
    k.wait_running(timeout=30)

    def up():
        try:
            return https(k, "GET", "/healthz")
        except OSError:
            return None
    r = wait_for(up, 20, 0.2)
    check(r is not None and r[0] == 200 and r[2] == b"ok\n", "GET /healthz over TLS: 200 ok")
    check(r[3] in ("TLSv1.2", "TLSv1.3"), f"protocol {r[3]}")
    st, _, body, _ = https(k, "GET", "/api/v1/cameras")
    check(st == 401 and json.loads(body)["code"] == "unauthenticated", f"/api/v1/cameras over TLS needs credentials ({st})")
    try:
        st, _, _ = k.http("GET", "/healthz", timeout=3)
    except (OSError, http.client.HTTPException):
        st = None
    check(st is None, f"plain HTTP on the TLS port gets no HTTP answer ({st})")

    k.add_user("tina", "tina-password-1", "viewer")
    st, headers, body, _ = https(k, "POST", "/api/v1/login", json.dumps({"user": "tina", "password": "tina-password-1"}),
                                 {"Content-Type": "application/json", "Origin": f"https://127.0.0.1:{k.web_port}"})
    cookies = [v for n, v in headers if n.lower() == "set-cookie"]
    session = [c for c in cookies if c.startswith("kp_session=")]
    check(st == 200 and session and "Secure" in session[0] and "HttpOnly" in session[0],
          f"sign-in over TLS sets a Secure, HttpOnly session cookie ({st}, {session})")
    k.stop()

    _, other_key = make_cert(d, "other")
    k2 = make(config=CONFIG.format(cert=cert, key=other_key))
    k2.expect_restarts("webd")  # it stops on the bad key and is retried with backoff, as meant
    found = wait_for(lambda: f"tls_key {other_key}: " in k2.log_text(), 15, 0.2)
    check(found, "a key that does not match the certificate: webd logs it and does not serve")
    try:
        served = https(k2, "GET", "/healthz")[0]
    except OSError:
        served = None
    check(served is None, f"and nothing answers on its port ({served})")


if __name__ == "__main__":
    run(test)
