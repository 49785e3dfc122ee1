/* Redirect a process's outgoing TCP connections, by destination, to other addresses.
   LOCKHARNESS_CONNECT_MAP lists the rewrites: "127.0.0.1:2888=127.0.0.1:40001,..." (IPv4
   only; a dual-stack socket's IPv4-mapped address ::ffff:a.b.c.d matches a.b.c.d too).
   Every connect() to a listed address goes to its replacement instead; others are untouched.

   Why: a ZooKeeper server learns some peers' addresses from the peers themselves (a server
   that receives an election connection from a lower id drops it and connects back to the
   address the other announced), so its zoo.cfg cannot route every connection it makes
   through the harness's link proxies. Rewriting at connect() does, whatever the JVM was
   told. The JVM's sockets (sun.nio.ch.Net.connect0 in libnio) call libc's connect through
   the dynamic linker, so preloading this library reaches them.

   A connection to a listed address whose port nobody listens on is refused at once
   (ECONNREFUSED), as the direct connection would be, instead of going to the proxy: a proxy
   accepts every connection and closes it only when it cannot reach the other side, and a
   ZooKeeper follower that reaches a new leader a few milliseconds before that leader listens
   takes the accepted-then-closed connection for a failed leader and starts a new election
   (measured: an election of 200ms became one of 11s), where a refused one is retried. Whether
   anything listens is read from /proc/net/tcp and tcp6 (the LISTEN sockets on that port),
   which needs no connection of its own. Across a cut link this says "refused" where a real
   partition would let the attempt time out: the caller learns only that nothing listens
   there, sooner, and no byte crosses the cut. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MAX_RULES 256

struct rule { struct in_addr from_ip, to_ip; in_port_t from_port, to_port; };
static struct rule rules[MAX_RULES];
static int nrules;
static int (*real_connect)(int, const struct sockaddr *, socklen_t);

/* parse_addr reads "a.b.c.d:port" from s (up to end) into ip and port (network order). */
static int parse_addr(const char *s, const char *end, struct in_addr *ip, in_port_t *port) {
  char buf[64];
  size_t n = (size_t)(end - s);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *colon = strrchr(buf, ':');
  if (!colon) return -1;
  *colon = 0;
  char *tail;
  long p = strtol(colon + 1, &tail, 10);
  if (*tail || p <= 0 || p > 65535) return -1;
  if (inet_pton(AF_INET, buf, ip) != 1) return -1;
  *port = htons((in_port_t)p);
  return 0;
}

__attribute__((constructor)) static void load_rules(void) {
  real_connect = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
  const char *m = getenv("LOCKHARNESS_CONNECT_MAP");
  while (m && *m && nrules < MAX_RULES) {
    const char *comma = strchr(m, ',');
    const char *end = comma ? comma : m + strlen(m);
    const char *eq = memchr(m, '=', (size_t)(end - m));
    struct rule r;
    if (eq && parse_addr(m, eq, &r.from_ip, &r.from_port) == 0 && parse_addr(eq + 1, end, &r.to_ip, &r.to_port) == 0)
      rules[nrules++] = r;
    m = comma ? comma + 1 : NULL;
  }
}

static const struct rule *find(struct in_addr ip, in_port_t port) {
  for (int i = 0; i < nrules; i++)
    if (rules[i].from_port == port && rules[i].from_ip.s_addr == ip.s_addr) return &rules[i];
  return NULL;
}

/* listening reports whether a socket in the LISTEN state (st 0A) has local port port
   (network order) in /proc/net/tcp or tcp6; when neither can be read it says yes, so that
   the connection goes to the proxy as it would without this check. */
static int listening(in_port_t port) {
  const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
  unsigned want = ntohs(port);
  int readable = 0;
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(files[i], "re");
    if (!f) continue;
    readable = 1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
      char local[64];
      unsigned st;
      if (sscanf(line, " %*d: %63s %*s %x", local, &st) != 2 || st != 0x0A) continue;
      char *colon = strrchr(local, ':');
      if (colon && strtoul(colon + 1, NULL, 16) == want) { fclose(f); return 1; }
    }
    fclose(f);
  }
  return !readable;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  if (!real_connect) load_rules();
  if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    const struct rule *r = find(in.sin_addr, in.sin_port);
    if (r) {
      if (!listening(r->from_port)) { errno = ECONNREFUSED; return -1; }
      in.sin_addr = r->to_ip;
      in.sin_port = r->to_port;
      return real_connect(fd, (const struct sockaddr *)&in, sizeof in);
    }
  } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      struct in_addr ip;
      memcpy(&ip, &in6.sin6_addr.s6_addr[12], 4);
      const struct rule *r = find(ip, in6.sin6_port);
      if (r) {
        if (!listening(r->from_port)) { errno = ECONNREFUSED; return -1; }
        memcpy(&in6.sin6_addr.s6_addr[12], &r->to_ip, 4);
        in6.sin6_port = r->to_port;
        return real_connect(fd, (const struct sockaddr *)&in6, sizeof in6);
      }
    }
  }
  return real_connect(fd, addr, len);
}
