"""A lock-client adapter that misbehaves on purpose, for the tests of the
harness's side of the protocol. It is a real lock (SET NX PX and
compare-and-delete on the Redis init names) until it has answered AFTER
requests (hello and init included); from then on it does what MODE says.

usage: misbehave.py MODE [AFTER]
  crash-start  exits with status 3 at once, a line on stderr
  garbage      prints a line that is not JSON instead of the answer
  twice        answers every request twice
  silent       never answers
  slow         answers each request 1.5s late
  noid         answers without an id
  nothing      answers with an id no request has
  novalidity   grants leases without validity_ms
  exit         exits with status 0 instead of answering
"""
import json
import sys
import time

import redis

MODE = sys.argv[1]
AFTER = int(sys.argv[2]) if len(sys.argv) > 2 else 0
ABOUT = {"name": "misbehave-" + MODE, "language": "python", "library": "redis-py", "version": redis.__version__,
         "system": "redis", "protocol": 1, "renew": False}
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
client, ttl = None, 1000

if MODE == "crash-start":
    print("misbehave: crashing at start, as asked", file=sys.stderr, flush=True)
    sys.exit(3)


def handle(m):
    global client, ttl
    op = m["op"]
    if op in ("hello", "close"):
        return {"status": "ok", "adapter": ABOUT}
    if op == "init":
        host, port = m["nodes"][0]["addr"].rsplit(":", 1)
        ttl = m["lock"]["ttl_ms"]
        client = redis.Redis(host=host, port=int(port), socket_timeout=1)
        return {"status": "ok", "adapter": ABOUT}
    if op == "acquire":
        if client.set(m["key"], m["token"], nx=True, px=ttl):
            return {"status": "ok", "lease": {"token": m["token"], "validity_ms": ttl}}
        return {"status": "fail", "reason": "held"}
    if op == "release":
        if client.eval(RELEASE, 1, m["key"], m["token"]):
            return {"status": "ok"}
        return {"status": "fail", "reason": "not held"}
    return {"status": "unknown", "reason": "unsupported"}


def send(a):
    sys.stdout.write(json.dumps(a) + "\n")
    sys.stdout.flush()


answered = 0
for line in sys.stdin:
    m = json.loads(line)
    a = handle(m)
    a["id"] = m["id"]
    if answered < AFTER or m["op"] == "close":
        send(a)
    elif MODE == "garbage":
        print("Traceback (most recent call last): this is not JSON", flush=True)
    elif MODE == "twice":
        send(a)
        send(a)
    elif MODE == "silent":
        pass
    elif MODE == "slow":
        time.sleep(1.5)
        send(a)
    elif MODE == "noid":
        del a["id"]
        send(a)
    elif MODE == "nothing":
        a["id"] = 999999
        send(a)
    elif MODE == "novalidity":
        if "lease" in a:
            del a["lease"]["validity_ms"]
        send(a)
    elif MODE == "exit":
        sys.exit(0)
    answered += 1
