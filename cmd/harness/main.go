// Command harness is the command line of lockharness with the built-in
// locks and the shipped lock-client adapters (redis-py, kazoo, …): a thin
// main over cli.Main, which a team with locks of its own calls from its own
// main with its registry (docs/locks.md).
package main

import (
	"fmt"
	"os"

	"github.com/lockharness/lockharness/cli"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
)

func main() {
	// Signals first: asking the shipped adapters what they are starts
	// their interpreters, and a Ctrl-C meanwhile is honoured as any other.
	ctx, stop := cli.InterruptContext()
	reg := locks.Builtin()
	if err := adapter.RegisterShipped(ctx, reg); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "harness: the shipped adapters:", err)
		stop()
		os.Exit(2)
	}
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{Locks: reg, LockCommand: adapter.FromCommand})
	stop()
	os.Exit(code)
}
