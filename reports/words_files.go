package reports

import (
	"html/template"
	"strings"
)

// LogFile is the run's log: the phase log `harness run` writes to
// stderr, and on a failure the last lines of the servers' logs.
const LogFile = "harness.log"

// FileGroup is files of a run directory of one kind, for the report's
// list of files: the record of the run first (open), the figures and
// the close-ups folded.
type FileGroup struct {
	Name  string
	Files []string
	Open  bool
}

// fileKinds are the groups of GroupFiles, in order, each with the test
// that puts a file in it; a file goes to the first that takes it.
var fileKinds = []struct {
	name string
	open bool
	is   func(string) bool
}{
	{"the record of the run (re-check it with harness report)", true, func(f string) bool {
		return f == HistoryFile || f == MetaFile || f == ResultsFile || f == HoldsFile || strings.HasSuffix(f, ".yaml")
	}},
	{"logs", true, func(f string) bool { return strings.HasSuffix(f, ".log") }},
	{"close-ups of violations", false, func(f string) bool { return strings.HasPrefix(f, "timeline-violation-") }},
	{"porcupine's views", false, func(f string) bool { return strings.HasPrefix(f, "porcupine-") }},
	{"figures", false, func(f string) bool { return strings.HasSuffix(f, ".png") || strings.HasSuffix(f, ".svg") }},
	{"other files", false, func(string) bool { return true }},
}

// GroupFiles sorts the files of a run directory (index.html among them,
// which the list leaves out: it is the page) into groups, in the order of
// fileKinds; empty groups are left out.
func GroupFiles(files []string) []FileGroup {
	groups := make([]FileGroup, len(fileKinds))
	for i, k := range fileKinds {
		groups[i] = FileGroup{Name: k.name, Open: k.open}
	}
	for _, f := range files {
		if f == IndexFile {
			continue
		}
		for i, k := range fileKinds {
			if k.is(f) {
				groups[i].Files = append(groups[i].Files, f)
				break
			}
		}
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g.Files) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// linkAll is LinkTerms of each sentence.
func linkAll(ss []string) []template.HTML {
	out := make([]template.HTML, len(ss))
	for i, s := range ss {
		out[i] = LinkTerms(s)
	}
	return out
}
