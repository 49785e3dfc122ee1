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
	"time"

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
	ctx, stop := interruptContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalCause is the cause of the command's context when a signal
// cancelled it.
type signalCause struct{ sig syscall.Signal }

func (s signalCause) Error() string {
	name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT (Ctrl-C)", syscall.SIGTERM: "SIGTERM"}[s.sig]
	if name == "" {
		name = s.sig.String()
	}
	return "interrupted by " + name
}

// interruptContext is cancelled, with a signalCause, by the first SIGINT or
// SIGTERM; the next one gets the default action (the process ends at once),
// so a user whose first Ctrl-C is being honoured slowly is never ignored.
// Children die with the harness (Pdeathsig), and the next run sweeps their
// files.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			if ss, ok := s.(syscall.Signal); ok {
				cancel(signalCause{ss})
			} else {
				cancel(signalCause{syscall.SIGINT})
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// interruptCode is the exit code of a command a signal stopped: 128 plus
// the signal's number (130 for SIGINT, 143 for SIGTERM), as shells report
// a process the signal killed; exitError when no signal was involved.
func interruptCode(ctx context.Context) int {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		return 128 + int(sc.sig)
	}
	return exitError
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitValid
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(stderr, "harness:", flagText(ce.err))
		}
		return ce.code
	}
	// Flag parsing and other usage errors: point at the command's help.
	path := "harness"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "harness: %v\nsee `%s --help`\n", err, path)
	return exitError
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "harness",
		Short: "Jepsen-style correctness and fault-injection tests of distributed locks on Redis",
		Long: `harness starts real Redis topologies, drives lock implementations with a workload,
injects faults, records every operation and checks it for mutual-exclusion violations.

Exit codes: 0 valid, 1 invalid, 2 unknown or error; check and report stopped by
Ctrl-C exit 130 (143 for SIGTERM), the shell's convention for a process a signal
ended. A second Ctrl-C ends the harness at once.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(), newScenarioCmd(), newCheckCmd(), newLocksCmd(), newNemesesCmd(), newReportCmd(), newServeCmd(), newVersionCmd(), newMatrixCmd(), newImageCmd(), newAdapterCmd())
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

// interruptGrace is how long an interrupted command waits for work that
// honours cancellation only between reads (a read from a pipe that blocks).
const interruptGrace = 500 * time.Millisecond

// untilInterrupted runs f and reports whether it finished: it returns
// false when ctx is done and f has not returned within interruptGrace, so
// that Ctrl-C ends the command even while f waits for input. f keeps
// running (the process is about to exit); the caller must not touch what f
// writes when it returns false.
func untilInterrupted(ctx context.Context, f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	select {
	case <-done:
		return true
	case <-time.After(interruptGrace):
		return false
	}
}
