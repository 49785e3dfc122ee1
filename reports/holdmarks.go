package reports

import (
	"math"

	"github.com/lockharness/lockharness/checker"
)

// holdMarks are a timeline window's holds as it draws them: bars merged
// per pixel column, process and key colour (barCoverage), and the leases
// that expired while held, one per pixel column and process. They are
// gathered from the holds in order of start, one at a time, so that a
// window of a million holds costs what its pixels do, and the holds of a
// long run need not be in memory (checker.Result.EachHold). Keys that
// share a colour (more keys than colours) share a bar: it shades the time
// the process held any of them, and costs a row's pixels per colour, not
// per key, however many keys a run has.
type holdMarks struct {
	holders  map[int]*int // holds in the window, by process
	keys     *windowKeys
	bars     map[barKey]*barCoverage
	expiries []expiry
	expired  map[markKey]bool
	// byProc is, by process number (below maxOpenSlots), what of holders
	// and bars a process has, and keysSeen the keys put in keys lately, so
	// that a hold looks up no map (a long run has millions).
	byProc   []procHoldMarks
	keysSeen recentKeys
}

// procHoldMarks is a process's count in holdMarks.holders and its bars
// in holdMarks.bars, by colour (nil until it has one).
type procHoldMarks struct {
	n    *int
	bars []*barCoverage
}

type barKey struct {
	proc   int
	colour int // index into keyColours
}

// expiry is a lease that expired while its process held it: where the
// timeline draws a tick.
type expiry struct {
	x    float64
	proc int
}

func newHoldMarks() *holdMarks {
	return &holdMarks{holders: map[int]*int{}, keys: newWindowKeys(), bars: map[barKey]*barCoverage{}, expired: map[markKey]bool{}}
}

// addHold records h, whose bar ends at end and is drawn in the key colour
// colour, in the window of m. Holds come in order of start.
func (m *marks) addHold(h checker.Hold, end int64, colour int) {
	if end < m.from || h.Start > m.to {
		return
	}
	hm := m.holds
	*hm.count(h.Process)++
	if !hm.keysSeen.seen(h.Key) {
		hm.keys.add(h.Key)
	}
	xmin, xmax := seconds(m.from), seconds(m.to)
	hm.bar(h.Process, colour, xmin, xmax, m.res).add([2]float64{seconds(h.Start), seconds(end)})
	if h.Deadline > 0 && (h.End == h.Deadline || h.End < 0) && h.Deadline >= m.from && h.Deadline <= m.to {
		x := seconds(h.Deadline)
		mk := markKey{h.Process, tkExpired, int64(math.Floor((x - xmin) / m.res))}
		if !hm.expired[mk] {
			hm.expired[mk] = true
			hm.expiries = append(hm.expiries, expiry{x, h.Process})
		}
	}
}

// procOf is process p's entry in byProc, nil for a process it does not
// keep.
func (hm *holdMarks) procOf(p int) *procHoldMarks {
	if p < 0 || p >= maxOpenSlots {
		return nil
	}
	if p >= len(hm.byProc) {
		hm.byProc = append(hm.byProc, make([]procHoldMarks, p+1-len(hm.byProc))...)
	}
	return &hm.byProc[p]
}

// count is process p's count of holds in holders, made if it has none.
func (hm *holdMarks) count(p int) *int {
	pm := hm.procOf(p)
	if pm != nil && pm.n != nil {
		return pm.n
	}
	n := hm.holders[p]
	if n == nil {
		n = new(int)
		hm.holders[p] = n
	}
	if pm != nil {
		pm.n = n
	}
	return n
}

// bar is process p's bar of colour in bars, made (newBarCoverage of
// xmin, xmax and res) if it has none.
func (hm *holdMarks) bar(p, colour int, xmin, xmax, res float64) *barCoverage {
	pm := hm.procOf(p)
	if pm != nil && pm.bars != nil && pm.bars[colour] != nil {
		return pm.bars[colour]
	}
	k := barKey{p, colour}
	b := hm.bars[k]
	if b == nil {
		b = newBarCoverage(xmin, xmax, res)
		hm.bars[k] = b
	}
	if pm != nil {
		if pm.bars == nil {
			pm.bars = make([]*barCoverage, len(keyColours))
		}
		pm.bars[colour] = b
	}
	return b
}

// barCoverage is how much of each pixel column of [xmin, xmax] (seconds,
// columns res wide) a row's bars cover, built from bars in order of start:
// overlapping bars are merged first, so that time held by two counts once.
// Only the columns touched are kept.
type barCoverage struct {
	xmin, xmax, res float64
	n               int        // columns
	cur             [2]float64 // the merged bar not yet counted
	open            bool
	cols            []int // touched columns, ascending
	cov             []float64
}

func newBarCoverage(xmin, xmax, res float64) *barCoverage {
	b := &barCoverage{xmin: xmin, xmax: xmax, res: res}
	if res > 0 && xmax > xmin {
		b.n = int(math.Ceil((xmax-xmin)/res)) + 1
	}
	return b
}

// add takes the next bar [from, to]; bars come in order of from.
func (b *barCoverage) add(iv [2]float64) {
	if b.n == 0 {
		return
	}
	iv[0], iv[1] = max(iv[0], b.xmin), min(iv[1], b.xmax)
	if iv[1] < iv[0] {
		return
	}
	if b.open && iv[0] <= b.cur[1] {
		b.cur[1] = max(b.cur[1], iv[1])
		return
	}
	b.count()
	b.cur, b.open = iv, true
}

// count adds the merged bar to the columns it covers.
func (b *barCoverage) count() {
	if !b.open {
		return
	}
	b.open = false
	lo, hi := (b.cur[0]-b.xmin)/b.res, (b.cur[1]-b.xmin)/b.res
	for c := int(lo); c <= int(hi) && c < b.n; c++ {
		l, h := max(lo, float64(c)), min(hi, float64(c+1))
		if k := len(b.cols) - 1; k >= 0 && b.cols[k] == c {
			b.cov[k] += max(0, h-l)
			continue
		}
		b.cols = append(b.cols, c)
		b.cov = append(b.cov, max(0, h-l))
	}
}

// runs are the bars to draw: touched columns side by side at the same
// level (1/8 steps of coverage, at least one eighth when anything is there,
// so that a short hold never vanishes) drawn as one. A hold several pixels
// wide comes out as one solid run; a thousand holds in a pixel come out as
// one shaded column, as light as the lock was idle.
func (b *barCoverage) runs() []run {
	b.count()
	var out []run
	for i, c := range b.cols {
		lvl := max(1, math.Round(min(b.cov[i], 1)*8)) / 8
		from, to := b.xmin+float64(c)*b.res, min(b.xmax, b.xmin+float64(c+1)*b.res)
		if c == 0 || i == 0 || b.cols[i-1] != c-1 || len(out) == 0 || out[len(out)-1].Level != lvl || out[len(out)-1].To < from {
			out = append(out, run{From: from, To: to, Level: lvl})
			continue
		}
		out[len(out)-1].To = to
	}
	return out
}
