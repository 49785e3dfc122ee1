package sut

// Exit is a node's server process ending without the harness asking: it
// was killed from outside, or it crashed. The harness's own kills (a
// nemesis's, a restart, the teardown) are never Exits.
type Exit struct {
	// Node is the node's name ("n1", "s2").
	Node string
	// How says how it ended, as the operating system or the engine put it
	// ("signal: killed", "exit status 1"), with the line of its log that
	// says why when it has one.
	How string
}

// ExitWatcher is a node whose server the harness supervises: it notices
// when the process ends without the harness asking. A run records each
// such exit in its history and names it in its verdict: a server that
// dies and is brought back in the middle of a run is a fault nobody
// planned, and a run under it is not the run it claims to be.
type ExitWatcher interface {
	// WatchExits has f called, from another goroutine, for every exit of
	// the node's server from now on that the harness did not cause. A
	// later call replaces f; nil stops the watch.
	WatchExits(f func(Exit))
}
