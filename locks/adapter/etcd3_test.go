package adapter_test

import "testing"

// python-etcd3's Lock keeps every promise on a healthy etcd.
func TestEtcd3ValidWithoutFaults(t *testing.T) { runValid(t, "python-etcd3", 1) }

// The catalogue's etcd-lease-expiry-gc-pause with python-etcd3: the
// holder's process stops 4.5s on a 2s lease; etcd expires it, the next
// client takes the lock, and the paused client's write, with no fencing
// token, loses its update.
func TestEtcd3PauseLongerThanLeaseLosesUpdate(t *testing.T) {
	s, out := runScenario(t, "python-etcd3", "etcd-lease-expiry-gc-pause")
	expectPauseLosesUpdate(t, s, out)
}
