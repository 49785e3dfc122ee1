// Command harness is the command line of lockharness with the built-in
// locks: a thin main over cli.Main, which a team with locks of its own
// calls from its own main with its registry (docs/locks.md).
package main

import (
	"os"

	"github.com/lockharness/lockharness/cli"
)

func main() {
	ctx, stop := cli.InterruptContext()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{})
	stop()
	os.Exit(code)
}
