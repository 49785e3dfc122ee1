package reports

import (
	"context"
	"path/filepath"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Render writes every plot and index.html of one run into dir: the
// timeline (an overview and a close-up per violation), latency and rate
// plots as PNG and SVG, porcupine's view of each non-linearizable key, and
// the page that ties them together. It also (re)writes results.json, in
// the canonical form of Normalize; history.jsonl and run.json are the
// caller's.
func Render(ctx context.Context, dir string, meta RunMeta, ops []history.Op, res checker.Result) error {
	return render(ctx, dir, meta, ops, res, checker.VisualizeKey)
}

// Rebuild re-checks a stored run from its history alone, writes
// results.json and re-renders the report. It uses dir/run.json when there
// is one, and otherwise derives what the history and the directory tell:
// test name, start time, nemeses, duration. Checking is deterministic and
// the result is normalized, so rebuilding a run reproduces its
// results.json byte for byte.
func Rebuild(ctx context.Context, dir string, cfg checker.Config) (Results, error) {
	check := func(ctx context.Context, path string) (checker.Result, error) {
		return checker.Check(ctx, history.File(path), cfg)
	}
	return rebuild(ctx, dir, check, checker.VisualizeKey)
}

// RenderFile is Render of the history file at path, read event by event:
// the report of a run of any length costs what its figures do, not what
// its history does (see digest). It returns what it wrote to
// results.json, explanations and fault sizes included.
func RenderFile(ctx context.Context, dir string, meta RunMeta, path string, res checker.Result) (Results, error) {
	return renderFrom(ctx, dir, meta, false, fileSource(path), loadFile(path), res, checker.VisualizeKey)
}

// RenderStored re-renders the stored run in dir from the result res of
// checking its history again: from ops when the history was read whole
// (one that is not a regular file), else from dir's history.jsonl, read
// event by event. It uses dir/run.json when there is one and derives the
// metadata from the history otherwise (see Rebuild), and returns what it
// wrote to results.json.
func RenderStored(ctx context.Context, dir string, ops []history.Op, res checker.Result) (Results, error) {
	meta, ok, err := ReadMeta(dir)
	if err != nil {
		return Results{}, err
	}
	if ops != nil {
		load := func(context.Context) ([]history.Op, error) { return ops, nil }
		return renderFrom(ctx, dir, meta, !ok, sliceSource(ops), load, res, checker.VisualizeKey)
	}
	path := filepath.Join(dir, HistoryFile)
	return renderFrom(ctx, dir, meta, !ok, fileSource(path), loadFile(path), res, checker.VisualizeKey)
}
