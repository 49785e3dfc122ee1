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
	reg := locks.Builtin()
	if err := adapter.RegisterShipped(reg); err != nil {
		fmt.Fprintln(os.Stderr, "harness: the shipped adapters:", err)
		os.Exit(2)
	}
	ctx, stop := cli.InterruptContext()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{Locks: reg, LockCommand: adapter.FromCommand})
	stop()
	os.Exit(code)
}
