package reports

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Limits that keep a report of a pathological run readable.
const (
	// MaxZooms is how many violations get a close-up timeline of their own;
	// the overview shows every violation regardless.
	MaxZooms = 30
	// maxListed is how many violations index.html lists in words.
	maxListed = 500
)

// File names of the figures (each as .png and .svg) and the page.
const (
	TimelineFile = "timeline"
	LatencyFile  = "latency"
	RateFile     = "rate"
	IndexFile    = "index.html"
)

// ZoomFile is the base name of the close-up of violation n (1-based).
func ZoomFile(n int) string { return fmt.Sprintf("timeline-violation-%d", n) }

// PorcupineFile is the porcupine view of a key, with the key made safe
// for a file name.
func PorcupineFile(key string) string {
	return "porcupine-" + unsafeChars.ReplaceAllString(key, "_") + ".html"
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// Render writes the report of the history src, as its check res judged
// it, into dir: results.json (in the canonical form of Normalize, with the
// explanations and the fault sizes), the timeline (an overview and a
// close-up per violation), latency and rate plots as PNG and SVG,
// porcupine's view of each non-linearizable key (those the check kept:
// checker.Config.Views), and the page that ties them together. rec is the
// run's record (history.jsonl and run.json are the caller's).
//
// res is what checker.Check returned for src: the report draws what the
// check saw (res.Seen) and reads the history once more, event by event,
// for what only the figures need, so that the report of a run of any
// length costs what its figures do, not what its history does. A check
// cut short before it read the whole history (its time ran out) saw part
// of it: the report reads the rest of what it needs first.
func Render(ctx context.Context, dir string, rec Record, src history.Source, res checker.Result) (Results, error) {
	return render(ctx, dir, rec, src, res, nil)
}

// render is Render, with what a digest gathered while the check read the
// history (nil: nothing).
func render(ctx context.Context, dir string, rec Record, src history.Source, res checker.Result, g *Digest) (Results, error) {
	if !g.usable(res) {
		g = nil
	}
	if !res.Seen.Complete {
		seen, err := seeAll(ctx, src, res.Seen)
		if err != nil {
			return Results{}, fmt.Errorf("render: %w", err)
		}
		res.Seen = seen
	}
	v := newView(rec, Normalize(res), src)
	out := v.results()
	// results.json is part of the report: write it in its canonical form,
	// so that the run's file and a rebuilt one are the same.
	// One pass over the holds writes them and scans them (scanHolds),
	// and gathers the overview's marks of them ahead (holdsAhead).
	see := v.scanHold
	ahead := v.holdsAhead(g)
	if ahead != nil {
		see = func(h checker.Hold) { v.scanHold(h); ahead.add(h) }
	}
	if err := writeResultsWith(dir, out, see); err != nil {
		return out, fmt.Errorf("render: %w", err)
	}
	zoomed := v.zoomed()
	wins, err := v.gather(ctx, zoomed, g, ahead)
	if err != nil {
		return out, fmt.Errorf("render: %w", err)
	}
	if err := removeOld(dir); err != nil {
		return out, err
	}
	defer v.pixels.free()
	if err := v.drawTimelines(ctx, dir, wins, zoomed); err != nil {
		return out, err
	}
	if err := v.drawPlots(ctx, dir); err != nil {
		return out, err
	}
	stories, err := v.drawStories(ctx, dir)
	if err != nil {
		return out, err
	}
	porc, err := v.writePorcupine(ctx, dir)
	if err != nil {
		return out, err
	}
	return out, v.writeIndex(dir, porc, stories)
}

// seeAll is s, what a check cut short saw of the history src, completed
// by a pass over all of it.
func seeAll(ctx context.Context, src history.Source, s checker.Seen) (checker.Seen, error) {
	s.Events, s.End, s.Clients, s.Nemesis, s.ClientFaults = 0, 0, false, nil, nil
	truncated, err := src.Each(ctx, func(op *history.Op) bool {
		s.Add(op)
		return true
	})
	s.Truncated, s.Complete = truncated, err == nil
	return s, err
}

// results is what results.json says of the check: the verdicts and
// findings (normalized), the explanations and the fault sizes.
func (v *runView) results() Results {
	return Results{Meta: v.meta, Result: v.res, Why: v.why, Sizes: faultSizes(v.faults, v.res.Seen.ClientFaults, v.rec)}
}

// saveStep draws one figure into dir, as base.png and base.svg, unless
// ctx is done, on the pixels the report's figures share.
func (v *runView) saveStep(ctx context.Context, dir, base string, w, h vg.Length, fig func(draw.Canvas)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("render %s: %w", base, err)
	}
	if err := saveFigureOn(&v.pixels, dir, base, w, h, fig); err != nil {
		return fmt.Errorf("render %s: %w", base, err)
	}
	return nil
}

// drawTimelines draws the overview (wins[0]) and the close-up of each
// violation in zoomed (wins[k+1] of zoomed[k]).
func (v *runView) drawTimelines(ctx context.Context, dir string, wins []window, zoomed []int) error {
	w, h, fig, _ := v.timeline(wins[0])
	if err := v.saveStep(ctx, dir, TimelineFile, w, h, fig); err != nil {
		return err
	}
	for k, i := range zoomed {
		w, h, fig, _ := v.timeline(wins[k+1])
		if err := v.saveStep(ctx, dir, ZoomFile(i+1), w, h, fig); err != nil {
			return err
		}
	}
	return nil
}

// drawPlots draws the latency and rate plots.
func (v *runView) drawPlots(ctx context.Context, dir string) error {
	w, h, fig := v.latency()
	if err := v.saveStep(ctx, dir, LatencyFile, w, h, fig); err != nil {
		return err
	}
	w, h, fig = v.rate()
	return v.saveStep(ctx, dir, RateFile, w, h, fig)
}

// writeIndex writes index.html.
func (v *runView) writeIndex(dir string, porc []porcupineLink, stories []storyRow) error {
	page, err := v.indexPage(dir, porc, stories)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, IndexFile), bytes.NewReader(page)); err != nil {
		return fmt.Errorf("render index: %w", err)
	}
	return nil
}

// zoomed lists the violations (indexes) that get a close-up, MaxZooms at
// most: the most telling first (see rank), the longest of those first,
// then in the order of the list.
// The first is the one the report shows next to the overview.
func (v *runView) zoomed() []int {
	out := MostTelling(v.res.Violations)
	return out[:min(len(out), MaxZooms)]
}

// MostTelling returns the indexes of vs, the most telling first: by rank
// (a broken promise, then a lock that stopped working, then damage to the
// protected data, then harmless findings), the longest first among equals
// (the easiest to see), then in the order of vs.
func MostTelling(vs []checker.Violation) []int {
	out := make([]int, len(vs))
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(a, b int) int {
		va, vb := vs[a], vs[b]
		return cmp.Or(cmp.Compare(rank(va), rank(vb)), cmp.Compare(vb.End-vb.Start, va.End-va.Start))
	})
	return out
}

// rank orders findings by how much they tell a reader about the lock: a
// broken promise (two holders, a release of someone else's lock) first,
// then a lock that stopped working, then damage to the protected resource,
// then harmless findings.
func rank(vi checker.Violation) int {
	if !vi.Fatal {
		return 9
	}
	switch vi.Kind {
	case checker.KindOverlap:
		return 0
	case checker.KindForeignRelease, checker.KindLostLease:
		return 1 // the lock broke its promise to one holder
	case checker.KindNonLinearizable:
		return 2
	case checker.KindUnavailable:
		return 3
	case checker.KindLostUpdate:
		return 4
	}
	return 5
}

// zoomWindow is the close-up of violation i: the span from the earliest to
// the latest of its events (the acquires of an overlap, the lease a stale
// write outlived) with a quarter of that on each side, at least 100 ms (a
// busy lock holds for a few milliseconds: a wider window would blur the
// holds into each other). Events more than 30 s away are left out of the
// span: the picture is about the moment.
func zoomWindow(v *runView, i int, vi checker.Violation) window {
	lo, hi := vi.Start, max(vi.End, vi.Start)
	const near = 30 * int64(time.Second)
	for _, ix := range vi.Events {
		op, _, ok := v.event(ix)
		if !ok {
			continue
		}
		if t := op.Time; t >= vi.Start-near && t <= hi+near {
			lo, hi = min(lo, t), max(hi, t)
		}
	}
	pad := min(max(100*int64(time.Millisecond), (hi-lo)/4), 5*int64(time.Second))
	vc := vi
	return window{
		From: max(0, lo-pad), To: min(v.end, hi+pad), Zoom: true, Highlight: &vc,
		Title: fmt.Sprintf("%s %d: %s %s, %s — lock %s — %s", findingWord(vi), i+1, vi.Kind, vi.Key,
			span(vi), orSome(v.meta.Lock, "?"), verdictWord(v.res.Verdict)),
	}
}

func findingWord(vi checker.Violation) string {
	if vi.Fatal {
		return "violation"
	}
	return "finding"
}

// removeOld deletes close-ups and porcupine views left by an earlier
// render of the same directory, which may have had more violations.
func removeOld(dir string) error {
	for _, pat := range []string{"timeline-violation-*.png", "timeline-violation-*.svg", "porcupine-*.html", "story-*.png", "story-*.svg"} {
		old, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return fmt.Errorf("render: %w", err)
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("render: remove stale %s: %w", filepath.Base(f), err)
			}
		}
	}
	return nil
}

type porcupineLink struct {
	Key, Label, File, Err string
}

// writePorcupine writes the check's porcupine view of each
// non-linearizable key. A view that cannot be drawn is reported on the
// page, not fatal: the rest of the report is still worth having.
func (v *runView) writePorcupine(ctx context.Context, dir string) ([]porcupineLink, error) {
	porc := make([]porcupineLink, 0, len(v.res.NonLinearizableKeys))
	for _, key := range v.res.NonLinearizableKeys {
		if err := ctx.Err(); err != nil {
			return porc, fmt.Errorf("render porcupine view of %s: %w", key, err)
		}
		porc = append(porc, v.porcupineView(dir, key))
	}
	return porc, nil
}

// porcupineView writes the check's porcupine view of key.
func (v *runView) porcupineView(dir, key string) porcupineLink {
	l := porcupineLink{Key: key, Label: key, File: PorcupineFile(key)}
	if key == "" {
		l.Label = "the protected counter"
	}
	view, ok := v.res.View(key)
	switch n := v.res.Seen.Events; {
	case n > checker.MaxViewEvents:
		l.File, l.Err = "", fmt.Sprintf("not drawn: the history has %d events, more than the %d porcupine's view is drawn from; the timeline and the list above show the violations", n, checker.MaxViewEvents)
		return l
	case !ok:
		l.File, l.Err = "", "not drawn: the check kept no porcupine view of it"
		return l
	}
	var buf bytes.Buffer
	if err := view.WriteHTML(&buf); err != nil {
		l.Err = "could not draw: " + err.Error()
		l.File = ""
		return l
	}
	if err := writeAtomic(filepath.Join(dir, l.File), bytes.NewReader(buf.Bytes())); err != nil {
		l.Err, l.File = err.Error(), ""
	}
	return l
}

// Normalize returns res in a canonical form, so that checking the same
// history twice writes byte-identical results.json: violations by time,
// holds by start (checker.CompareHolds), keys sorted, and empty lists as
// [] rather than null.
// res is not modified.
func Normalize(res checker.Result) checker.Result {
	res.Violations = slices.Clone(res.Violations)
	slices.SortStableFunc(res.Violations, func(a, b checker.Violation) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), cmp.Compare(a.Checker, b.Checker),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key), slices.Compare(a.Processes, b.Processes))
	})
	if !res.HoldsInFile() { // holds in a file come in this order already
		res.Holds = slices.Clone(res.Holds)
		slices.SortStableFunc(res.Holds, checker.CompareHolds)
	}
	res.NonLinearizableKeys = slices.Compact(slices.Sorted(slices.Values(res.NonLinearizableKeys)))
	if res.Violations == nil {
		res.Violations = []checker.Violation{}
	}
	if res.Checkers == nil {
		res.Checkers = map[string]checker.CheckResult{}
	}
	if res.Counts == nil {
		res.Counts = map[string]map[string]int{}
	}
	return res
}

// WriteResults normalizes res and writes results.json without drawing
// the report: for a run whose check was cut short. Render writes it for
// every other run, with the explanations and the fault sizes.
func WriteResults(dir string, meta RunMeta, res checker.Result) (Results, error) {
	out := Results{Meta: meta, Result: Normalize(res)}
	if err := writeResultsFile(dir, out); err != nil {
		return out, err
	}
	return out, nil
}

// ReadResults reads dir/results.json.
func ReadResults(dir string) (Results, error) {
	var r Results
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return r, fmt.Errorf("read results: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", filepath.Join(dir, ResultsFile), err)
	}
	return r, nil
}

// --- index.html ---

//go:embed index.html.tmpl
var indexTmplText string

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"join":    strings.Join,
	"fmtTime": fmtTime,
}).Parse(indexTmplText))

type checkerRow struct {
	Name, Expected, Observed, Class string
	Details                         template.HTML // sentences, terms linked (LinkTerms)
	Mismatch                        bool
}

type violationRow struct {
	N                   int
	Kind, Checker, Zoom string
	Text                template.HTML // in words, terms linked (LinkTerms)
	Events              string
}

type zoomRow struct {
	N        int
	What     string // violation or finding
	PNG, SVG string
}

type countRow struct {
	F                     string
	OK, Fail, Info, Total int
}

type indexData struct {
	Meta                  RunMeta
	Lock                  string
	Verdict, VerdictClass string
	Headline              template.HTML
	Stories               []storyRow // the story of the most telling finding of each kind
	HasExpected           bool
	Checkers              []checkerRow
	Evidence, Unmet       []template.HTML // what the run exercised; required exposure it did not reach
	Violations            []violationRow
	MoreViolations        int
	Fatal, Harmless       int // violations that make the run invalid, and the rest
	Zooms                 []zoomRow
	ZoomsLeftOut          bool
	Porcupine             []porcupineLink
	// Faults are the faults and the client pauses, grouped (GroupFaults,
	// GroupClientPauses); TTL and Drift the scale their sizes are given in
	// (empty when the run recorded no configuration).
	Faults          []FaultGroup
	TTL, Drift      string
	Counts          []countRow
	Start, Duration string
	Config          []ConfigRow
	Files           []FileGroup
	Log             string // the run's log (LogFile), when it has one
	Glossary        []Term
}

func verdictClass(v checker.Verdict) string {
	switch v {
	case checker.Valid:
		return "valid"
	case checker.Invalid:
		return "invalid"
	}
	return "unknown"
}

func (v *runView) indexPage(dir string, porc []porcupineLink, stories []storyRow) ([]byte, error) {
	d := indexData{Stories: stories,
		Meta: v.meta, Lock: orSome(v.meta.Lock, "?"), Verdict: verdictWord(v.res.Verdict),
		VerdictClass: verdictClass(v.res.Verdict), Porcupine: porc, HasExpected: len(v.meta.Expected) > 0,
		Evidence: linkAll(Evidence(v.res.Coverage)), Unmet: linkAll(v.res.Vacuous), Glossary: Glossary,
	}
	v.indexRun(&d)
	d.Checkers = v.checkerRows()
	v.indexViolations(&d)
	d.Headline = LinkTerms(v.headline())
	v.indexFaults(&d)
	d.Counts = v.countRows()
	files, err := indexFiles(dir)
	if err != nil {
		return nil, err
	}
	d.Files = GroupFiles(files)
	if slices.Contains(files, LogFile) {
		d.Log = LogFile
	}
	var buf bytes.Buffer
	if err := indexTmpl.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("render index: %w", err)
	}
	return buf.Bytes(), nil
}

// indexRun fills in when the run began, how long it lasted and its
// configuration.
func (v *runView) indexRun(d *indexData) {
	if !v.meta.Start.IsZero() {
		d.Start = v.meta.Start.UTC().Format("2006-01-02 15:04:05 MST")
	}
	dur := v.meta.Duration
	if dur == 0 {
		dur = time.Duration(v.end)
	}
	d.Duration = dur.Round(time.Millisecond).String()
	if len(v.meta.Config) > 0 {
		d.Config = ConfigRows(v.meta.Config)
	}
}

// checkerRows are the checkers' verdicts, with what the scenario expected.
func (v *runView) checkerRows() []checkerRow {
	names := map[string]bool{}
	for n := range v.res.Checkers {
		names[n] = true
	}
	for n := range v.meta.Expected {
		names[n] = true
	}
	var rows []checkerRow
	for _, n := range slices.Sorted(maps.Keys(names)) {
		r := checkerRow{Name: n, Expected: v.meta.Expected[n], Observed: "—", Class: "unknown"}
		if cr, ok := v.res.Checkers[n]; ok {
			r.Observed, r.Class = string(cr.Verdict), verdictClass(cr.Verdict)
			r.Details = LinkTerms(checkerSentences(cr))
		} else if n == "verdict" || n == "overall" {
			r.Observed, r.Class = string(v.res.Verdict), verdictClass(v.res.Verdict)
		}
		r.Mismatch = r.Expected != "" && r.Expected != r.Observed
		rows = append(rows, r)
	}
	return rows
}

// indexViolations fills in the violations in words, their close-ups in
// the order of zoomed (the most telling first, shown next to the
// overview), and how many are fatal.
func (v *runView) indexViolations(d *indexData) {
	zoomed := map[int]bool{}
	for _, i := range v.zoomed() {
		zoomed[i] = true
	}
	for i, vi := range v.res.Violations {
		if i >= maxListed {
			d.MoreViolations = len(v.res.Violations) - maxListed
			break
		}
		r := violationRow{N: i + 1, Kind: vi.Kind, Checker: vi.Checker, Text: LinkTerms(v.violationWords(i)), Events: eventList(vi.Events)}
		if zoomed[i] {
			r.Zoom = ZoomFile(i+1) + ".png"
		}
		d.Violations = append(d.Violations, r)
	}
	for _, i := range v.zoomed() {
		vi := v.res.Violations[i]
		d.Zooms = append(d.Zooms, zoomRow{N: i + 1, What: findingWord(vi), PNG: ZoomFile(i+1) + ".png", SVG: ZoomFile(i+1) + ".svg"})
	}
	d.ZoomsLeftOut = len(v.res.Violations) > MaxZooms
	for _, vi := range v.res.Violations {
		if vi.Fatal {
			d.Fatal++
		} else {
			d.Harmless++
		}
	}
}

// eventList names a violation's events, the first eight: "#12 #15 …".
func eventList(events []int64) string {
	if len(events) == 0 {
		return ""
	}
	ev := make([]string, 0, min(len(events), 8))
	for j, e := range events {
		if j == 8 {
			ev = append(ev, "…")
			break
		}
		ev = append(ev, fmt.Sprintf("#%d", e))
	}
	return strings.Join(ev, " ")
}

// indexFaults fills in the faults and the client pauses, grouped, with
// their sizes against the lock's TTL when the record says it.
func (v *runView) indexFaults(d *indexData) {
	scale, scaled := ScaleOf(v.rec)
	if scaled && scale.TTL > 0 {
		d.TTL = fmtLength(scale.TTL)
		if scale.Drift > 0 {
			d.Drift = fmtLength(scale.Drift)
		}
	}
	d.Faults = append(GroupFaults(v.faults, scale, scaled, v.res.Coverage),
		GroupClientPauses(v.res.Seen.ClientFaults, scale, scaled, v.res.Coverage.Pauses)...)
	for i := range d.Faults {
		if g := &d.Faults[i]; len(g.Items) > maxListed {
			g.Items = g.Items[:maxListed]
		}
	}
}

// countRows are the completions of each f, by outcome.
func (v *runView) countRows() []countRow {
	var rows []countRow
	for _, f := range slices.Sorted(maps.Keys(v.res.Counts)) {
		c := v.res.Counts[f]
		r := countRow{F: f, OK: c[string(history.OK)], Fail: c[string(history.Fail)], Info: c[string(history.Info)]}
		for _, n := range c {
			r.Total += n
		}
		rows = append(rows, r)
	}
	return rows
}

// indexFiles lists the files of the run directory, index.html among them.
func indexFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("render index: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	if !slices.Contains(files, IndexFile) {
		files = append(files, IndexFile)
		slices.Sort(files)
	}
	return files, nil
}

// overlapCause explains an overlap by the foreign release that let the
// second holder in, when there is one: the release on the same key by a
// third process, during the first holder's claim, just before the second
// acquired.
func (v *runView) overlapCause(ov checker.Violation) string {
	if ov.Kind != checker.KindOverlap {
		return ""
	}
	var best *checker.Violation
	for i := range v.res.Violations {
		fr := &v.res.Violations[i]
		if fr.Kind != checker.KindForeignRelease || fr.Key != ov.Key || fr.Start > ov.Start {
			continue
		}
		if len(fr.Processes) < 2 || !slices.Contains(ov.Processes, fr.Processes[1]) {
			continue
		}
		if best == nil || fr.Start > best.Start {
			best = fr
		}
	}
	if best == nil {
		return ""
	}
	return ViolationWords(*best, v.faults)
}

// headline is the one sentence a newcomer reads first.
func (v *runView) headline() string {
	lock := orSome(v.meta.Lock, "the lock")
	if lock != "the lock" {
		lock = "Lock " + lock
	}
	switch v.res.Verdict {
	case checker.Invalid:
		if z := v.zoomed(); len(z) > 0 && v.res.Violations[z[0]].Fatal {
			vi := v.res.Violations[z[0]]
			words := ViolationWords(vi, v.faults)
			switch vi.Checker {
			case "lock-promise":
				if why := v.why[z[0]]; why != "" {
					words = strings.TrimSuffix(words, ".") + ". Why: " + why
				} else if cause := v.overlapCause(vi); cause != "" {
					words = strings.TrimSuffix(words, ".") + ". Why: " + cause
				}
				return fmt.Sprintf("%s broke its promise: %s", lock, words)
			case "liveness":
				return fmt.Sprintf("%s stopped being available: %s", lock, words)
			default:
				return fmt.Sprintf("%s kept its promise, but the data it protects was damaged: %s", lock, words)
			}
		}
		return lock + " failed a check: see below."
	case checker.Valid:
		s := fmt.Sprintf("%s kept its promise: %d holds, %d faults, no violation", lock, v.res.NumHolds(), len(v.faults))
		if n := len(v.res.Violations); n > 0 {
			s += fmt.Sprintf(" (%d harmless finding(s), listed below)", n)
		}
		return s + "."
	}
	if v.res.Reason != "" {
		return "No verdict: " + v.res.Reason
	}
	var reasons []string
	for _, n := range slices.Sorted(maps.Keys(v.res.Checkers)) {
		if cr := v.res.Checkers[n]; cr.Verdict != checker.Valid && cr.Reason != "" {
			reasons = append(reasons, n+": "+cr.Reason)
		}
	}
	if len(reasons) == 0 {
		return "No verdict: the checkers could not decide."
	}
	return "No verdict: " + strings.Join(reasons, "; ")
}

// fmtStat writes a checker statistic: whole numbers as they are, others
// with four significant digits.
func fmtStat(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}
