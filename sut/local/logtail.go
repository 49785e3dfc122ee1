package local

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode/utf8"
)

// logWindow is how much of the end of a log LogTail reads: enough for a
// Go panic's whole stack (etcd's is about 30 lines), bounded whatever the
// log's size.
const logWindow = 64 << 10

// tailLines is how many of the last lines LogTail shows besides the cause.
const tailLines = 3

// maxLineLen cuts a long log line down, so that one line (a JSON log
// record, a dump) does not drown the error it is quoted in.
const maxLineLen = 300

// causeMarks are what a line that says why a server stopped contains, the
// strongest first: a Go program's "panic:" line (the stack after it says
// only where), a "fatal" one (Go's "fatal error:", Redis's "# Fatal",
// ZooKeeper's and MariaDB's FATAL/[ERROR]), then any "error".
var causeMarks = []string{"panic:", "fatal", "error"}

// maxCauses is how many lines of the strongest cause LogTail quotes: a Go
// server with a structured logger says why twice, as a record with the
// error's fields ({"level":"panic","msg":…,"error":"invalid database"})
// and as the runtime's bare "panic: failed to open database".
const maxCauses = 2

// LogTail is what a start error quotes from a server's log at path: the
// lines that say why it stopped (the last ones carrying the strongest of
// causeMarks, case-insensitively, structured records read as words), then
// its last lines, then where the whole log is. A server that dies of a Go
// panic ends its log with a stack trace, whose last lines name only
// goroutines and source files: without the cause the error would say
// nothing of why. It reads at most the last 64 KiB of the log, whatever
// the system.
func LogTail(path string) string {
	lines, err := lastLines(path)
	switch {
	case err != nil:
		return "(no log)"
	case len(lines) == 0:
		return fmt.Sprintf("(empty log %s)", path)
	}
	first := max(len(lines)-tailLines, 0)
	var parts []string
	for _, c := range causes(lines[:first]) {
		parts = append(parts, clip(c))
	}
	if len(parts) > 0 {
		parts = append(parts, "…")
	}
	for _, l := range lines[first:] {
		parts = append(parts, clip(readable(l)))
	}
	return fmt.Sprintf("%s (log: %s)", strings.Join(parts, " | "), path)
}

// causes are the last maxCauses lines (in log order, read as words) that
// carry the strongest of causeMarks; none when no line carries any.
func causes(lines []string) []string {
	for _, mark := range causeMarks {
		var found []string
		for i := len(lines) - 1; i >= 0 && len(found) < maxCauses; i-- {
			if l := readable(lines[i]); strings.Contains(strings.ToLower(l), mark) && !slices.Contains(found, l) {
				found = append(found, l)
			}
		}
		if len(found) > 0 {
			slices.Reverse(found)
			return found
		}
	}
	return nil
}

// readable is a log line as words: a structured record (a JSON object
// with a "level", as zap writes it) becomes "level: msg: error (key=value
// …)" with its time, caller and stack left out; any other line is itself.
func readable(line string) string {
	if !strings.HasPrefix(line, "{") {
		return line
	}
	var rec map[string]any
	if json.Unmarshal([]byte(line), &rec) != nil {
		return line
	}
	level, ok := rec["level"].(string)
	if !ok {
		return line
	}
	out := level + ":"
	for _, k := range []string{"msg", "error"} {
		if v, ok := rec[k].(string); ok && v != "" {
			out += " " + v + ":"
		}
	}
	out = strings.TrimSuffix(out, ":")
	var rest []string
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		switch k {
		case "level", "msg", "error", "ts", "caller", "stacktrace":
			continue
		}
		rest = append(rest, fmt.Sprintf("%s=%v", k, rec[k]))
	}
	if len(rest) > 0 {
		out += " (" + strings.Join(rest, " ") + ")"
	}
	return out
}

// lastLinesOr is lastLines, none when the log cannot be read.
func lastLinesOr(path string) []string {
	lines, _ := lastLines(path)
	return lines
}

// lastLines are the non-empty lines of the last logWindow bytes of the
// file at path (the first, likely cut, line of a window that starts
// mid-file is dropped).
func lastLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-logWindow, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, logWindow))
	if err != nil {
		return nil, err
	}
	all := strings.Split(string(b), "\n")
	if off > 0 {
		all = all[1:]
	}
	lines := all[:0]
	for _, l := range all {
		if l = strings.TrimRight(l, "\r\t "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// clip cuts a line to maxLineLen bytes, on a rune boundary.
func clip(l string) string {
	if len(l) <= maxLineLen {
		return l
	}
	cut := maxLineLen
	for cut > 0 && !utf8.RuneStart(l[cut]) {
		cut--
	}
	return l[:cut] + "…"
}
