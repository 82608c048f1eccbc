"""test_mqtt.py with [mqtt] qos = 1: libmosquitto keeps unacknowledged messages across a
reconnection; webd's queue, drops and restored state must come out the same."""
import test_mqtt
from kp import run

if __name__ == "__main__":
    test_mqtt.QOS = 1
    run(test_mqtt.test)
