// Package reports turns a run into files people would rather look at than
// read: results.json, plots, porcupine views and an index.html, in the
// run's directory of the store; it also manages the store itself.
package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// File names inside a run directory.
const (
	HistoryFile = "history.jsonl"
	MetaFile    = "run.json"
	ResultsFile = "results.json"
	// HoldsFile is the holds of results.json, one JSON object a line, in
	// order of start: a long run has millions, which results.json (read
	// whole by whoever reads it) names only by their number.
	HoldsFile = "holds.jsonl"
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
	// 2.1 × TTL (1 s)".
	Sizes []string `json:"sizes,omitempty"`
	// HoldCount is how many holds the run's HoldsFile lists (results.json
	// written by a run or a report; harness check --json lists them in
	// Holds instead).
	HoldCount int `json:"hold_count,omitempty"`
}

// WriteJSON writes v as indented JSON to dir/name, atomically. Results are
// written as EncodeResults writes them, their holds streamed.
func WriteJSON(dir, name string, v any) error {
	return writeAtomicWith(dir, name, func(w io.Writer) error {
		if r, ok := v.(Results); ok {
			return EncodeResults(w, r)
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// writeResultsFile writes out as dir/results.json, atomically, and its
// holds, streamed, to dir/holds.jsonl: results.json stays as small as
// the findings, whatever the run's length.
func writeResultsFile(dir string, out Results) error { return writeResultsWith(dir, out, nil) }

// writeResultsWith is writeResultsFile, giving each hold to see (if not
// nil) as it writes it; see sees none when there are no holds.
func writeResultsWith(dir string, out Results, see func(checker.Hold)) error {
	out.HoldCount = out.NumHolds()
	if out.HoldCount > 0 {
		if err := writeAtomicWith(dir, HoldsFile, func(w io.Writer) error { return encodeHolds(w, out.Result, see) }); err != nil {
			return err
		}
	} else if err := os.Remove(filepath.Join(dir, HoldsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the holds of an earlier check: %w", err)
	}
	out.Result = out.WithoutHolds()
	return WriteJSON(dir, ResultsFile, out)
}

// encodeHolds writes res's holds, one JSON object a line, one at a time,
// in writes of 64 KiB or so (a write a line was a tenth of the encoding).
func encodeHolds(w io.Writer, res checker.Result, see func(checker.Hold)) error {
	const batch = 64 << 10
	b := make([]byte, 0, batch+512)
	err := res.EachHold(func(h checker.Hold) error {
		if see != nil {
			see(h)
		}
		b = append(appendHold(b, &h), '\n')
		if len(b) < batch {
			return nil
		}
		_, err := w.Write(b)
		b = b[:0]
		return err
	})
	if err == nil && len(b) > 0 {
		_, err = w.Write(b)
	}
	return err
}

// appendHold appends h as json.Marshal writes it (TestAppendHoldIsJSON),
// without reflection: a long run has hundreds of thousands of holds, and
// marshalling them was a sixth of what a report adds to its check.
func appendHold(b []byte, h *checker.Hold) []byte {
	b = append(b, `{"process":`...)
	b = strconv.AppendInt(b, int64(h.Process), 10)
	b = append(b, `,"key":`...)
	b = history.AppendJSONString(b, h.Key)
	b = append(b, `,"start":`...)
	b = strconv.AppendInt(b, h.Start, 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, h.End, 10)
	if h.Deadline != 0 {
		b = append(b, `,"deadline":`...)
		b = strconv.AppendInt(b, h.Deadline, 10)
	}
	if h.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendInt(b, h.Fence, 10)
	}
	b = append(b, `,"acquire":`...)
	b = strconv.AppendInt(b, h.Acquire, 10)
	return append(b, '}')
}

// writeAtomicWith writes dir/name by write, through a temporary file that
// replaces it only once complete.
func writeAtomicWith(dir, name string, write func(io.Writer) error) error {
	f, err := createTemp(dir, name)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// EncodeResults writes out as indented JSON, its holds last and one at a
// time (Result.EachHold): a long run's holds, which may be kept in a file,
// are never all in memory, nor is their JSON.
func EncodeResults(w io.Writer, out Results) error {
	res := out.Result
	out.Holds = nil
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if res.NumHolds() == 0 {
		_, err := w.Write(append(b, '\n'))
		return err
	}
	body, ok := bytes.CutSuffix(b, []byte("\n}"))
	if !ok {
		return fmt.Errorf("encode results: unexpected JSON %.40q", b)
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	if _, err := io.WriteString(w, ",\n  \"holds\": ["); err != nil {
		return err
	}
	sep := "\n    "
	if err := res.EachHold(func(h checker.Hold) error {
		hb, err := json.MarshalIndent(h, "    ", "  ")
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		sep = ",\n    "
		_, err = w.Write(hb)
		return err
	}); err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	_, err = io.WriteString(w, "\n  ]\n}\n")
	return err
}
