package reports

import (
	"context"

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
	check := func(ctx context.Context, ops []history.Op) checker.Result { return checker.Check(ctx, ops, cfg) }
	return rebuild(ctx, dir, check, checker.VisualizeKey)
}
