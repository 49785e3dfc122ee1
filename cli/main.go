// Package cli is the command line of lockharness, importable: cmd/harness
// is a thin main over Main, and a team with its own locks gets the whole
// CLI (run, scenario run, matrix, locks, check, report) with them by
// calling Main from a main of its own with its registry in Options. It
// parses flags into config structs, calls the library, and maps the
// verdict to an exit code (0 valid, 1 invalid, 2 unknown or error).
package cli

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

	"github.com/lockharness/lockharness/locks"
	lockrun "github.com/lockharness/lockharness/run"
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

// Options is what a main gives the command line beyond its arguments.
type Options struct {
	// Locks are the locks every command can name (run --lock, scenario
	// run --lock, matrix --locks, locks); nil means locks.Builtin(). A
	// user's main registers its own locks here, beside the built-in ones
	// or instead of them.
	Locks *locks.Registry
	// LockCommand turns a --lock-cmd command line into a lock (an adapter
	// process speaking the lock-client protocol); nil makes --lock-cmd an
	// error (exit 2) saying that this build has no adapter support.
	LockCommand func(cmdline string) (locks.Info, error)
}

// registry is the registry the commands look locks up in.
func (o Options) registry() *locks.Registry {
	if o.Locks == nil {
		return locks.Builtin()
	}
	return o.Locks
}

// Main runs the command line args (without the program's name) and
// returns its exit code: 0 valid, 1 invalid, 2 unknown, error or bad
// input, 128+n for a command a signal n interrupted (see InterruptContext).
// It never exits the process; the caller does, with the code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, opts Options) int {
	redis.SetLogger(quietRedisLog{})
	return run(ctx, args, stdout, stderr, opts)
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

// InterruptContext is cancelled, with a signalCause, by the first SIGINT or
// SIGTERM; the next one gets the default action (the process ends at once),
// so a user whose first Ctrl-C is being honoured slowly is never ignored.
// Children die with the harness (Pdeathsig), and the next run sweeps their
// files.
// A main calls it once and passes the context to Main, so that Ctrl-C
// stops a run cleanly; stop releases the signal handler.
func InterruptContext() (ctx context.Context, stop func()) {
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
func run(ctx context.Context, args []string, stdout, stderr io.Writer, opts Options) int {
	root := newRoot(stdout, stderr, &app{opts: opts, args: args})
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

// app is what the commands share: the main's options and the command
// line, which a run records as the command that reproduces it.
type app struct {
	opts Options
	args []string
}

// command is the command line as a user would type it again.
func (a *app) command() string {
	return lockrun.CommandLine(append([]string{"harness"}, a.args...)...)
}

func newRoot(stdout, stderr io.Writer, a *app) *cobra.Command {
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
		Version:       versionLine(),
	}
	// --version prints what `harness version` prints, not cobra's
	// "harness version X" (which would say "version" twice).
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(a), newScenarioCmd(a), newCheckCmd(), newLocksCmd(a), newNemesesCmd(), newReportCmd(), newServeCmd(), newVersionCmd(), newMatrixCmd(a), newShrinkCmd(a), newReplayCmd(a), newImageCmd(), newAdapterCmd())
	return root
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
