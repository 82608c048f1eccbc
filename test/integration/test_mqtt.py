"""MQTT (issue 18, docs/decisions/0018) against a real broker: Debian's mosquitto,
started here on a loopback port chosen at run time, watched by mosquitto_sub on '#'.

- PREFIX/available is "online" (retained); the Home Assistant discovery documents of the
  camera (motion binary_sensor, camera entity on the snapshot topic, stream state
  sensors) are retained and point at the state topics; PREFIX/front/main/state says
  "streaming";
- an event published over HTTP arrives on PREFIX/events as the same JSON that
  GET /api/v1/events/ID answers, its JPEG byte-identical on PREFIX/front/snapshot
  (retained), PREFIX/front/person counts it ("1", then "0" after active_secs) and a
  sensor document for the label appears;
- a motion alarm of the test camera turns PREFIX/front/motion "ON", then "OFF";
- the broker killed: keeppeek_webd_mqtt_connected goes to 0, events published meanwhile
  past the queue's 256 are dropped oldest-first and counted; the broker started again:
  webd reconnects, a new subscriber gets every retained topic back (the broker kept
  nothing) and the newest events queued, recording went on throughout;
- the camera removed from the file and reloaded: its discovery documents and state
  topics are cleared (empty retained payloads).
With [mqtt] qos = 0; test_mqtt_qos1.py runs it all with qos = 1."""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import kp_events as E
from kp import TestCamera, cameras, check, fail, free_port, run, wait_for, wait_streaming

QUEUE = 256  # mqtt_client.c MQC_QUEUE_ITEMS
QOS = 0  # test_mqtt_qos1.py runs the same with 1

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


class Broker:
    """A mosquitto on 127.0.0.1: a plain listener (port) and, with tls=(cafile, certfile,
    keyfile), a TLS one (tls_port). Both ports are chosen here; when mosquitto exits at its
    first start because one was taken meanwhile (by another test's socket), new ones are
    chosen, up to three times. Started again (start), it keeps its ports."""

    def __init__(self, work, tls=None, auth="allow_anonymous true\n"):
        self.conf = os.path.join(work, "mosquitto.conf")
        self.log = os.path.join(work, "mosquitto.log")
        self.tls = tls
        self.auth = auth
        self.proc = None
        for attempt in range(3):
            self.port = free_port()
            self.tls_port = free_port() if tls else None
            self._write_conf()
            if self._launch() or attempt == 2:
                break
        self._check_up()

    def _write_conf(self):
        with open(self.conf, "w") as f:
            # Started as root, mosquitto would become user mosquitto, who cannot read the
            # test's private directory.
            f.write(f"user {pwd.getpwuid(os.getuid()).pw_name}\npersistence false\n{self.auth}"
                    f"listener {self.port} 127.0.0.1\n")
            if self.tls:
                f.write(f"listener {self.tls_port} 127.0.0.1\ncafile {self.tls[0]}\ncertfile {self.tls[1]}\n"
                        f"keyfile {self.tls[2]}\n")

    def _up(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), 0.2).close()
            return True
        except OSError:
            return False

    def _launch(self):
        """Starts mosquitto; False when it exited because a port was taken."""
        self.proc = subprocess.Popen(["mosquitto", "-c", self.conf], stdout=open(self.log, "a"),
                                     stderr=subprocess.STDOUT)
        wait_for(lambda: self.proc.poll() is not None or self._up(), 10.0, 0.05)
        return not (self.proc.poll() is not None and "in use" in open(self.log).read())

    def _check_up(self):
        if self.proc.poll() is not None or not wait_for(self._up, 10.0, 0.05):
            fail(f"mosquitto does not listen on {self.port}; its log: {open(self.log).read().strip()[-600:]!r}")
        check(True, "mosquitto listens")

    def start(self):
        self._launch()
        self._check_up()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


SUBS = []


class Sub:
    """mosquitto_sub on '#' at QoS 2: every message as (retained, topic, payload bytes);
    the QoS each came with in qos_of."""

    def __init__(self, port, args=()):
        self.msgs = []
        self.qos_of = {}
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), *args, "-t", "#", "-q", "2",
                                      "-v", "-F", "%r\t%q\t%t\t%x"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        SUBS.append(self)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            with self.lock:
                self.msgs.append((parts[0] == "1", parts[2], bytes.fromhex(parts[3])))
                self.qos_of[parts[2]] = int(parts[1])

    def all(self, topic):
        with self.lock:
            return [m for m in self.msgs if m[1] == topic]

    def last(self, topic):
        got = self.all(topic)
        return got[-1][2] if got else None

    def wait(self, topic, payload=None, timeout=15.0, retained=None):
        def ok():
            for r, t, p in self.all(topic):
                if (payload is None or p == payload) and (retained is None or r == retained):
                    return True
            return False
        return wait_for(ok, timeout, 0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def metric(kp, name):
    st, h, body = kp.http("GET", "/metrics", None, E.auth(kp.token("admin")) if not hasattr(kp, "_tok") else E.auth(kp._tok))
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def fragments(kp):
    c = cameras(kp)
    return sum(s.get("recording", {}).get("fragments", 0) for s in c[E.CAMERA]["streams"]) if c else 0


def test(make):
    if not shutil.which("mosquitto") or not shutil.which("mosquitto_sub"):
        check(False, "mosquitto and mosquitto_sub installed (scripts/install-deps)")
    work = tempfile.mkdtemp(prefix="kp-mqtt-")
    broker = Broker(work)
    cam = TestCamera(work, E.CAMERA, "h264", "baichuan", "aes", extra=("--motion-interval", "6"))
    sub = Sub(broker.port)
    try:
        base = CONFIG + (f"[mqtt]\nhost = localhost\nport = {broker.port}\nclient_id = kp-test\n"
                         f"topic_prefix = kp/nvr\nactive_secs = 2\nqos = {QOS}\n")
        camera = f'[camera "{E.CAMERA}"]\nurl = {cam.url()}\n'
        kp = make(config=base + camera)
        kp.wait_running()
        wait_streaming(kp, E.CAMERA, timeout=15.0)
        tok = kp.token("admin")
        kp._tok = tok
        P = "kp/nvr"

        # Availability, stream state, discovery.
        check(sub.wait(f"{P}/available", b"online"), f"{P}/available online")
        check(sub.wait(f"{P}/{E.CAMERA}/main/state", b"streaming"), "main stream state streaming")
        check(sub.wait(f"{P}/{E.CAMERA}/sub/state", b"streaming"), "sub stream state streaming")
        disc = {
            "binary_sensor": f"homeassistant/binary_sensor/kp-test/{E.CAMERA}_motion/config",
            "camera": f"homeassistant/camera/kp-test/{E.CAMERA}_snapshot/config",
            "main": f"homeassistant/sensor/kp-test/{E.CAMERA}_main_state/config",
            "sub": f"homeassistant/sensor/kp-test/{E.CAMERA}_sub_state/config",
        }
        for k, t in disc.items():
            check(sub.wait(t), f"discovery document {t}")
        late = Sub(broker.port)  # what the broker retained
        for t in [f"{P}/available", f"{P}/{E.CAMERA}/main/state", f"{P}/{E.CAMERA}/motion"] + list(disc.values()):
            check(late.wait(t, retained=True, timeout=5.0), f"{t} retained")
        late.stop()
        docs = {k: json.loads(sub.last(t)) for k, t in disc.items()}
        check(docs["binary_sensor"]["state_topic"] == f"{P}/{E.CAMERA}/motion"
              and docs["binary_sensor"]["device_class"] == "motion"
              and docs["binary_sensor"]["payload_on"] == "ON", f"motion sensor document: {docs['binary_sensor']}")
        check(docs["camera"]["topic"] == f"{P}/{E.CAMERA}/snapshot", f"camera document: {docs['camera']}")
        check(docs["main"]["state_topic"] == f"{P}/{E.CAMERA}/main/state", f"stream document: {docs['main']}")
        check(all(d["availability_topic"] == f"{P}/available" and d["device"]["identifiers"] == [f"kp-test_{E.CAMERA}"]
                  for d in docs.values()), "documents share the device and the availability topic")
        check(len({d["unique_id"] for d in docs.values()}) == len(docs), "unique ids differ")

        # An event over HTTP.
        jpeg = E.snapshot_jpeg()
        now = int(time.time() * 1000)
        ev = E.event("mq-1", 1, start_ms=now - 500, end_ms=now, labels=[("person", 0.9)])
        st, h, b = E.publish_json(kp, tok, ev, jpeg)
        check(st == 200, f"event published ({st} {b[:200]!r})")
        check(sub.wait(f"{P}/events", timeout=10.0), "the event on PREFIX/events")
        got = json.loads(sub.all(f"{P}/events")[0][2])
        st, api = E.get_json(kp, tok, "/api/v1/events/mq-1")
        check(st == 200 and got == api, f"PREFIX/events carries the API's JSON:\n{got}\n{api}")
        check(sub.qos_of[f"{P}/events"] == QOS, f"published at QoS {QOS} ({sub.qos_of[f'{P}/events']})")
        check(sub.wait(f"{P}/{E.CAMERA}/snapshot", jpeg), "the snapshot topic carries the event's JPEG byte-identical")
        check(sub.wait(f"{P}/{E.CAMERA}/person", b"1"), "person count 1 while active")
        check(sub.wait(f"homeassistant/sensor/kp-test/{E.CAMERA}_person/config"), "a sensor document for person")
        check(sub.wait(f"{P}/{E.CAMERA}/person", b"0", timeout=8.0), "person count back to 0 after active_secs")

        # Motion from the camera's alarms.
        check(sub.wait(f"{P}/{E.CAMERA}/motion", b"ON", timeout=15.0), "motion ON from the camera's alarm")
        on_at = max(i for i, m in enumerate(sub.msgs) if m[1] == f"{P}/{E.CAMERA}/motion" and m[2] == b"ON")
        check(wait_for(lambda: any(m[1] == f"{P}/{E.CAMERA}/motion" and m[2] == b"OFF" for m in sub.msgs[on_at:]),
                       8.0, 0.05), "motion OFF after active_secs")

        # The broker goes away; events meanwhile fill the queue past its bound.
        frag0 = fragments(kp)
        dropped0 = metric(kp, "keeppeek_webd_mqtt_dropped_total")
        published0 = metric(kp, "keeppeek_webd_mqtt_published_total")
        sub.stop()
        failures0 = metric(kp, "keeppeek_webd_mqtt_connect_failures_total")
        broker.kill()
        killed = time.monotonic()
        check(wait_for(lambda: metric(kp, "keeppeek_webd_mqtt_connected") == 0, 10.0, 0.1), "connected goes to 0")
        extra = 8
        statuses = [E.publish_json(kp, tok, E.event(f"away-{i}", 1, labels=[("car", 0.5)]))[0]
                    for i in range(QUEUE + extra)]
        check(set(statuses) == {200}, f"publishing while the broker is away answers 200 ({set(statuses)})")
        check(metric(kp, "keeppeek_webd_mqtt_dropped_total") - dropped0 >= extra,
              f"oldest events dropped and counted: {metric(kp, 'keeppeek_webd_mqtt_dropped_total')}")
        check(metric(kp, "keeppeek_webd_mqtt_queue_depth") >= QUEUE, "queue depth at its bound")
        # Tries after 1, 2, 4, 8 s: within the first 7.5 s, three (not one a second).
        time.sleep(max(0.0, 7.5 - (time.monotonic() - killed)))
        tries = metric(kp, "keeppeek_webd_mqtt_connect_failures_total") - failures0
        check(2 <= tries <= 4, f"reconnection backs off: {tries:.0f} failed tries in 7.5 s")

        # Back: reconnect, retained state restored, newest events delivered.
        broker.start()
        sub2 = Sub(broker.port)
        check(wait_for(lambda: metric(kp, "keeppeek_webd_mqtt_connected") == 1, 40.0, 0.2), "reconnected")
        for t in [f"{P}/available", f"{P}/{E.CAMERA}/main/state", f"{P}/{E.CAMERA}/motion",
                  f"{P}/{E.CAMERA}/snapshot", f"{P}/{E.CAMERA}/person"] + list(disc.values()):
            check(sub2.wait(t, timeout=10.0), f"{t} published again after the broker's restart")
        check(sub2.last(f"{P}/{E.CAMERA}/snapshot") == jpeg, "snapshot restored byte-identical")
        check(sub2.last(f"{P}/available") == b"online", "available online again")
        last = f"away-{QUEUE + extra - 1}"
        check(wait_for(lambda: any(json.loads(p)["id"] == last for r, t, p in sub2.all(f"{P}/events")), 15.0, 0.1),
              "the newest queued event delivered")
        ids = [json.loads(p)["id"] for r, t, p in sub2.all(f"{P}/events")]
        # The camera's alarms meanwhile queue too (and push more of the oldest out).
        away = [i for i in ids if i.startswith("away-")]
        first = int(away[0].split("-")[1]) if away else -1
        check(first >= extra and away == [f"away-{i}" for i in range(first, QUEUE + extra)],
              f"the oldest dropped, the newest delivered in order, none missing between ({away[:3]}...)")
        check(metric(kp, "keeppeek_webd_mqtt_dropped_total") - dropped0 >= first,
              f"every event not delivered was counted as dropped ({first} of the away events)")
        check(wait_for(lambda: metric(kp, "keeppeek_webd_mqtt_queue_depth") == 0
                       and metric(kp, "keeppeek_webd_mqtt_inflight") == 0, 10.0, 0.1),
              "queue empty and nothing left in flight")
        check(metric(kp, "keeppeek_webd_mqtt_published_total") >= published0 + QUEUE, "published counter moves")
        check(metric(kp, "keeppeek_webd_mqtt_connects_total") >= 2, "two connections counted")
        check(wait_for(lambda: fragments(kp) > frag0 + 2, 15.0, 0.2), "recording went on throughout")

        # The sub stream no longer used: its state topic and sensor cleared, main's kept.
        with open(kp.config_path, "w") as f:
            f.write((base + camera + "streams = main\n").format(dir=kp.dir, port=kp.port)
                    + "\n[rtc]\naddresses = 127.0.0.1\n")
        rc, out, err = kp.ctl("reload")
        check(rc == 0, f"reload with streams = main ({out} {err})")
        for t in (disc["sub"], f"{P}/{E.CAMERA}/sub/state"):
            check(sub2.wait(t, b"", timeout=10.0), f"{t} cleared")
        check(sub2.last(disc["main"]) != b"" and sub2.last(f"{P}/{E.CAMERA}/main/state") != b"",
              "the main stream's topics stay")

        # The camera removed: discovery documents and state topics cleared.
        with open(kp.config_path, "w") as f:
            f.write(base.format(dir=kp.dir, port=kp.port) + "\n[rtc]\naddresses = 127.0.0.1\n")
        rc, out, err = kp.ctl("reload")
        check(rc == 0, f"reload ({out} {err})")
        for t in list(disc.values()) + [f"homeassistant/sensor/kp-test/{E.CAMERA}_person/config",
                                        f"{P}/{E.CAMERA}/snapshot", f"{P}/{E.CAMERA}/motion"]:
            check(sub2.wait(t, b"", timeout=10.0), f"{t} cleared with an empty retained payload")
        sub2.stop()
        # A subscriber now gets none of the camera's retained topics.
        sub3 = Sub(broker.port)
        time.sleep(1.5)
        left = [t for r, t, p in sub3.msgs if E.CAMERA in t]
        check(not left, f"nothing of the removed camera is retained: {left}")
        check(sub3.last(f"{P}/available") == b"online", "still online")
        sub3.stop()
    finally:
        for s in SUBS:
            s.stop()
        broker.kill()
        cam.kill()


if __name__ == "__main__":
    run(test)
