// Command harness is the command line of lockharness with the built-in
// locks and the shipped lock-client adapters (redis-py, kazoo, …): a thin
// main over cli.Main, which a team with locks of its own calls from its own
// main with its registry (docs/locks.md).
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lockharness/lockharness/cli"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
)

func main() {
	// Signals first: asking the shipped adapters what they are starts
	// their interpreters, and a Ctrl-C meanwhile is honoured as any other.
	ctx, stop := cli.InterruptContext()
	reg := locks.Builtin()
	if namesLocks(os.Args[1:]) {
		if err := adapter.RegisterShipped(ctx, reg); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "harness: the shipped adapters:", err)
			stop()
			os.Exit(2)
		}
	}
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{Locks: reg, LockCommand: adapter.FromCommand})
	stop()
	os.Exit(code)
}

// namesLocks reports whether the command takes or lists locks by name (run,
// scenario, matrix, locks): only those need the shipped adapters, whose
// registration starts an interpreter each (0.6–1 s measured here); check,
// report, serve and version read what a run recorded and start none.
func namesLocks(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			switch a {
			case "run", "scenario", "matrix", "locks":
				return true
			}
			return false
		}
	}
	return false
}
