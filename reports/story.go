package reports

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// A story is the sequence diagram of one violation, in the style of the
// figures of Kleppmann's "How to do distributed locking": the clients
// involved, the lock service and the storage are lanes; time runs left to
// right; a grant is an arrow from the lock to a client, a write an arrow
// from a client to the storage with the storage's answer, a pause a bar,
// a lease's end a dashed line. It is built from the violation's events
// and the events of the history around them (storyOf, a pure function)
// and drawn separately (story_draw.go), so that a teacher can put it on a
// slide and a test can read what it says.

// Lanes of a story.
const (
	laneClient  = "client"
	laneLock    = "lock"
	laneStorage = "storage"
)

// StoryLane is one row of a story.
type StoryLane struct {
	Kind    string // laneClient, laneLock or laneStorage
	Process int    // for a client lane
	Name    string // "client 1", "lock service (redlock on n1…n5)", "storage"
}

// Step kinds. Instants have At only; spans (a lease, a pause, a fault)
// run from At to End.
const (
	stepGrant   = "grant"   // the lock granted a client its lease (arrow lock → client)
	stepRefused = "refused" // the lock refused an acquire the violation names
	stepLease   = "lease"   // span: a client's claim, from its grant to its release or deadline
	stepExpiry  = "expiry"  // the lease's deadline passed without a release
	stepPause   = "pause"   // span: the client was paused (a GC pause)
	stepCrash   = "crash"   // the client died
	stepWrite   = "write"   // arrow client → storage, with the storage's answer
	stepRead    = "read"    // arrow storage → client, with the value read
	stepRelease = "release" // arrow client → lock
	stepRenew   = "renew"   // arrow client → lock
	stepFault   = "fault"   // span: a nemesis fault on the lock service
)

// Outcomes of a step that has an answer.
const (
	outOK       = "ok"
	outAccepted = "accepted"
	outRejected = "rejected"
	outFailed   = "failed"
	outUnknown  = "unknown"
)

// StoryStep is one thing that happened in a story.
type StoryStep struct {
	Kind    string
	Lane    int   // index into Story.Lanes: the client's lane, or the lock's for a fault or an expiry
	At, End int64 // run-clock ns; End == At for an instant
	// Label is the words beside the step ("granted, token 34"), Answer the
	// answer drawn where an arrow lands ("accepted", "rejected: token 33").
	Label, Answer string
	Outcome       string
	// Fence is the fencing token the step carried, 0 for none.
	Fence int64
	// Bad marks the step that is the violation: drawn in red.
	Bad bool
	// Event is the history index of the step's event, -1 for a step
	// derived from others (an expiry, a fault).
	Event int64
	// For is, on an expiry, the lane of the client whose lease it ends.
	For int
}

// Story is the sequence diagram of one violation.
type Story struct {
	N     int    // the violation's number in the report (1-based)
	Kind  string // the violation's kind
	Key   string
	Title string
	Lanes []StoryLane
	Steps []StoryStep // in order of At
	// From and To are the story's span of time.
	From, To int64
}

// storyLock is what a story and the assumption words need to know of the
// lock under test: its name, the system it ran on, its lease and drift
// allowance, whether it hands out fencing tokens, its nodes.
type storyLock struct {
	Name, System string
	TTL, Drift   time.Duration
	Fenced       bool
	NoLease      bool
	Nodes        []string
}

// lockOf reads what a story needs of the lock from the run's record.
func lockOf(rec Record) storyLock {
	l := storyLock{Name: rec.Lock}
	if f := rec.Facts; f != nil {
		l.System, l.TTL, l.Drift, l.Fenced, l.NoLease, l.Nodes = f.System, f.TTL, f.Drift, f.Fenced, f.NoLease, f.Nodes
	}
	return l
}

// maxStoryWrites is how many writes of one client a story shows: the
// first of its claim and the ones the violation names.
const maxStoryWrites = 2

// storyOf is the story of violation v (number n in the report) from the
// client events evs of the history around it (in order: storyWindow says
// which; they include the events v names), the run's faults and the lock.
// It shows, for each client v involves, its claim on v's key (the grant
// before its first event v names), what happened to it (pauses, crashes,
// the lease's end), its writes and its release or renew; for a violation
// of one client (a stale write, a lost lease), the client that was granted
// the key in between; and the faults on the lock in force meanwhile.
func storyOf(v checker.Violation, n int, evs []history.Op, faults []Fault, lk storyLock) Story {
	b := newStoryBuilder(v, evs, lk)
	for _, p := range b.principals() {
		b.client(p)
	}
	if len(b.procs) == 1 {
		b.successor(b.procs[0])
	}
	b.expiries()
	b.faultSteps(faults)
	return b.finish(n)
}

// storyBuilder is a story being built.
type storyBuilder struct {
	v      checker.Violation
	evs    []history.Op
	lk     storyLock
	named  map[int64]int // event index → position in evs, for the events v names
	bad    map[int64]bool
	procs  []int
	claims map[int]*history.Op // each client's claim: its grant
	s      Story
}

func newStoryBuilder(v checker.Violation, evs []history.Op, lk storyLock) *storyBuilder {
	b := &storyBuilder{v: v, evs: evs, lk: lk, named: map[int64]int{}, bad: map[int64]bool{}, claims: map[int]*history.Op{}}
	for _, e := range v.Events {
		if i, ok := slices.BinarySearchFunc(evs, e, func(op history.Op, e int64) int { return cmp.Compare(op.Index, e) }); ok {
			b.named[e] = i
		}
	}
	for _, e := range badEvents(v) {
		b.bad[e] = true
	}
	b.s = Story{Kind: v.Kind, Key: v.Key}
	b.s.Lanes = append(b.s.Lanes, StoryLane{Kind: laneLock, Name: lockLaneName(lk)})
	return b
}

// badEvents are the events of v that are the violation itself: the grant
// that made two holders, the release of someone else's lock, the stale
// write, the second of two writes of the same value, the "not held" of a
// live lease, the grant whose token went backwards; all of them for
// other kinds.
func badEvents(v checker.Violation) []int64 {
	at := func(i int) []int64 {
		if i < len(v.Events) {
			return v.Events[i : i+1]
		}
		return nil
	}
	switch v.Kind {
	case checker.KindOverlap, checker.KindForeignRelease, checker.KindLostLease, checker.KindFenceBackwards:
		return at(1)
	case checker.KindStaleWrite:
		if len(v.Events) >= 2 {
			return at(1)
		}
		return at(0)
	case checker.KindLostUpdate:
		return slices.Concat(at(1), at(3))
	}
	return v.Events
}

// lockLaneName names the lock service's lane: the lock, and its nodes
// when it has several.
func lockLaneName(lk storyLock) string {
	name := "lock service"
	if lk.Name != "" {
		name += " (" + lk.Name
		if len(lk.Nodes) > 1 {
			name += " on " + targetList(lk.Nodes, 5)
		}
		name += ")"
	}
	return name
}

// principals are the clients the story follows: those v names, at most
// two (a finding of more names the first two).
func (b *storyBuilder) principals() []int {
	var out []int
	for _, p := range b.v.Processes {
		if !slices.Contains(out, p) && len(out) < 2 {
			out = append(out, p)
		}
	}
	return out
}

// lane adds a client's lane (once) and returns its index.
func (b *storyBuilder) lane(p int) int {
	for i, l := range b.s.Lanes {
		if l.Kind == laneClient && l.Process == p {
			return i
		}
	}
	b.procs = append(b.procs, p)
	b.s.Lanes = append(b.s.Lanes, StoryLane{Kind: laneClient, Process: p, Name: clientName(p)})
	return len(b.s.Lanes) - 1
}

// storageLane returns the storage's lane, added last.
func (b *storyBuilder) storageLane() int {
	for i, l := range b.s.Lanes {
		if l.Kind == laneStorage {
			return i
		}
	}
	b.s.Lanes = append(b.s.Lanes, StoryLane{Kind: laneStorage, Name: "storage"})
	return len(b.s.Lanes) - 1
}

// anchor is where client p's part of the story ends: the latest event of
// p that v names (v's end when it names none).
func (b *storyBuilder) anchor(p int) (first, last int64) {
	first, last = -1, -1
	for _, i := range b.named {
		if int(b.evs[i].Process) != p {
			continue
		}
		if t := b.evs[i].Time; first < 0 || t < first {
			first = t
		}
		last = max(last, b.evs[i].Time)
	}
	if first < 0 {
		return b.v.Start, max(b.v.Start, b.v.End)
	}
	return first, last
}

// claimOf is client p's grant on the key at or before t: the latest.
func (b *storyBuilder) claimOf(p int, t int64) *history.Op {
	var g *history.Op
	for i := range b.evs {
		op := &b.evs[i]
		if op.Time > t {
			break
		}
		if int(op.Process) == p && op.Type == history.OK && op.F == history.FAcquire && op.Key == b.v.Key {
			g = op
		}
	}
	return g
}

// storyReach is how far past the violation's start a story goes at most:
// a claim that never ended is not followed to the end of the run.
const storyReach = 5 * int64(time.Second)

// client adds client p's part of the story: from its claim's grant to the
// later of its last event v names and v's end.
func (b *storyBuilder) client(p int) {
	first, last := b.anchor(p)
	from := first
	if g := b.claimOf(p, first); g != nil {
		from = g.Time
	}
	until := min(max(last, b.v.End), max(last, b.v.Start)+storyReach)
	b.clientSpan(p, from, until)
}

// successor adds, for a violation of one client p, the client that was
// granted the key after p's claim began and before p's last event v
// names: the latest, from its grant on.
func (b *storyBuilder) successor(p int) {
	first, last := b.anchor(p)
	start := first
	if g := b.claims[p]; g != nil {
		start = g.Time
	}
	var next *history.Op
	for i := range b.evs {
		op := &b.evs[i]
		if op.Time > last {
			break
		}
		if int(op.Process) != p && op.Owner == nil && op.Type == history.OK && op.F == history.FAcquire && op.Key == b.v.Key && op.Time > start {
			next = op
		}
	}
	if next != nil {
		b.clientSpan(int(next.Process), next.Time, last)
	}
}

// clientSpan adds the steps of client p between from and until: its
// grants, pauses and crashes, writes (the first after each grant and
// those v names), releases and renews; reads and refusals only when v
// names them.
func (b *storyBuilder) clientSpan(p int, from, until int64) {
	lane := b.lane(p)
	invoked := map[string]*history.Op{}
	writes, grants := 0, 0
	skipping := false // through claims of p after its first that v does not name
	for i := range b.evs {
		op := &b.evs[i]
		if op.Time > until && op.Type == history.Invoke {
			break
		}
		mine := int(op.Process) == p && op.Owner == nil
		_, named := b.named[op.Index]
		if !mine && !(named && op.Owner != nil && int(*op.Owner) == p) {
			continue
		}
		if op.Time >= from && op.F == history.FAcquire && op.Type == history.OK {
			grants++
			skipping = grants > 1 && !named
		}
		if skipping && !named {
			if op.Type == history.Invoke {
				invoked[op.F] = op
			}
			continue
		}
		skipping = false
		if op.Type == history.Invoke {
			invoked[op.F] = op
			if op.Time >= from {
				b.invokeStep(op, lane)
			}
			continue
		}
		inv := invoked[op.F]
		delete(invoked, op.F)
		if inv == nil || inv.Time < from && op.F != history.FAcquire || op.Time < from {
			continue
		}
		// A call is named by its invocation or its completion.
		if _, ok := b.named[inv.Index]; ok {
			named = true
		}
		if op.F == history.FWrite {
			if !named && (writes >= maxStoryWrites || b.lastStep(lane, stepWrite)) {
				continue
			}
			writes++
		}
		b.completeStep(op, inv, lane, named)
	}
}

// lastStep reports whether the latest step on lane is of kind k (a second
// write in a row says nothing new).
func (b *storyBuilder) lastStep(lane int, k string) bool {
	for i := len(b.s.Steps) - 1; i >= 0; i-- {
		if st := b.s.Steps[i]; st.Lane == lane && st.Kind != stepPause {
			return st.Kind == k
		}
	}
	return false
}

// invokeStep adds what an invocation alone shows: a pause, a crash.
func (b *storyBuilder) invokeStep(op *history.Op, lane int) {
	switch op.F {
	case history.FPause:
		var d int64
		if op.Value != nil {
			d = op.Value.Duration
		}
		st := StoryStep{Kind: stepPause, Lane: lane, At: op.Time, End: op.Time + d, Event: op.Index}
		st.Label = "paused"
		if d > 0 {
			st.Label = "paused " + fmtLength(time.Duration(d))
		}
		b.s.Steps = append(b.s.Steps, st)
	case history.FCrash:
		b.s.Steps = append(b.s.Steps, StoryStep{Kind: stepCrash, Lane: lane, At: op.Time, End: op.Time, Label: "crashed", Event: op.Index})
	}
}

// completeStep adds the step of a call that completed with op.
func (b *storyBuilder) completeStep(op, inv *history.Op, lane int, named bool) {
	st := StoryStep{Lane: lane, At: op.Time, End: op.Time, Event: op.Index, Bad: b.bad[op.Index] || b.bad[inv.Index], Outcome: outcomeOf(op)}
	val := op.Value
	if val == nil {
		val = &history.Value{}
	}
	switch op.F {
	case history.FAcquire:
		if op.Type != history.OK {
			if !named {
				return
			}
			st.Kind, st.Label = stepRefused, "acquire: "+st.Outcome
			break
		}
		st.Kind, st.Fence, st.Label = stepGrant, val.Fence, grantLabel(val, b.lk)
		b.claims[int(op.Process)] = op
		b.s.Steps = append(b.s.Steps, st, b.leaseStep(op, lane))
		return
	case history.FWrite:
		st.Kind, st.At = stepWrite, inv.Time
		st.Label, st.Answer, st.Outcome, st.Fence = writeLabels(inv, op)
	case history.FRead:
		if !named {
			return
		}
		st.Kind, st.At, st.Label = stepRead, inv.Time, "read"
		if val.Counter != nil {
			st.Label = fmt.Sprintf("read %d", *val.Counter)
		}
	case history.FRelease, history.FRenew:
		st.Kind, st.At = stepRelease, inv.Time
		if op.F == history.FRenew {
			st.Kind = stepRenew
		}
		st.Label = op.F + ": " + st.Outcome
		if val.NotHeld {
			st.Label = op.F + ": not held"
		}
	default:
		return
	}
	b.s.Steps = append(b.s.Steps, st)
}

// leaseStep is the span of the claim a grant began: to its deadline, cut
// short later by a release (see finish); -1 as End for a lease without
// one.
func (b *storyBuilder) leaseStep(g *history.Op, lane int) StoryStep {
	st := StoryStep{Kind: stepLease, Lane: lane, At: g.Time, End: -1, Event: g.Index}
	if g.Value != nil && g.Value.Deadline > 0 {
		st.End = g.Value.Deadline
	}
	return st
}

func outcomeOf(op *history.Op) string {
	switch op.Type {
	case history.OK:
		return outOK
	case history.Fail:
		return outFailed
	}
	return outUnknown
}

// grantLabel is the words on a grant: its fencing token, the nodes that
// granted it (Redlock), else its lease.
func grantLabel(v *history.Value, lk storyLock) string {
	s := "granted"
	if len(v.Nodes) > 0 {
		s += " by " + targetList(v.Nodes, 5)
	}
	if v.Fence > 0 {
		return s + fmt.Sprintf(", token %d", v.Fence)
	}
	if lk.TTL > 0 && len(v.Nodes) == 0 {
		s += ", lease " + fmtLength(lk.TTL)
	}
	return s
}

// writeLabels are the words of a write (the value, its token) and of the
// storage's answer, its outcome and its token.
func writeLabels(inv, op *history.Op) (label, answer, outcome string, fence int64) {
	label = "write"
	if inv.Value != nil {
		if inv.Value.Counter != nil {
			label = fmt.Sprintf("write %d", *inv.Value.Counter)
		}
		fence = inv.Value.Fence
	}
	if fence > 0 {
		label += fmt.Sprintf(", token %d", fence)
	}
	switch {
	case op.Type == history.OK && op.Value != nil && op.Value.Rejected:
		return label, "rejected (stale token)", outRejected, fence
	case op.Type == history.OK:
		return label, "accepted", outAccepted, fence
	case op.Type == history.Fail:
		return label, "failed", outFailed, fence
	}
	return label, "unknown", outUnknown, fence
}

// expiries cuts each lease short at its client's next release and adds,
// for each that reached its deadline, the lease's end on the lock's lane.
func (b *storyBuilder) expiries() {
	var add []StoryStep
	for i := range b.s.Steps {
		l := &b.s.Steps[i]
		if l.Kind != stepLease {
			continue
		}
		for _, r := range b.s.Steps {
			if r.Kind == stepRelease && r.Lane == l.Lane && r.At >= l.At && (l.End < 0 || r.At < l.End) {
				l.End = r.At
				break
			}
		}
		if l.End < 0 {
			continue
		}
		if g := b.evs[b.named0(l.Event)]; g.Value != nil && g.Value.Deadline == l.End {
			add = append(add, StoryStep{Kind: stepExpiry, Lane: 0, For: l.Lane, At: l.End, End: l.End, Event: -1,
				Label: b.s.Lanes[l.Lane].Name + "'s lease expires"})
		}
	}
	b.s.Steps = append(b.s.Steps, add...)
}

// named0 is the position in evs of event index e (evs are in index
// order), 0 when it is not there.
func (b *storyBuilder) named0(e int64) int {
	i, _ := slices.BinarySearchFunc(b.evs, e, func(op history.Op, e int64) int { return cmp.Compare(op.Index, e) })
	return min(i, len(b.evs)-1)
}

// maxStoryFaults is how many faults a story shows.
const maxStoryFaults = 3

// faultSteps adds the faults on the lock service in force during the
// story (a client's pause is its own step), cut to the story's span.
func (b *storyBuilder) faultSteps(faults []Fault) {
	from, to := b.span()
	n := 0
	for _, f := range faults {
		if f.Family == "pause-client" || f.Family == "crash-client" || f.End < from || f.Start > to || n == maxStoryFaults {
			continue
		}
		n++
		b.s.Steps = append(b.s.Steps, StoryStep{Kind: stepFault, Lane: 0, At: max(f.Start, from), End: min(f.End, to), Label: f.Label, Event: -1})
	}
}

// span is the time the story's client steps cover.
func (b *storyBuilder) span() (from, to int64) {
	from, to = -1, 0
	for _, st := range b.s.Steps {
		if st.Kind == stepFault {
			continue
		}
		if from < 0 || st.At < from {
			from = st.At
		}
		to = max(to, st.At, st.End)
	}
	return max(from, 0), to
}

// finish orders the steps, adds the storage's lane when a step uses it,
// and titles the story.
func (b *storyBuilder) finish(n int) Story {
	s := b.s
	s.N = n
	s.From, s.To = b.span()
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Kind == stepLease && st.End < 0 {
			st.End = s.To // a lease without expiry lasts past the story
		}
	}
	for _, st := range s.Steps {
		if st.Kind == stepWrite || st.Kind == stepRead {
			b.s = s
			b.storageLane()
			s.Lanes = b.s.Lanes
			break
		}
	}
	slices.SortStableFunc(s.Steps, func(a, c StoryStep) int { return cmp.Compare(a.At, c.At) })
	b.s = s
	b.lateWrites()
	b.badWords()
	s = b.s
	s.Title = fmt.Sprintf("%s %d: %s on %s", findingWord(b.v), n, b.v.Kind, keyOr(b.v.Key))
	return s
}

// lateWrites marks the writes a client made after its lease had ended:
// the stale writes of Kleppmann's figure.
func (b *storyBuilder) lateWrites() {
	for i := range b.s.Steps {
		w := &b.s.Steps[i]
		if w.Kind != stepWrite {
			continue
		}
		var lease *StoryStep
		for j := range b.s.Steps {
			if l := &b.s.Steps[j]; l.Kind == stepLease && l.Lane == w.Lane && l.At <= w.At {
				lease = l
			}
		}
		if lease != nil && w.At > lease.End {
			w.Label += ", lease over"
		}
	}
}

// badWords says on the steps that are the violation what is wrong with
// them.
func (b *storyBuilder) badWords() {
	other := func(st StoryStep) string {
		for _, p := range b.v.Processes {
			if l := b.s.Lanes[st.Lane]; l.Kind == laneClient && p != l.Process {
				return clientName(p)
			}
		}
		return "another client"
	}
	for i := range b.s.Steps {
		st := &b.s.Steps[i]
		if !st.Bad {
			continue
		}
		switch {
		case b.v.Kind == checker.KindOverlap && st.Kind == stepGrant:
			st.Label += ", while " + other(*st) + " held it"
		case b.v.Kind == checker.KindForeignRelease && (st.Kind == stepRelease || st.Kind == stepRenew):
			st.Label += ": it was " + other(*st) + "'s lock"
		case b.v.Kind == checker.KindLostLease:
			st.Label += ", its lease still live"
		case b.v.Kind == checker.KindLostUpdate && st.Kind == stepWrite:
			st.Answer += ": an update lost"
		case b.v.Kind == checker.KindFenceBackwards && st.Kind == stepGrant:
			st.Label += ": token went backwards"
		}
	}
}
