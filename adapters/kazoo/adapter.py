"""Lock-client adapter (docs/protocol.md) for kazoo's kazoo.recipe.lock.Lock,
as Debian ships it (python3-kazoo), against ZooKeeper. One KazooClient per
adapter (one client process, one session, the hosts init gives, which are
the client's own links), made as a user makes it: KazooClient(hosts,
timeout=ttl). Each acquire makes a Lock(path, identifier=token), as a user
makes one per critical section, and keeps it by token for release.

What kazoo promises, and so the validity: the lock is an ephemeral
sequential node, held as long as the session lives. kazoo itself promises
nothing in time: Lock.is_acquired stays True after the session is lost, and
the recipe tells its user of a loss only through connection-state listeners
(SUSPENDED when the connection drops, LOST when the server says the session
expired, which the client hears only once it reconnects). The server expires
a session it has not heard from for the negotiated session timeout. A
grant that did not wait made its node after the request was received, so the
session cannot expire before then + the negotiated timeout: that is the
validity (the harness anchors it at sent, earlier still). A grant that waited
is confirmed through the server once granted, as renew does, and its
validity counts from the request to that confirmation. It is a lower bound only up to
how a follower relays session touches to the leader (every tickTime/2), so
a request sent right after a pause of nearly the timeout may confirm a
session that ends a little sooner; with the harness's ensembles (tickTime
200ms) that is 100ms. The negotiated timeout is read from kazoo's own log
of the handshake; until a handshake is seen, the timeout asked for.

renew is not kazoo's (the recipe has none): it is what a careful user does,
confirming the lock through the server: if a listener saw the session LOST,
or the session id changed, since the grant, "not held"; else a sync (through
the leader) and then the node's existence, which would be gone with the
session (the same transaction); validity as for a grant.

release is Lock.release(), then the session check renew makes: kazoo answers
True even when the node was already gone with an expired session (it swallows
NoNodeError), so a release after the session was lost answers "not held"
(the lock was not held: the server had deleted the node), with kazoo's own
answer in the reason. Said "ok", it would read as a release that removed
whoever held the lock then, which kazoo's delete of its own node never does. Every state change the listener sees is logged to
stderr with its time: what the library tells its user, and when."""
import json
import logging
import sys
import time

import kazoo.version
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout
from kazoo.protocol.connection import BLATHER

VERSION = kazoo.version.__version__
ABOUT = {"name": "kazoo", "language": "python", "library": "kazoo",
         "version": VERSION, "system": "zookeeper", "protocol": 1,
         "renew": True, "fenced": False}

ROOT = "/lockharness/kazoo/"


def log(msg):
    print(f"{time.time():.3f} {msg}", file=sys.stderr, flush=True)


class Negotiated(logging.Handler):
    """Reads the negotiated session timeout (ms) from kazoo's handshake log."""

    def __init__(self):
        super().__init__(BLATHER)
        self.ms = None

    def emit(self, record):
        if str(record.msg).startswith("Session created") and len(record.args or ()) >= 3:
            self.ms = int(record.args[2])
            log(f"session created, negotiated timeout {self.ms}ms")


class Adapter:
    def __init__(self):
        self.client = None
        self.asked_ms = 1000
        self.prefix = ""
        self.holds = {}  # token -> (Lock, session id at grant, losses at grant)
        self.losses = 0  # LOST states seen
        self.paths = set()  # every lock path this client contended for
        self.negotiated = Negotiated()

    def listener(self, state):
        if state == KazooState.LOST:
            self.losses += 1
        sid = self.client.client_id[0] if self.client and self.client.client_id else 0
        log(f"connection state {state} (session {sid:#x})")

    def init(self, m):
        p = m["lock"]
        self.asked_ms, self.prefix = max(p["ttl_ms"], 1), p.get("key_prefix", "")
        hosts = ",".join(n["addr"] for n in m["nodes"])
        clog = logging.getLogger("kazoo.protocol.connection")
        clog.setLevel(BLATHER)
        clog.addHandler(self.negotiated)
        self.client = KazooClient(hosts=hosts, timeout=self.asked_ms / 1000)
        self.client.add_listener(self.listener)
        self.client.start(timeout=15)
        return {"status": "ok", "adapter": ABOUT}

    def validity(self):
        return self.negotiated.ms or self.asked_ms

    def session(self):
        return self.client.client_id[0] if self.client.client_id else None

    def acquire(self, m):
        path = ROOT + self.prefix + m["key"]
        lk = self.client.Lock(path, identifier=m["token"])
        self.paths.add(path)
        wait = m.get("wait_ms", 0) / 1000
        received = time.monotonic()
        try:
            ok = lk.acquire(blocking=wait > 0, timeout=wait if wait > 0 else None)
        except LockTimeout as e:
            return {"status": "fail", "reason": f"not acquired: LockTimeout: {e}"}
        if not ok:
            return {"status": "fail", "reason": "not acquired: held by another client"}
        self.holds[m["token"]] = (lk, self.session(), self.losses)
        log(f"acquired {path} node {lk.node} session {self.session():#x}")
        return self.confirm(m["token"], lk, received, waited=wait > 0)

    def confirm(self, token, lk, received, waited):
        """The lease of a grant or renewal: validity counted from when the
        request was received (the harness anchors it earlier still, at
        sent). A grant that did not wait created its node after that; one
        that waited (its node made long before the grant) and a renewal are
        confirmed now: a sync through the leader, then the node's existence
        (gone with the session, in the same transaction), and the validity
        grows by the time from the request to that confirmation."""
        at = received
        if waited:
            at = time.monotonic()
            self.client.sync(lk.path)
            if self.client.exists(lk.path + "/" + lk.node) is None:
                return {"status": "fail", "reason": f"not held: the lock node {lk.node} is gone"}
        ms = self.validity() + int((at - received) * 1000)
        return {"status": "ok", "lease": {"token": token, "validity_ms": ms}}

    def release(self, m):
        hold = self.holds.pop(m["token"], None)
        if hold is None:
            return {"status": "fail", "reason": "not held: no lock of this adapter has this token"}
        lk, sid, losses = hold
        if not lk.release():
            return {"status": "fail", "reason": "not held: Lock.release() returned False (is_acquired was False)"}
        # Asked after release() returned: its delete was answered by a
        # server, on the grant's session (which then still lived, and so did
        # the node) or on a new one, which kazoo makes only after it has
        # counted the old one LOST and changed client_id.
        if self.losses != losses or self.session() != sid:
            log(f"release {lk.node}: the session {sid:#x} was lost since the grant; Lock.release() returned True")
            return {"status": "fail", "reason": "not held: the session that held the lock expired before the release (kazoo's Lock.release() returned True: it swallows NoNodeError)"}
        return {"status": "ok"}

    def renew(self, m):
        hold = self.holds.get(m["token"])
        if hold is None or not hold[0].is_acquired:
            return {"status": "fail", "reason": "not held: no acquired lock with this token"}
        lk, sid, losses = hold
        received = time.monotonic()
        if self.losses != losses or self.session() != sid:
            return {"status": "fail", "reason": "not held: the session was lost since the grant (kazoo's Lock.is_acquired still says True)"}
        return self.confirm(m["token"], lk, received, waited=True)

    def log_nodes(self):
        """Logs the nodes under every lock path this client used, with their
        owners' sessions: a node of this session that no hold of the adapter
        names is a contender the library left behind (what kazoo#760
        describes), which blocks every other client while the session lives."""
        held = {lk.node for lk, _, _ in self.holds.values()}
        me = self.session()
        if not self.client.connected:
            log("close: not connected, the lock nodes are not listed")
            return
        for path in sorted(self.paths):  # bounded: close has 2s before the harness kills
            try:
                for child in sorted(self.client.get_children_async(path).get(timeout=0.3)):
                    data, stat = self.client.get_async(path + "/" + child).get(timeout=0.3)
                    whose = ""
                    if stat.ephemeralOwner == me:
                        whose = " (this client's, held)" if child in held else " (this client's, held by none of its holds)"
                    log(f"close: {path}/{child} session {stat.ephemeralOwner:#x}{whose} identifier {data.decode(errors='replace')}")
            except Exception as e:  # a diagnostic only: the close goes on
                log(f"close: listing {path}: {type(e).__name__}: {e}")

    def close(self):
        if self.client is not None:
            self.log_nodes()
            self.client.stop()
            self.client.close()

    def handle(self, m):
        op = m.get("op")
        if op == "hello":
            return {"status": "ok", "adapter": ABOUT}
        if op == "close":
            self.close()
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
        except Exception as e:  # connection loss, session expiry, timeouts: unknown
            log(f"{m.get('op')} {m.get('key', '')}: {type(e).__name__}: {e}")
            answer = {"status": "unknown", "reason": f"{type(e).__name__}: {e}"}
        answer["id"] = m["id"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        if m.get("op") == "close":
            return


if __name__ == "__main__":
    main()
