package adapter_test

import "testing"

// Curator's InterProcessMutex keeps every promise on a healthy ZooKeeper.
func TestCuratorValidWithoutFaults(t *testing.T) { runValid(t, "curator", 3) }

// The upstream report apache/curator#727 as a scenario (the catalogue's
// zk-session-expiry-gc-pause with Curator): as with kazoo, the session
// expires during the pause and the paused client's write, with no fencing
// token, loses the next holder's update.
func TestCuratorPauseLongerThanSessionLosesUpdate(t *testing.T) {
	s, out := runUpstream(t, "curator", "curator-727-mutex-kept-after-session-loss.yaml")
	expectPauseLosesUpdate(t, s, out)
}
