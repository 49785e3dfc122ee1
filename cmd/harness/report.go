package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/reports/serve"
)

func newReportCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "re-check a stored run from its history and re-render its report",
		Long: `report reads RUN_DIR/history.jsonl (and run.json when present), checks it again,
writes results.json and redraws every plot and index.html. A history from another
machine can be looked at this way: put it in a directory as history.jsonl.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return &codeError{exitError, fmt.Errorf("--check-timeout must be positive, got %v", timeout)}
			}
			ccfg, _ := storedCheckConfig(args[0])
			ccfg.Timeout = timeout
			res, err := reports.Rebuild(cmd.Context(), args[0], ccfg)
			if err != nil {
				return &codeError{exitError, err}
			}
			printSummary(cmd.OutOrStdout(), args[0], res)
			return verdictCode(res.Verdict)
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", 30*time.Second, "bound on each linearizability check")
	return cmd
}

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
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
