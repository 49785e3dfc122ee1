// Command harness is the thin command line of lockharness: it parses flags
// into config structs, calls the library, and maps the verdict to an exit
// code (0 valid, 1 invalid, 2 unknown or error).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitValid   = 0
	exitInvalid = 1
	exitError   = 2
)

// exitError carries an exit code out of a command.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *codeError) Unwrap() error { return e.err }

// quietRedisLog drops go-redis's internal log lines ("redis: sentinel: …",
// pool notices): every error a client sees is already in the history, and
// the log would scribble over the progress line.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietRedisLog{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitValid
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(stderr, "harness:", ce.err)
		}
		return ce.code
	}
	// Flag parsing and other usage errors.
	fmt.Fprintln(stderr, "harness:", err)
	return exitError
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "harness",
		Short: "Jepsen-style correctness and fault-injection tests of distributed locks on Redis",
		Long: `harness starts real Redis topologies, drives lock implementations with a workload,
injects faults, records every operation and checks it for mutual-exclusion violations.

Exit codes: 0 valid, 1 invalid, 2 unknown or error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(), newScenarioCmd(), newCheckCmd(), newLocksCmd(), newNemesesCmd(), newReportCmd(), newServeCmd(), newVersionCmd(), newMatrixCmd())
	return root
}

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "harness", version)
			return nil
		},
	}
}
