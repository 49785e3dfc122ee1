package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/serve"
)

func newReportCmd() *cobra.Command {
	var timeout time.Duration
	gc := checkGC{percent: reportGCPercent, limitMiB: reportGCLimitMiB}
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "re-check a stored run from its history and re-render its report",
		Long: `report reads RUN_DIR/history.jsonl (and run.json when present), checks it again,
writes results.json and redraws every plot and index.html. A history from another
machine can be looked at this way: put it in a directory as history.jsonl.

Ctrl-C while reading or checking leaves the directory as it was (exit 130); Ctrl-C
while drawing keeps the new results.json and removes index.html, which would
otherwise show figures of the old check: run report again to draw it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return &codeError{exitError, fmt.Errorf("--check-timeout must be positive, got %v: use e.g. --check-timeout 30s", timeout)}
			}
			defer gc.apply()()
			res, err := rebuild(cmd.Context(), args[0], timeout)
			if err != nil {
				return err
			}
			printSummary(cmd.OutOrStdout(), args[0], res)
			return verdictCode(res.Verdict)
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", 30*time.Second, "bound on each linearizability check; the whole check stops at 4 times it")
	cmd.Flags().Int64Var(&gc.limitMiB, "memory-limit", gc.limitMiB, "soft memory limit of the report in MiB (GOMEMLIMIT, which wins when set); 0 leaves the runtime's")
	return cmd
}

// The report's collector by default, from measurement (docs/measurements.md,
// issue 27): the report is the check and then the drawing, whose figures and
// digest keep more live than a check window, so the check's percent with a
// higher limit. On a quiet machine it cost 5 to 16% less CPU than the
// runtime's defaults on every 1M-event shape (peak up to 121 MB) and about 10%
// less on a million keys, where it also kept the peak at 164-175 MB instead
// of 195; the check's 100 MiB limit made that history's report 10% dearer.
const (
	reportGCPercent  = 200
	reportGCLimitMiB = 150
)

func newServeCmd() *cobra.Command {
	var store, addr string
	cmd := &cobra.Command{
		Use:   "serve [--store DIR] [--addr 127.0.0.1:8080]",
		Short: "browse the store of runs in a web browser",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := serve.NewServer(store)
			if err != nil {
				return &codeError{exitError, err}
			}
			defer h.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return &codeError{exitError, fmt.Errorf("listen on %s: %w (choose another with --addr)", addr, err)}
			}
			srv := serve.HTTPServer(h)
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s at http://%s/ (Ctrl-C to stop)\n", store, ln.Addr())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return &codeError{exitError, err}
			case <-cmd.Context().Done():
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
					return &codeError{exitError, err}
				}
				return nil
			}
		},
	}
	cmd.Flags().StringVar(&store, "store", "store", "directory of runs")
	cmd.Flags().StringVar(&addr, "addr", serve.DefaultAddr, "address to listen on (loopback unless you choose otherwise)")
	return cmd
}

// rebuild reads a stored run's record (storedRun; derived from the history
// when there is none), checks its history (each porcupine check bounded by
// timeout) and renders
// the report of what the check found (reports.RenderDigested): the
// history file is decoded once, the report gathering what it draws as the
// check reads it. It goes in steps, so that
// an interrupt leaves the run directory whole: nothing is written until
// the check has finished, and a drawing cut short removes index.html
// rather than leave a page next to figures it does not match.
func rebuild(ctx context.Context, dir string, timeout time.Duration) (reports.Results, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return reports.Results{}, &codeError{exitError, fmt.Errorf("%s is not a run directory: give store/<test>/<run> (one holding history.jsonl)", dir)}
	}
	cfg, rec, stored, err := storedRun(dir)
	if err != nil {
		return reports.Results{}, &codeError{exitError, err}
	}
	cfg.Timeout, cfg.Views = timeout, true
	path := filepath.Join(dir, reports.HistoryFile)
	var src history.Source
	var res checker.Result
	var dig *reports.Digest
	cctx, cancel := withCheckBudget(ctx, timeout) // the check, not the drawing
	defer cancel()
	check := func() {
		if src, err = history.Open(cctx, path); err != nil {
			return
		}
		// The report gathers what it draws as the check reads the
		// history: one decode of it.
		if end, ok := src.LastTime(); ok {
			dig = reports.NewDigest(end)
			cfg.Observe = dig.See
		}
		if res, err = checker.Check(cctx, src, cfg); err != nil || cctx.Err() != nil {
			return
		}
		if err = checkable(res.Seen); err != nil {
			err = &codeError{exitError, fmt.Errorf("%s: %w", path, err)}
		}
	}
	if !untilInterrupted(cctx, check) || cctx.Err() != nil {
		if budgetSpent(cctx) {
			return reports.Results{}, &codeError{exitError, fmt.Errorf("%v: %s left as it was; give the check longer with a larger --check-timeout", context.Cause(cctx), dir)}
		}
		return reports.Results{}, &codeError{interruptCode(ctx), fmt.Errorf("%v while reading and checking the history: %s left as it was", context.Cause(ctx), dir)}
	}
	if ce := (*codeError)(nil); errors.As(err, &ce) {
		return reports.Results{}, &codeError{ce.code, fmt.Errorf("%w (a run directory holds the history.jsonl a run wrote)", ce.err)}
	}
	if err != nil {
		return reports.Results{}, &codeError{exitError, fmt.Errorf("%w (a run directory holds the history.jsonl a run wrote)", err)}
	}
	if !stored {
		rec = reports.DeriveRecord(dir, rec, res)
	}
	out, err := reports.RenderDigested(ctx, dir, rec, src, res, dig)
	if err != nil {
		if ctx.Err() != nil {
			_ = os.Remove(filepath.Join(dir, reports.IndexFile))
			return reports.Results{}, &codeError{interruptCode(ctx), fmt.Errorf("%v while drawing the report: results.json is complete, index.html was removed; run `harness report %s` again to draw it", context.Cause(ctx), dir)}
		}
		return reports.Results{}, &codeError{exitError, err}
	}
	return out, nil
}
