"""Camera alarms of every kind a Reolink camera reports become events with their labels
(issue 13, item 7): a doorbell's press (status "visitor", AItype "none") is a "visitor"
event labelled visitor, and an AI camera's detection with status "none" (AItype
"dog_cat,vehicle") is a "motion" event labelled dog_cat and vehicle. The shapes are
BAICHUAN.md section 4's (neolink issue 129, reolink_aio's msg 33 parser); the test
camera sends them with --alarm."""
import json
import tempfile

from kp import TestCamera, cameras, check, run, wait_for

CONFIG = """[keeppeek]
data_dir = {dir}/data
run_dir = {dir}/run
[web]
listen = 127.0.0.1:{port}
"""


def events(kp, camera):
    rc, out, _ = kp.ctl("events", "search", "--json", "--camera", camera)
    return json.loads(out)["events"] if rc == 0 else []


def test(make):
    work = tempfile.mkdtemp(prefix="kp-alarms-")
    bell = TestCamera(work, "bell", "h264", "baichuan", "aes",
                      extra=("--motion-interval", "2", "--alarm", "visitor/none"))
    yard = TestCamera(work, "yard", "h264", "baichuan", "aes",
                      extra=("--motion-interval", "2", "--alarm", "none/dog_cat,vehicle"))
    try:
        kp = make(config=CONFIG + f'[camera "bell"]\nurl = {bell.url()}\nstreams = main\n'
                  f'[camera "yard"]\nurl = {yard.url()}\nstreams = main\n')
        kp.wait_running()
        check(wait_for(lambda: (c := cameras(kp)) and all(c[n]["streams"][0]["state"] == "streaming"
                                                         for n in ("bell", "yard")), 10.0, 0.1),
              "both cameras stream")
        got = wait_for(lambda: (b := events(kp, "bell")) and (y := events(kp, "yard")) and (b, y), 20.0, 0.3)
        check(got, f"both cameras' alarms are events (bell {events(kp, 'bell')}, yard {events(kp, 'yard')})")
        b, y = got
        labels = lambda e: sorted(l["name"] for l in e["labels"])  # noqa: E731
        check(all(e["id"].startswith("bell.visitor.") and labels(e) == ["visitor"] for e in b),
              f"a doorbell press is a visitor event labelled visitor: {[(e['id'], labels(e)) for e in b]}")
        check(all(e["id"].startswith("yard.motion.") and labels(e) == ["dog_cat", "vehicle"] for e in y),
              f"an AI detection with status none is a motion event with its types: "
              f"{[(e['id'], labels(e)) for e in y]}")
    finally:
        bell.kill()
        yard.kill()


if __name__ == "__main__":
    run(test)
