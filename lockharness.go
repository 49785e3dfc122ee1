// Package lockharness runs Jepsen-style tests of distributed locks on real
// Redis: it starts a topology, drives lock clients with a workload while a
// nemesis injects faults, records every operation, checks the history and
// writes a report. It is a thin facade over package run, which holds the
// configuration, its one validation, the plan and the phases; the CLI
// (package cli, and cmd/harness over it) is a thin layer over the same Run.
package lockharness

import (
	"context"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/run"
)

// Config is one run (run.Config). The zero value (plus a Lock) does
// something sensible.
type Config = run.Config

// Outcome is what a run produced (run.Outcome).
type Outcome = run.Outcome

// UsageError is an error in the configuration (run.UsageError): the CLI
// exits 2 and prints it. A problem of one field is a *FieldError inside.
type UsageError = run.UsageError

// FieldError is a value of one Config field that cannot run
// (run.FieldError).
type FieldError = run.FieldError

// ErrInterrupted is returned (with the outcome of the prefix that ran) when
// the run was cancelled before its end.
var ErrInterrupted = run.ErrInterrupted

// DefaultNodes is the node count of multi-node locks when none is given.
const DefaultNodes = run.DefaultNodes

// MaxClients bounds the clients of a run (run.MaxClients).
const MaxClients = run.MaxClients

// Run performs one test: setup, run, heal, recovery, teardown, check,
// report (run.Run).
func Run(ctx context.Context, cfg Config) (Outcome, error) { return run.Run(ctx, cfg) }

// NemesisRequirements says, for each built-in nemesis, what in a history
// shows that it struck while a client held a lock (run.NemesisRequirements).
func NemesisRequirements(names []string) []checker.Requirement {
	return run.NemesisRequirements(names)
}

// StoredRecord reads the record of the run stored in dir (run.StoredRecord).
func StoredRecord(dir string) (reports.Record, bool, error) { return run.StoredRecord(dir) }
