package run

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// serverLogLines is how many of the last lines of each server's log a
// failed run keeps in its log; serverLogWindow bounds what is read of
// each, whatever its size.
const (
	serverLogLines  = 40
	serverLogWindow = 64 << 10
)

// openRunLog starts the run's log, dir/harness.log (reports.LogFile):
// what the run writes to its log from now on goes there too, as Jepsen
// keeps jepsen.log in each run. It returns the writer, and the function
// that ends the log when the run has ended with err and results res:
// a failed run's log ends with the servers' last lines (tails).
func openRunLog(dir string, log io.Writer) (io.Writer, func(err error, res reports.Results, tails string), error) {
	f, err := os.Create(filepath.Join(dir, reports.LogFile))
	if err != nil {
		return log, nil, fmt.Errorf("create the run's log: %w", err)
	}
	end := func(err error, res reports.Results, tails string) {
		if failed(err, res) && tails != "" {
			fmt.Fprintf(f, "the run failed; the servers' last lines:\n%s", tails)
		}
		_ = f.Close()
	}
	return io.MultiWriter(log, f), end, nil
}

// serverTails reads the last lines of every server log (*.log) under
// the deployment's node directory, which teardown removes, for the run's
// log should the run fail: "== n1.log (last 40 lines)" and its lines.
// A backend whose servers log elsewhere (containers) has none here.
func serverTails(nodeDir string) string {
	if nodeDir == "" {
		return ""
	}
	var logs []string
	_ = filepath.WalkDir(nodeDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".log") {
			logs = append(logs, p)
		}
		return nil
	})
	slices.Sort(logs)
	var b strings.Builder
	for _, p := range logs {
		lines := lastLogLines(p, serverLogLines)
		if len(lines) == 0 {
			continue
		}
		rel, _ := filepath.Rel(nodeDir, p)
		fmt.Fprintf(&b, "== %s (last %d lines)\n%s\n", rel, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// lastLogLines is the last n lines of the file at path, read from its
// last serverLogWindow bytes.
func lastLogLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-serverLogWindow, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil
	}
	if off > 0 { // the first line read is likely cut
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines[max(len(lines)-n, 0):]
}

// failed reports whether a run that ended with err and results res
// failed: an error, or a verdict other than valid. Its log then keeps
// the servers' last lines.
func failed(err error, res reports.Results) bool {
	return err != nil || res.Verdict != checker.Valid
}
