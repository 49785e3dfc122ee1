// Lock-client adapter (docs/protocol.md) for Apache Curator's InterProcessMutex,
// as Debian ships it (libcurator-recipes-java 5.4.0), against ZooKeeper, on
// Java 17. One CuratorFramework per adapter (one client process, one session,
// the hosts init gives: the client's own links), made as a user makes it:
// sessionTimeoutMs = the TTL. Each acquire makes an InterProcessMutex on the
// key's path, as a user makes one per critical section, and keeps it by the
// harness's token. Requests are handled one at a time on the main thread,
// which is the thread that owns every lock (Curator's mutex is owned by a
// thread: release from another thread throws).
//
// What Curator promises, and so the validity: the lock is an ephemeral
// sequential node ("_c_<guid>-lock-", protection mode), held as long as the
// session lives. The mutex itself says nothing when the session goes: the
// user learns it from ConnectionStateListener (SUSPENDED when the connection
// drops; LOST when the session expired, or, Curator 5, when SUSPENDED has
// lasted a session timeout: Curator then expires the session itself). The
// server expires a session it has not heard from for the negotiated timeout;
// a grant that did not wait made its node after the request was received,
// so the validity is the negotiated timeout (ZooKeeper.getSessionTimeout)
// from then (the harness anchors it at sent, earlier still); a grant that
// waited is confirmed through the server once granted, as renew does, and
// its validity counts from the request to that confirmation. As for kazoo, it is a
// lower bound up to the leader's tickTime/2 relay of a follower's touches.
//
// renew is not Curator's (the mutex has none): it is what a careful user does:
// "not held" if a listener saw LOST, or the session changed, since the grant;
// else a sync (through the leader) and the lock node's existence; validity as
// for a grant. release is InterProcessMutex.release(), then renew's session
// check: Curator deletes the node (guaranteed delete) and says nothing if it
// was already gone with the session, so a release after the session changed
// answers "not held" (the server had deleted the node: said "ok", it would
// read as a release that removed the next holder's lock, which Curator's
// delete of its own node never does); IllegalMonitorStateException ("You do
// not own the lock") is "not held". Every connection state change is logged to stderr with its time.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

public class Adapter {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String ROOT = "/lockharness/curator/";

    /** The mutex, with its lock node's path (getLockPath is protected). */
    static class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework c, String path) { super(c, path); }
        String node() { return getLockPath(); }
    }

    /** One grant: its mutex, and the session and losses seen at the grant. */
    record Hold(Mutex mutex, long session, int losses) {}

    CuratorFramework client;
    int askedMs = 1000;
    String prefix = "";
    final Map<String, Hold> holds = new HashMap<>();
    final AtomicInteger losses = new AtomicInteger();

    static void log(String msg) {
        System.err.printf("%.3f %s%n", System.currentTimeMillis() / 1000.0, msg);
    }

    static String version() {
        try (InputStream in = InterProcessMutex.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    static ObjectNode about() {
        ObjectNode a = JSON.createObjectNode();
        a.put("name", "curator").put("language", "java").put("library", "curator")
            .put("version", version()).put("system", "zookeeper").put("protocol", 1)
            .put("renew", true).put("fenced", false);
        return a;
    }

    static ObjectNode status(String s, String reason) {
        ObjectNode o = JSON.createObjectNode().put("status", s);
        return reason == null ? o : o.put("reason", reason);
    }

    /** A lease whose validity counts from received (System.nanoTime) and
     *  was confirmed at or after at: the negotiated timeout plus at - received. */
    ObjectNode lease(String token, long received, long at) throws Exception {
        long ms = validityMs() + (at - received) / 1_000_000;
        ObjectNode l = JSON.createObjectNode().put("token", token).put("validity_ms", ms);
        ObjectNode o = status("ok", null);
        o.set("lease", l);
        return o;
    }

    /** Confirms mu's node through the server: a sync through the leader,
     *  then its existence (gone with the session, in the same transaction).
     *  Returns the instant before the sync, or -1 when the node is gone. */
    long confirm(Mutex mu) throws Exception {
        long at = System.nanoTime();
        String node = mu.node();
        CountDownLatch synced = new CountDownLatch(1);
        client.sync().inBackground((c, e) -> synced.countDown()).forPath(node);
        if (!synced.await(validityMs(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("sync not answered within the session timeout");
        }
        return client.checkExists().forPath(node) == null ? -1 : at;
    }

    int validityMs() throws Exception {
        int n = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
        return n > 0 ? n : askedMs;
    }

    long session() throws Exception {
        return client.getZookeeperClient().getZooKeeper().getSessionId();
    }

    ObjectNode init(JsonNode m) throws Exception {
        JsonNode p = m.get("lock");
        askedMs = Math.max(1, p.get("ttl_ms").asInt());
        prefix = p.path("key_prefix").asText("");
        int timeout = Math.max(1000, 4 * p.get("timeout_ms").asInt());
        List<String> hosts = new ArrayList<>();
        for (JsonNode n : m.get("nodes")) hosts.add(n.get("addr").asText());
        client = CuratorFrameworkFactory.builder().connectString(String.join(",", hosts))
            .sessionTimeoutMs(askedMs).connectionTimeoutMs(timeout)
            .retryPolicy(new RetryNTimes(2, 100)).build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.LOST) losses.incrementAndGet();
            log("connection state " + state);
        });
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected to " + hosts + " within 15s");
        }
        log("connected, session 0x" + Long.toHexString(session()) + ", negotiated timeout " + validityMs() + "ms");
        ObjectNode o = status("ok", null);
        o.set("adapter", about());
        return o;
    }

    ObjectNode acquire(JsonNode m) throws Exception {
        long received = System.nanoTime();
        String token = m.get("token").asText();
        Mutex mu = new Mutex(client, ROOT + prefix + m.get("key").asText());
        long wait = m.path("wait_ms").asLong(0);
        if (!mu.acquire(wait, TimeUnit.MILLISECONDS)) {
            return status("fail", "not acquired: held by another client");
        }
        holds.put(token, new Hold(mu, session(), losses.get()));
        log("acquired " + mu.node() + " session 0x" + Long.toHexString(session()));
        if (wait == 0) {
            return lease(token, received, received); // its node was made after received
        }
        long at = confirm(mu); // made long before the grant: confirm the session now
        return at < 0 ? status("fail", "not held: the lock node " + mu.node() + " is gone") : lease(token, received, at);
    }

    ObjectNode release(JsonNode m) throws Exception {
        Hold h = holds.remove(m.get("token").asText());
        if (h == null) return status("fail", "not held: no lock of this adapter has this token");
        String node = h.mutex().node(); // null once released
        try {
            h.mutex().release();
        } catch (IllegalMonitorStateException e) {
            return status("fail", "not held: " + e.getMessage());
        }
        // Asked after release() returned: its delete was answered by a
        // server, on the grant's session (which then still lived, and so did
        // its node) or on the new one Curator makes after the old expired.
        // The listener runs on Curator's own thread, so the session id is
        // the witness that cannot lag; the LOST count is one more.
        if (losses.get() != h.losses() || session() != h.session()) {
            log("release " + node + ": the session 0x" + Long.toHexString(h.session()) + " was lost since the grant; release() returned");
            return status("fail", "not held: the session that held the lock expired before the release (InterProcessMutex.release() returned: its guaranteed delete ignores a node already gone)");
        }
        return status("ok", null);
    }

    ObjectNode renew(JsonNode m) throws Exception {
        long received = System.nanoTime();
        String token = m.get("token").asText();
        Hold h = holds.get(token);
        if (h == null || !h.mutex().isOwnedByCurrentThread()) {
            return status("fail", "not held: no acquired lock with this token");
        }
        if (losses.get() != h.losses() || session() != h.session()) {
            return status("fail", "not held: the session was lost since the grant (the mutex still says it is owned)");
        }
        long at = confirm(h.mutex());
        return at < 0 ? status("fail", "not held: the lock node " + h.mutex().node() + " is gone") : lease(token, received, at);
    }

    ObjectNode handle(JsonNode m) throws Exception {
        String op = m.path("op").asText();
        switch (op) {
            case "hello": { ObjectNode o = status("ok", null); o.set("adapter", about()); return o; }
            case "init": return init(m);
            case "acquire": return acquire(m);
            case "release": return release(m);
            case "renew": return renew(m);
            case "close": if (client != null) client.close(); return status("ok", null);
            default: return status("unknown", "unsupported op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        Adapter a = new Adapter();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            JsonNode m = JSON.readTree(line);
            ObjectNode answer;
            try {
                answer = a.handle(m);
            } catch (Exception e) { // connection loss, session expiry, timeouts: unknown
                log(m.path("op").asText() + " " + m.path("key").asText() + ": " + e);
                answer = status("unknown", e.toString());
            }
            answer.set("id", m.get("id"));
            out.println(JSON.writeValueAsString(answer));
            out.flush();
            if ("close".equals(m.path("op").asText())) {
                System.exit(0);
            }
        }
        System.exit(0);
    }
}
