"""Lock-client adapter (docs/protocol.md) for redis-py's redis.lock.Lock, as
Debian ships it (python3-redis). One Lock object per key, made as a user
makes it: client.lock(key, timeout=ttl). acquire passes the harness's
proposed token (Lock.acquire(token=...)); release and renew set the lease's
token on the Lock first, so a release after an acquire whose answer was lost
names the token that acquire used. renew is Lock.extend(ttl, replace_ttl=True).
The library measures no validity of its own: a grant promises the lock's
timeout from the SET that was granted, so validity_ms is the TTL plus the time
from the request's arrival to that SET (the library's own wait loop, timed)."""
import gc
import json
import os
import sys
import time
from json.encoder import encode_basestring_ascii as json_string

import redis
from redis.exceptions import LockNotOwnedError

ABOUT = {"name": "redis-py", "language": "python", "library": "redis-py",
         "version": redis.__version__, "system": "redis", "protocol": 1,
         "renew": True, "fenced": False}


class Adapter:
    def __init__(self):
        self.client = None
        self.ttl_ms = 1000
        self.prefix = ""
        self.locks = {}

    def init(self, m):
        host, port = m["nodes"][0]["addr"].rsplit(":", 1)
        p = m["lock"]
        self.ttl_ms, self.prefix = p["ttl_ms"], p.get("key_prefix", "")
        t = p["timeout_ms"] / 1000
        self.client = redis.Redis(host=host, port=int(port), socket_timeout=t,
                                  socket_connect_timeout=t)
        return {"status": "ok", "adapter": ABOUT}

    def lock(self, key):
        lk = self.locks.get(key)
        if lk is None:
            # sleep: how often a blocking acquire polls (the library's default is 0.1s).
            lk = self.client.lock(self.prefix + key, timeout=self.ttl_ms / 1000, sleep=0.01)
            self.watch_attempts(lk)
            self.locks[key] = lk
        return lk

    @staticmethod
    def watch_attempts(lk):
        """Notes when the library's own acquire loop sends each SET NX PX, so a
        grant after a wait can say when its lease began (the loop stays the
        library's: only the instant before each try is recorded)."""
        do_acquire = lk.do_acquire

        def timed(token):
            lk.attempt_at = time.monotonic()
            return do_acquire(token)
        lk.do_acquire = timed

    def lease(self, token, since=0.0):
        """The lease as the library promises it: the key lives its timeout from
        the SET that was granted, which came `since` seconds after the request
        was received (validity counts from the request: docs/protocol.md)."""
        if isinstance(token, bytes):
            token = token.decode()
        return {"token": token, "validity_ms": self.ttl_ms + int(since * 1000)}

    def acquire(self, m):
        lk = self.lock(m["key"])
        wait = m.get("wait_ms", 0) / 1000
        received = lk.attempt_at = time.monotonic()
        ok = lk.acquire(blocking=wait > 0, blocking_timeout=wait if wait > 0 else None,
                        token=m["token"])
        if not ok:
            return {"status": "fail", "reason": "not acquired: held by another client"}
        return {"status": "ok", "lease": self.lease(lk.local.token, lk.attempt_at - received)}

    def release(self, m):
        lk = self.lock(m["key"])
        lk.local.token = m["token"].encode()
        try:
            lk.release()
        except LockNotOwnedError as e:
            return {"status": "fail", "reason": f"not held: {e}"}
        return {"status": "ok"}

    def renew(self, m):
        lk = self.lock(m["key"])
        lk.local.token = m["token"].encode()
        try:
            lk.extend(self.ttl_ms / 1000, replace_ttl=True)
        except LockNotOwnedError as e:
            return {"status": "fail", "reason": f"not held: {e}"}
        return {"status": "ok", "lease": self.lease(m["token"])}

    def handle(self, m):
        op = m.get("op")
        if op == "hello":
            return {"status": "ok", "adapter": ABOUT}
        if op == "close":
            return {"status": "ok"}
        if op in ("init", "acquire", "release", "renew"):
            return getattr(self, op)(m)
        return {"status": "unknown", "reason": f"unsupported op {op!r}"}


def encode(answer):
    """The answer's line. The two answers of every cycle, an ok release and an
    ok grant, are formatted here (what json.dumps makes of them, in a third of
    its time); the others go through json.dumps."""
    if answer.get("status") == "ok" and type(answer["id"]) is int:
        if len(answer) == 2:
            return b'{"status": "ok", "id": %d}\n' % answer["id"]
        lease = answer.get("lease")
        if len(answer) == 3 and type(lease) is dict and len(lease) == 2 \
                and type(lease.get("token")) is str and type(lease.get("validity_ms")) is int:
            return b'{"status": "ok", "lease": {"token": %s, "validity_ms": %d}, "id": %d}\n' % (
                json_string(lease["token"]).encode(), lease["validity_ms"], answer["id"])
    return json.dumps(answer).encode() + b"\n"


def write_line(answer):
    """Writes one answer: one write(2) of the whole line, no buffer layer."""
    data = encode(answer)
    while data:
        data = data[os.write(1, data):]


def main():
    adapter = Adapter()
    for line in sys.stdin.buffer:
        # decode first: json.loads of bytes guesses their encoding in Python code
        m = json.loads(line.decode())
        try:
            answer = adapter.handle(m)
        except Exception as e:  # timeouts, resets, error replies: unknown
            print(f"{time.time():.3f} {m.get('op')} {m.get('key', '')}: {type(e).__name__}: {e}",
                  file=sys.stderr, flush=True)
            answer = {"status": "unknown", "reason": f"{type(e).__name__}: {e}"}
        answer["id"] = m["id"]
        write_line(answer)
        if m.get("op") == "close":
            return
        if m.get("op") == "init":
            # What is alive after init (the library, its connection) lives as
            # long as the process: out of the collector's sight, its full
            # collections do not walk it again and again.
            gc.freeze()


if __name__ == "__main__":
    main()
