package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// exception is one line of the allow-list.
type exception struct {
	file, name, reason string
	line               int
}

// allowList maps "file name" to its exception.
type allowList map[string]exception

func (a allowList) key(file, name string) string { return file + " " + name }

// readAllowList reads the allow-list: `path Func reason` a line, # for a
// comment. A line without a reason, or naming a function twice, is an error.
func readAllowList(name string) (allowList, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAllowList(name, f)
}

func parseAllowList(name string, r io.Reader) (allowList, error) {
	a := allowList{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want `path Func reason`, got %q", name, n, line)
		}
		e := exception{
			file:   path.Clean(fields[0]),
			name:   fields[1],
			reason: strings.Join(fields[2:], " "),
			line:   n,
		}
		k := a.key(e.file, e.name)
		if prev, dup := a[k]; dup {
			return nil, fmt.Errorf("%s:%d: %s %s is already allowed on line %d", name, n, e.file, e.name, prev.line)
		}
		a[k] = e
	}
	return a, sc.Err()
}

// bounds are the two limits a function is held to.
type bounds struct{ lines, complexity int }

func (b bounds) exceeded(f fn) bool { return f.Lines > b.lines || f.Complexity > b.complexity }

// judge returns the functions over a bound that the allow-list does not
// name, longest first, and the allow-list's lines that name a function of
// a measured file that is not over a bound (gone, renamed, or split). An
// exception for a file that was not measured is left alone: the check of a
// part of the tree says nothing about the rest.
func (b bounds) judge(funcs []fn, allowed allowList) (over []fn, stale []exception) {
	measured := map[string]bool{}
	used := map[string]bool{}
	for _, f := range funcs {
		measured[f.File] = true
		if !b.exceeded(f) {
			continue
		}
		k := allowed.key(f.File, f.Name)
		if _, ok := allowed[k]; ok {
			used[k] = true
			continue
		}
		over = append(over, f)
	}
	sort.SliceStable(over, func(i, j int) bool { return over[i].Lines > over[j].Lines })
	for k, e := range allowed {
		if measured[e.file] && !used[k] {
			stale = append(stale, e)
		}
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].line < stale[j].line })
	return over, stale
}

// printSummary prints the n longest and the n most complex functions and
// the distribution of both measures: what a bound is chosen from.
func printSummary(w io.Writer, funcs []fn, n int) {
	byLines := append([]fn(nil), funcs...)
	sort.SliceStable(byLines, func(i, j int) bool { return byLines[i].Lines > byLines[j].Lines })
	byComplexity := append([]fn(nil), funcs...)
	sort.SliceStable(byComplexity, func(i, j int) bool { return byComplexity[i].Complexity > byComplexity[j].Complexity })
	fmt.Fprintf(w, "%d functions\n\nlongest:\n", len(funcs))
	for _, f := range byLines[:min(n, len(byLines))] {
		fmt.Fprintf(w, "  %4d lines  complexity %3d  %s %s\n", f.Lines, f.Complexity, f.Pos, f.Name)
	}
	fmt.Fprintf(w, "\nmost complex:\n")
	for _, f := range byComplexity[:min(n, len(byComplexity))] {
		fmt.Fprintf(w, "  complexity %3d  %4d lines  %s %s\n", f.Complexity, f.Lines, f.Pos, f.Name)
	}
	fmt.Fprintf(w, "\nfunctions above a bound:\n")
	for _, limit := range []int{15, 20, 25, 30, 40, 50} {
		fmt.Fprintf(w, "  complexity > %2d: %d\n", limit, countOver(funcs, func(f fn) int { return f.Complexity }, limit))
	}
	for _, limit := range []int{60, 80, 100} {
		fmt.Fprintf(w, "  lines > %3d: %d\n", limit, countOver(funcs, func(f fn) int { return f.Lines }, limit))
	}
}

func countOver(funcs []fn, measure func(fn) int, limit int) int {
	n := 0
	for _, f := range funcs {
		if measure(f) > limit {
			n++
		}
	}
	return n
}
