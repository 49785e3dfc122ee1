package adapter_test

import "testing"

// kazoo's Lock keeps every promise on a healthy ZooKeeper.
func TestKazooValidWithoutFaults(t *testing.T) { runValid(t, "kazoo", 3) }

// The upstream report python-zk/kazoo#2 as a scenario (the catalogue's
// zk-session-expiry-gc-pause with kazoo): the holder's process stops 7s on
// a 2s session; the ensemble expires the session and hands the lock on,
// and the paused client's write, with no fencing token, loses the next
// holder's update. kazoo tells its user of the loss only through the
// listener, once it reconnects (LOST, in the adapter's log).
func TestKazooPauseLongerThanSessionLosesUpdate(t *testing.T) {
	s, out := runUpstream(t, "kazoo", "kazoo-2-lock-kept-after-session-loss.yaml")
	expectPauseLosesUpdate(t, s, out)
	if !logHas(t, out.Dir, "kazoo", "connection state LOST") {
		t.Errorf("the paused client's listener never saw LOST")
	}
}
