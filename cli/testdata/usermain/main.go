// Command usermain is a team's own harness: the whole command line of
// lockharness (run, scenario run, matrix, locks, report, …) with a lock of
// the team's own, registered in a few lines of main. cli's tests build it
// and run it as a user would; docs/locks.md quotes its main.
package main

import (
	"fmt"
	"os"

	"github.com/lockharness/lockharness/cli"
	"github.com/lockharness/lockharness/locks"
)

func main() {
	reg := locks.Builtin() // or locks.NewRegistry() for your locks alone
	err := reg.Register(locks.Info{
		Name:        "my-setnx-px",
		Description: "our SET NX PX lock: a random token per grant, a release that checks it",
		MaxNodes:    1, // one Redis node
		New:         newMyLock,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := cli.InterruptContext()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{Locks: reg})
	stop()
	os.Exit(code)
}
