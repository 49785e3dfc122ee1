// Package local is the toolkit the local-process backends share: a
// server process (Server: started in its own directory, paused, killed and
// restarted on its port, its clock set through libfaketime), free ports,
// network links that are proxies embedded in this process (Link, LinkSet,
// toxiproxy), the preloaded C shims built with gcc at run time (the malloc
// shim libfaketime needs with Debian's redis-server, the connect shim that
// routes a server's peer connections through its links: shim/*.c), the
// run's node directory, the start-up helpers (RetryBusyPorts,
// WaitAllReady, StopAll), and Group, what every local backend's
// deployment embeds: its servers and storage node, links, directory,
// start, heal, health check and teardown.
//
// It knows no system: what a server is (its program and arguments, the
// probe that says it answers, the one that reads its clock) is given by
// its backend (sut/redis, sut/etcd, …). Every process it starts dies with
// the harness (Pdeathsig).
package local
