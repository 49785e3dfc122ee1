"""A minimal lock-client adapter (docs/protocol.md): SET NX PX to acquire,
compare-and-delete to release, compare-and-PEXPIRE to renew, over redis-py's
plain commands. One JSON request per line on stdin, one answer per line on
stdout; the log goes to stderr."""
import json
import sys
import time

import redis

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
ABOUT = {"name": "minimal", "language": "python", "library": "redis-py (SET NX PX)",
         "version": redis.__version__, "system": "redis", "protocol": 1, "renew": True}
client, ttl, prefix = None, 1000, ""


def handle(m):
    global client, ttl, prefix
    op = m["op"]
    if op == "hello":
        return {"status": "ok", "adapter": ABOUT}
    if op == "init":
        host, port = m["nodes"][0]["addr"].rsplit(":", 1)
        ttl, prefix = m["lock"]["ttl_ms"], m["lock"]["key_prefix"]
        t = m["lock"]["timeout_ms"] / 1000
        client = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t)
        return {"status": "ok", "adapter": ABOUT}
    if op == "close":
        return {"status": "ok"}
    key, token = prefix + m["key"], m["token"]
    lease = {"token": token, "validity_ms": ttl}  # the key lives ttl from the SET
    if op == "acquire":
        received = attempt = time.monotonic()
        while not client.set(key, token, nx=True, px=ttl):
            if time.monotonic() >= received + m.get("wait_ms", 0) / 1000:
                return {"status": "fail", "reason": "held by another client"}
            time.sleep(0.01)
            attempt = time.monotonic()
        # validity counts from the request: the granted SET came (attempt - received) later
        lease["validity_ms"] = ttl + int((attempt - received) * 1000)
        return {"status": "ok", "lease": lease}
    if op not in ("release", "renew"):
        return {"status": "unknown", "reason": "unsupported op " + op}
    if not client.eval(RELEASE if op == "release" else RENEW, 1, key, token, ttl):
        return {"status": "fail", "reason": "not held"}
    return {"status": "ok", "lease": lease} if op == "renew" else {"status": "ok"}


for line in sys.stdin:
    request = json.loads(line)
    try:
        answer = handle(request)
    except Exception as e:  # a timeout, a reset connection: the effect is unknown
        answer = {"status": "unknown", "reason": f"{type(e).__name__}: {e}"}
    answer["id"] = request["id"]
    print(json.dumps(answer), flush=True)
    if request["op"] == "close":
        break
