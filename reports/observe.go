package reports

import (
	"context"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Digest is what the report gathers of a history while its check reads
// it (checker.Config.Observe: See), so that the report of a stored
// history costs one decode of it, not two: the digest of the calls and
// latencies, and the write marks of the overview timeline. The overview
// spans the history up to its last event (history.Source.LastTime); a
// check whose findings reach beyond it (a lease of a crashed holder that
// outlives the history), or that did not give the digest every event,
// leaves the report to read the history again, as Render does; so do a
// violation's close-up and an event a violation names that the check did
// not keep, which are known only once the check is done.
type Digest struct {
	d     *digest
	marks map[spanKey]*marks
	mp    *markPass
	n     int // events seen
}

// NewDigest is a digest to give the events of a history whose last event
// is at time end (its overview timeline: [0, end]).
func NewDigest(end int64) *Digest {
	ms, mp := newMarkPass([]spanKey{window{From: 0, To: end}.key()})
	d := newDigest(nil, end)
	d.marks = mp
	return &Digest{d: d, marks: ms, mp: mp}
}

// See takes the next event of the history.
func (g *Digest) See(op *history.Op) {
	g.n++
	g.d.see(op) // and g.mp, from the digest's calls
}

// marksOf is the marks g gathered of window k, or nil (also for a nil g).
func (g *Digest) marksOf(k spanKey) *marks {
	if g == nil {
		return nil
	}
	return g.marks[k]
}

// usable reports whether g saw every event res's check saw, all of the
// history: else the report goes through the history itself.
func (g *Digest) usable(res checker.Result) bool {
	return g != nil && res.Seen.Complete && g.n == res.Seen.Events
}

// RenderDigested is Render of a history whose check gave g its events:
// the report reads the history again only for what g could not gather.
func RenderDigested(ctx context.Context, dir string, rec Record, src history.Source, res checker.Result, g *Digest) (Results, error) {
	return render(ctx, dir, rec, src, res, g)
}
