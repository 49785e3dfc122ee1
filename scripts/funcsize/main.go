// Command funcsize holds every Go function of the tree to two bounds: its
// length in lines and its cyclomatic complexity. A function that reads at
// once is one a reviewer can hold in mind while judging whether a fault
// does what it says; the bounds keep the functions that grow one branch at
// a time from growing past that without anyone deciding it.
//
//	go run ./scripts/funcsize [-lines 100] [-complexity 30] [-allow FILE] [-list N] [PATH ...]
//
// A PATH is a file, a folder, or a folder followed by /... for everything
// under it (the default is ./...). Folders named testdata or vendor, and
// those whose name starts with . or _, are skipped, as the go tool skips
// them. Test files are measured only with -tests: the bounds are for the
// code that injects faults and judges histories; a test is one story told
// top to bottom, often around a table, and is held to them by review.
//
// The allow-list (-allow) names each exception and why, one a line:
//
//	scenarios/catalogue.go catalogue  data table: one entry per scenario
//
// the file's path from the repository root (slash-separated), the
// function's name (Type.Method for a method), then the reason, which must
// not be empty. An exception that names no function any more is an error
// too, so the list shrinks as the code does. Lines starting with # are
// comments.
//
// The complexity is counted as gocyclo counts it: 1, plus one for each if,
// for, range, case and select case other than default, and each && and ||.
// A function literal's branches count toward the function that holds it,
// as its lines do: it is read as part of it.
//
// The exit code is 0 when every function is within the bounds, 1 when one
// is not (each is printed, longest first), 2 when the command could not
// run (a file that does not parse, a bad allow-list).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: the test calls it.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("funcsize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxLines := fs.Int("lines", 100, "the most lines a function may have, from its func keyword to its closing brace")
	maxComplexity := fs.Int("complexity", 30, "the highest cyclomatic complexity a function may have")
	allowPath := fs.String("allow", "", "the allow-list file: `path Func reason` a line")
	tests := fs.Bool("tests", false, "measure _test.go files too")
	list := fs.Int("list", 0, "print the N longest and the N most complex functions, and the distribution, and exit 0")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	roots := fs.Args()
	if len(roots) == 0 {
		roots = []string{"./..."}
	}
	funcs, err := measureAll(roots, *tests)
	if err != nil {
		fmt.Fprintln(stderr, "funcsize:", err)
		return 2
	}
	if *list > 0 {
		printSummary(stdout, funcs, *list)
		return 0
	}
	var allowed allowList
	if *allowPath != "" {
		if allowed, err = readAllowList(*allowPath); err != nil {
			fmt.Fprintln(stderr, "funcsize:", err)
			return 2
		}
	}
	b := bounds{lines: *maxLines, complexity: *maxComplexity}
	over, stale := b.judge(funcs, allowed)
	for _, f := range over {
		fmt.Fprintf(stdout, "%s: %s is %d lines, complexity %d (bounds: %d lines, complexity %d)\n",
			f.Pos, f.Name, f.Lines, f.Complexity, b.lines, b.complexity)
	}
	for _, a := range stale {
		fmt.Fprintf(stdout, "%s:%d: the allow-list names %s %s, which is not over a bound any more (or is gone): remove the line\n",
			*allowPath, a.line, a.file, a.name)
	}
	if len(over) > 0 || len(stale) > 0 {
		fmt.Fprintf(stdout, "funcsize: %d function(s) over a bound, %d stale allow-list line(s)\n", len(over), len(stale))
		return 1
	}
	return 0
}
