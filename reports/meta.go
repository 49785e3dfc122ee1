// Package reports turns a run into files people would rather look at than
// read: results.json, plots, porcupine views and an index.html, in the
// run's directory of the store; it also manages the store itself.
package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// File names inside a run directory.
const (
	HistoryFile = "history.jsonl"
	MetaFile    = "run.json"
	ResultsFile = "results.json"
)

// RunMeta describes how a run was made: enough to reproduce it and to label
// its report.
type RunMeta struct {
	Test     string   `json:"test"` // store subdirectory: lock name, or scenario name
	Lock     string   `json:"lock"`
	Nemeses  []string `json:"nemeses,omitempty"`
	Seed     uint64   `json:"seed"`
	Command  string   `json:"command"` // the exact command line that reproduces the run
	Scenario string   `json:"scenario,omitempty"`
	// Explanation is the scenario's plain-words account (empty for random runs).
	Explanation string `json:"explanation,omitempty"`
	// Expected verdicts per checker, for scenarios ("lock-promise": "invalid").
	Expected map[string]string `json:"expected,omitempty"`
	// Config is the full run configuration, as JSON.
	Config   json.RawMessage `json:"config,omitempty"`
	Start    time.Time       `json:"start"`
	Duration time.Duration   `json:"duration_ns"`
	// Phases records when each phase began, in run-clock nanoseconds.
	Phases []Phase `json:"phases,omitempty"`
	// Partial, when set, says why the results are incomplete (the check
	// was interrupted): the checkers that had not finished are unknown.
	Partial string `json:"partial,omitempty"`
}

// Phase is a named phase of a run and when it began (run-clock ns).
type Phase struct {
	Name string `json:"name"`
	At   int64  `json:"at"`
}

// Results is results.json: the verdicts and findings, with the run's meta.
type Results struct {
	Meta RunMeta `json:"meta"`
	checker.Result
	// Why explains violations, by index into Violations, where the history
	// says more than the checker's description: how an overlap on a quorum
	// lock came about (Explain).
	Why map[int]string `json:"why,omitempty"`
	// Sizes says how large each fault and client pause was against the
	// lock's TTL (and Redlock's drift allowance): "partition 2.1 s =
	// 2.1 × TTL (1 s)" (FaultSizes).
	Sizes []string `json:"sizes,omitempty"`
}

// WriteJSON writes v as indented JSON to dir/name, atomically.
func WriteJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
