"""Drives rocketmq-client-cpp (librocketmq.so inside PyPI's `rocketmq` 0.4.4) for the integration tests.

Prints exactly one JSON line on stdout: {"ok": bool, "sent": [...], "received": [...], "error": "..."};
the client's own chatter goes to stderr or its log directory ($HOME/logs/rocketmq-cpp).

  produce  --namesrv A --topic T --group G --count N --tags a,b --keys k [--orderly]
  consume  --namesrv A --topic T --group G --count N --expr '*' --mode push|pull [--orderly] --timeout S
"""
import argparse
import json
import sys
import threading
import time

from rocketmq.client import Message, Producer, PullConsumer, PushConsumer


def body(prefix, i):
    return "%s-%d-payload" % (prefix, i)


def produce(a):
    p = Producer(a.group)
    p.set_namesrv_addr(a.namesrv)
    p.start()
    sent = []
    tags = a.tags.split(",") if a.tags else [""]
    try:
        for i in range(a.count):
            m = Message(a.topic)
            tag = tags[i % len(tags)]
            if tag:
                m.set_tags(tag)
            m.set_keys("%s-%d" % (a.keys, i))
            m.set_property("color", "red")
            m.set_body(body(a.prefix, i))
            if a.orderly:
                # every message of one run on the same queue (arg 7 hashed over the queue count)
                r = p.send_orderly(m, 7)
            else:
                r = p.send_sync(m)
            sent.append({"i": i, "status": r.status.name, "msgId": r.msg_id, "offset": r.offset,
                         "tags": tag, "body": body(a.prefix, i)})
    finally:
        p.shutdown()
    return {"ok": all(s["status"] == "OK" for s in sent), "sent": sent}


def view(msg):
    return {"msgId": msg.id, "topic": msg.topic, "tags": (msg.tags or b"").decode(),
            "keys": (msg.keys or b"").decode(), "queueId": msg.queue_id, "queueOffset": msg.queue_offset,
            "body": msg.body.decode(), "color": (msg.get_property("color") or b"").decode(),
            "reconsumeTimes": msg.reconsume_times, "thread": threading.get_ident()}


def consume_push(a):
    got, lock, done = [], threading.Lock(), threading.Event()

    def on_message(msg):
        with lock:
            got.append(view(msg))
            if len(got) >= a.count:
                done.set()

    c = PushConsumer(a.group, orderly=a.orderly)
    c.set_namesrv_addr(a.namesrv)
    c.subscribe(a.topic, on_message, a.expr)
    c.start()
    done.wait(a.timeout)
    time.sleep(a.linger)
    c.shutdown()
    with lock:
        return {"ok": len(got) >= a.count, "received": list(got)}


def consume_pull(a):
    c = PullConsumer(a.group)
    c.set_namesrv_addr(a.namesrv)
    c.start()
    got = []
    deadline = time.time() + a.timeout
    try:
        while len(got) < a.count and time.time() < deadline:
            for msg in c.pull(a.topic, a.expr):
                got.append(view(msg))
            if len(got) < a.count:
                time.sleep(0.5)
    finally:
        c.shutdown()
    return {"ok": len(got) >= a.count, "received": got}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["produce", "consume"])
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", default="rmqd-it-cpp")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--tags", default="a,b")
    ap.add_argument("--keys", default="k")
    ap.add_argument("--prefix", default="rmqd-it-cpp")
    ap.add_argument("--orderly", action="store_true")
    ap.add_argument("--mode", choices=["push", "pull"], default="push")
    ap.add_argument("--expr", default="*")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--linger", type=float, default=0)
    a = ap.parse_args()
    try:
        if a.scenario == "produce":
            out = produce(a)
        elif a.mode == "push":
            out = consume_push(a)
        else:
            out = consume_pull(a)
    except Exception as e:  # one JSON line whatever happens
        out = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0 if out.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
