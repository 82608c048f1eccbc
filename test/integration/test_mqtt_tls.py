"""MQTT over TLS with a user and password (issue 18, docs/decisions/0018): a mosquitto
started here with a TLS listener whose certificate (for localhost and 127.0.0.1) a CA
made here signs, a plain listener for the test's subscriber, and a password file.

- tls = yes, ca_file = the CA, password from a file (file:PATH): webd connects,
  PREFIX/available is "online";
- a reload with the CA of another authority: the broker's certificate is refused, webd
  is not connected, counts failed connects and its log says why (OpenSSL's verdict);
  back to the right CA: connected again;
- ca_file of 16385 bytes: the reload is refused and the running configuration stays;
  16384 bytes: connected;
- a wrong password: the broker refuses (CONNACK, in webd's log), counted; no worker
  restarts.

The broker's TLS port is the one Broker chose (it chooses again when a port was taken
before mosquitto bound it)."""
import os
import subprocess
import tempfile
import time

import kp_events as E
from kp import check, metric, run, wait_for
from test_mqtt import Broker, Sub, SUBS

CONFIG = """[keeppeek]
data_dir = {{dir}}/data
run_dir = {{dir}}/run
[web]
listen = 127.0.0.1:{{port}}
[mqtt]
host = localhost
port = {tls_port}
tls = yes
ca_file = {ca}
user = nvr
password = file:{pw}
topic_prefix = tls
"""


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(work, name):
    key, crt = os.path.join(work, f"{name}.key"), os.path.join(work, f"{name}.crt")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", f"/CN={name}", "-keyout", key, "-out", crt)
    return key, crt


def make_server(work, ca_key, ca_crt):
    key, csr, crt = (os.path.join(work, f"server.{x}") for x in ("key", "csr", "crt"))
    ext = os.path.join(work, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName = DNS:localhost, IP:127.0.0.1\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
            "-keyout", key, "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
            "-extfile", ext, "-out", crt)
    return key, crt


# webd gives up on an address after MQC_CONNECT_MS (10 s) without a CONNACK and tries the
# name's next one: "localhost" may name ::1 first, which a host may not answer at all.
CONNECT_WAIT = 25.0


def test(make):
    work = tempfile.mkdtemp(prefix="kp-mqtt-tls-")
    ca_key, ca_crt = make_ca(work, "ca")
    _, other_crt = make_ca(work, "other")
    srv_key, srv_crt = make_server(work, ca_key, ca_crt)
    pwfile = os.path.join(work, "passwd")
    subprocess.run(["mosquitto_passwd", "-b", "-c", pwfile, "nvr", "right-pw"], check=True, capture_output=True)
    os.chmod(pwfile, 0o600)
    broker = Broker(work, tls=(ca_crt, srv_crt, srv_key), auth=f"allow_anonymous false\npassword_file {pwfile}\n")
    tls_port = broker.tls_port
    sub = Sub(broker.port, ("-u", "nvr", "-P", "right-pw"))
    pw = os.path.join(work, "mqtt.pw")
    with open(pw, "w") as f:
        f.write("right-pw\n")
    try:
        kp = make(config=CONFIG.format(tls_port=tls_port, ca=ca_crt, pw=pw))
        kp.wait_running()
        tok = kp.token("admin")
        check(wait_for(lambda: metric(kp, tok, "keeppeek_webd_mqtt_connected") == 1, CONNECT_WAIT, 0.1),
              "connected over TLS with user and password")
        check(sub.wait("tls/available", b"online", timeout=CONNECT_WAIT), "tls/available online")
        # Where "localhost" names ::1 first (Debian 13's /etc/hosts), its refusal is logged but
        # the connect, taken by 127.0.0.1, is no failure.
        check(metric(kp, tok, "keeppeek_webd_mqtt_connect_failures_total") == 0,
              "a connect the name's next address takes counts no failure")

        def reload_with(text):
            with open(kp.config_path, "w") as f:
                f.write(text.format(dir=kp.dir, port=kp.port) + "\n[rtc]\naddresses = 127.0.0.1\n")
            rc, out, err = kp.ctl("reload")
            check(rc == 0, f"reload ({out.strip()} {err.strip()})")

        failures0 = metric(kp, tok, "keeppeek_webd_mqtt_connect_failures_total")
        reload_with(CONFIG.format(tls_port=tls_port, ca=other_crt, pw=pw))
        check(wait_for(lambda: metric(kp, tok, "keeppeek_webd_mqtt_connected") == 0, 10.0, 0.1),
              "another CA: not connected")
        # "localhost" may name ::1 first, where nothing listens: that refusal counts too, so
        # the log must say the certificate was the reason.
        check(wait_for(lambda: "The broker's certificate was refused: " in kp.log_text(), CONNECT_WAIT, 0.1),
              "webd's log names why the broker's certificate was refused")
        check(metric(kp, tok, "keeppeek_webd_mqtt_connect_failures_total") > failures0,
              "the refused certificate counted as a failed connect")
        time.sleep(2.0)
        check(metric(kp, tok, "keeppeek_webd_mqtt_connected") == 0, "still not connected with the wrong CA")

        reload_with(CONFIG.format(tls_port=tls_port, ca=ca_crt, pw=pw))
        check(wait_for(lambda: metric(kp, tok, "keeppeek_webd_mqtt_connected") == 1, CONNECT_WAIT, 0.1),
              "the right CA again: connected")

        # ca_file at its bound (16384 bytes: text before the PEM block is skipped) and one past.
        def padded(size):
            pem = open(ca_crt, "rb").read()
            path = os.path.join(work, f"ca-{size}.crt")
            with open(path, "wb") as f:
                f.write(b"#" * (size - len(pem) - 1) + b"\n" + pem)
            check(os.path.getsize(path) == size, f"a CA file of {size} bytes")
            return path
        with open(kp.config_path, "w") as f:
            f.write(CONFIG.format(tls_port=tls_port, ca=padded(16385), pw=pw).format(dir=kp.dir, port=kp.port))
        rc, out, err = kp.ctl("reload")
        check(rc != 0 and "not a regular file of at most 16384 bytes" in out + err,
              f"a CA file of 16385 bytes: the reload is refused ({out.strip()} {err.strip()})")
        check(metric(kp, tok, "keeppeek_webd_mqtt_connected") == 1, "the running configuration stays")
        reload_with(CONFIG.format(tls_port=tls_port, ca=padded(16384), pw=pw))
        check(wait_for(lambda: metric(kp, tok, "keeppeek_webd_mqtt_connected") == 1, CONNECT_WAIT, 0.1),
              "a CA file of 16384 bytes: connected")

        failures1 = metric(kp, tok, "keeppeek_webd_mqtt_connect_failures_total")
        refusals = kp.log_text().count("refused the connection: Connection Refused: not authorised")
        with open(pw, "w") as f:
            f.write("wrong-pw\n")
        reload_with(CONFIG.format(tls_port=tls_port, ca=ca_crt, pw=pw))
        check(wait_for(lambda: kp.log_text().count("refused the connection: Connection Refused: not authorised")
                       > refusals, CONNECT_WAIT, 0.1), "a wrong password: the broker refuses it (CONNACK)")
        check(metric(kp, tok, "keeppeek_webd_mqtt_connect_failures_total") > failures1,
              "the refusal is counted as a failed connect")
        check(metric(kp, tok, "keeppeek_webd_mqtt_connected") == 0, "not connected with a wrong password")
    finally:
        for s in SUBS:
            s.stop()
        broker.kill()


if __name__ == "__main__":
    run(test)
