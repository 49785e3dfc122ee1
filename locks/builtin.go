package locks

// builtins lists every lock of this package, in the order of the catalogue:
// from the naive recipes to the ones with a checked owner, then several
// nodes, then fencing and replication, then the real libraries, then the
// locks of the other systems (etcd, ZooKeeper).
func builtins() []Info {
	return []Info{
		setNXInfo,
		setNXExpireInfo,
		setNXEXInfo,
		tokenInfo,
		reentrantInfo,
		redlockInfo,
		fencedInfo,
		tokenWaitInfo,
		redsyncInfo,
		redislockInfo,
		rueidislockInfo,
		etcdInfo,
		etcdFencedInfo,
		mysqlForUpdateInfo,
		mysqlFencedInfo,
		mysqlGetLockInfo,
		zkInfo,
		zkFencedInfo,
		zkNewLockInfo,
	}
}
