package locks

import "slices"

// clusterLocks are the built-in locks that keep all they write under the
// one lock key, so that, on a Redis Cluster, every command of theirs goes
// to the master of that key's hash slot through a ClusterClient and no
// script touches two slots. The others do not run there as they are:
// fenced keeps its counter under a second key, reentrant publishes on a
// channel from its scripts, token-wait sends WAIT (no key: a ClusterClient
// sends it to any node), and the multi-node locks want independent
// masters.
var clusterLocks = []string{"token", "set-nx-ex", "setnx", "setnx-expire", "redislock"}

// RunsOnCluster reports whether lock name runs on a Redis Cluster.
func RunsOnCluster(name string) bool { return slices.Contains(clusterLocks, name) }

// ClusterLocks lists the locks that run on a Redis Cluster.
func ClusterLocks() []string { return slices.Clone(clusterLocks) }
