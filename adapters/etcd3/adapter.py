"""Lock-client adapter (docs/protocol.md) for python-etcd3's etcd3.Lock, as
Debian ships it (python3-etcd3 0.12.0), against etcd. One client per adapter,
made as a user makes it: etcd3.client(host, port, timeout=...) on the first
node init gives (the library dials one endpoint: it has no failover). Each
acquire makes a Lock(name, ttl) as a user makes one per critical section, and
keeps it by the harness's token for release.

The lock: a transaction puts /locks/<name> if it does not exist, attached to
a lease of ttl seconds (whole seconds: the TTL rounded up) granted just
before; release deletes the key if it still holds the Lock's uuid. The
library keeps nothing alive: the lease ends ttl seconds after its grant
unless the caller calls refresh() (renew here). The validity is the TTL the
server granted (etcd raises a TTL below its minimum), counted from the start
of the attempt that was granted (a waiting acquire adds the time it polled);
the harness anchors it at the instant before the acquire was sent, earlier
still. The
library does not save the key's create revision (its own TODO), so it has no
fencing token.

Waiting: a contended Lock.acquire(timeout>0) crashes in the library with
the tenacity Debian ships (8.x): its retry callback has tenacity's old
signature (TypeError: wait() missing 1 required positional argument:
'delay_since_first_attempt'). acquire(timeout=0) never reaches the callback,
so the adapter waits by polling acquire(timeout=0) every 25ms until wait_ms
has passed. With LOCKHARNESS_ETCD3_LIBRARY_WAIT=1 in its environment the
adapter calls acquire(timeout=wait) as the library ships it instead, and
the crash is answered "unknown" with the library's error (the lease of the
failed attempt was granted; what else happened is not known).

renew is Lock.refresh(): one keep-alive. On a lease that has already
expired it does not raise: the server answers TTL 0, and the adapter reads
that as "not held"."""
import json
import math
import os
import sys
import time

import etcd3

ABOUT = {"name": "python-etcd3", "language": "python", "library": "python-etcd3",
         "version": etcd3.__version__, "system": "etcd", "protocol": 1,
         "renew": True, "fenced": False}

POLL = 0.025  # seconds between acquire(timeout=0) attempts while waiting


def log(msg):
    print(f"{time.time():.3f} {msg}", file=sys.stderr, flush=True)


class Adapter:
    def __init__(self):
        self.client = None
        self.ttl = 1
        self.prefix = ""
        self.holds = {}  # token -> Lock
        self.library_wait = os.environ.get("LOCKHARNESS_ETCD3_LIBRARY_WAIT") == "1"

    def init(self, m):
        host, port = m["nodes"][0]["addr"].rsplit(":", 1)
        p = m["lock"]
        self.ttl = max(1, math.ceil(p["ttl_ms"] / 1000))
        self.prefix = p.get("key_prefix", "")
        self.client = etcd3.client(host=host, port=int(port), timeout=p["timeout_ms"] / 1000)
        return {"status": "ok", "adapter": ABOUT}

    def take(self, lk, wait, received):
        """Takes the lock, waiting up to wait seconds; returns the instant
        (monotonic) before the attempt that was granted, whose lease was
        granted after it, or None."""
        if self.library_wait and wait > 0:
            return received if lk.acquire(timeout=wait) else None
        deadline = received + wait
        while True:
            attempt = time.monotonic()
            if lk.acquire(timeout=0):
                return attempt
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(POLL, left))

    def acquire(self, m):
        lk = self.client.lock(self.prefix + m["key"], ttl=self.ttl)
        token = m["token"]
        self.holds[token] = lk  # an unknown outcome may be released
        received = time.monotonic()
        attempt = self.take(lk, m.get("wait_ms", 0) / 1000, received)
        if attempt is None:
            del self.holds[token]
            return {"status": "fail", "reason": "not acquired: held by another client"}
        # The lease was granted after the attempt began: its TTL counts from
        # there, which is (attempt - received) after the request came.
        ms = lk.lease.ttl * 1000 + int((attempt - received) * 1000)
        return {"status": "ok", "lease": {"token": token, "validity_ms": ms}}

    def release(self, m):
        lk = self.holds.pop(m["token"], None)
        if lk is None:
            return {"status": "fail", "reason": "not held: no lock of this adapter has this token"}
        if not lk.release():
            return {"status": "fail", "reason": "not held: the key no longer holds this Lock's uuid"}
        return {"status": "ok"}

    def renew(self, m):
        lk = self.holds.get(m["token"])
        if lk is None or lk.lease is None:
            return {"status": "fail", "reason": "not held: no acquired lock with this token"}
        answers = lk.refresh()
        ttl = answers[0].TTL if answers else 0
        if ttl <= 0:
            log(f"refresh of lease {lk.lease.id:#x} ({m['key']}): TTL {ttl}, the lease has expired (refresh() did not raise)")
            return {"status": "fail", "reason": "not held: refresh() answered TTL 0, the lease has expired"}
        return {"status": "ok", "lease": {"token": m["token"], "validity_ms": ttl * 1000}}

    def handle(self, m):
        op = m.get("op")
        if op == "hello":
            return {"status": "ok", "adapter": ABOUT}
        if op == "close":
            if self.client is not None:
                self.client.close()
            return {"status": "ok"}
        if op in ("init", "acquire", "release", "renew"):
            return getattr(self, op)(m)
        return {"status": "unknown", "reason": f"unsupported op {op!r}"}


def main():
    adapter = Adapter()
    for line in sys.stdin:
        m = json.loads(line)
        try:
            answer = adapter.handle(m)
        except Exception as e:  # timeouts, unavailable, the library's own crash: unknown
            log(f"{m.get('op')} {m.get('key', '')}: {type(e).__name__}: {e}")
            answer = {"status": "unknown", "reason": f"{type(e).__name__}: {e}"}
        answer["id"] = m["id"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        if m.get("op") == "close":
            return


if __name__ == "__main__":
    main()
