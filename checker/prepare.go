package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// never is the end of a lease without expiry, and the return time of an
// operation whose effect may still happen (porcupine's "info" convention).
const never = math.MaxInt64

// call is one client operation: its invocation paired with its completion.
type call struct {
	proc   int // the client it acted for: the owner of a renewer thread's call
	thread int // the process that recorded it (proc, or a renewer thread)
	f      string
	key    string
	typ    history.Type // completion type; Info when the history ends first
	start  int64        // invoke time
	end    int64        // completion time; never when it never completed
	inv    int64        // history index of the invocation
	done   int64        // history index of the completion, -1 if none
	in     *history.Value
	out    *history.Value

	// Set by markRenewals, read by both lock-promise definitions:
	// absorbed: a renew concurrent with its client's release on the same
	// key, which grants nothing (see claim); lost: a release or renew whose
	// definite "not held" answer is evidence against the lease in force.
	absorbed, lost bool
}

// token is the lease token the call named (on its invocation or, for a
// renewer's renew, on its completion); "" when the history does not say.
func (c *call) token() string {
	if c.in != nil && c.in.Token != "" {
		return c.in.Token
	}
	if c.out != nil {
		return c.out.Token
	}
	return ""
}

// completed reports whether the history records the completion.
func (c *call) completed() bool { return c.done >= 0 }

// nemesisEvent is one fault-injector operation, for annotations.
type nemesisEvent struct {
	f          string
	start, end int64
	typ        history.Type
	in, out    *history.Value
	idx        int64 // history index of the invocation
	endIdx     int64 // of the completion; idx when there is none
}

// prepared is a history digested once for every checker.
type prepared struct {
	calls     []call // client operations, in invocation order
	nemesis   []nemesisEvent
	heal      int64            // time of the last final-heal ok, -1 if none
	first     int64            // time of the first event
	last      int64            // time of the last event
	lastIndex int64            // history index of the last event
	crashedAt map[int]int64    // the crashes in this window (see crashed)
	crashes   []crashRec       // the same, in order
	keys      []string         // every key a client operation named, sorted
	keyLists  [][]int          // positions in calls of the operations of each of keys, in order
	keyCalls  map[string][]int // keyLists by key, made when first asked for (see callsOf)
	keyless   bool             // a client operation named no key (it is in no list of keyCalls)
	wkeys     []windowKey      // keys and their calls, once asked for (see windowKeys)
	// claims is the map of every key's claims buildClaims made of p, and
	// claimOrder its keys in claimKeys' order (see claimKeys).
	claims     map[string][]claim
	claimOrder []string

	// priorToken, when set, is the token of (proc, key)'s latest acquire
	// ok in the windows of the history before this one (see CheckFile):
	// markRenewals consults it when this window has none.
	priorToken func(proc int, key string) (string, bool)
	// prior, when set, is the client crashes of the windows before
	// (see crashed).
	prior *crashLog
	// priorForever, when set, is the invocation of (proc, key)'s release
	// in a window before that never completes (its process crashed with
	// it in flight, or holding a session lease): markRenewals absorbs
	// every later renew of the process's on the key, as the whole check
	// does.
	priorForever func(proc int, key string) (instant, bool)
}

// crashed is when process proc crashed, in this window or one before.
// A window of a longer history may hold a process's events (its claims)
// after the window that held its crash (see CheckFile): they came before
// the crash.
func (p *prepared) crashed(proc int) (int64, bool) {
	if t, ok := p.crashedAt[proc]; ok {
		return t, true
	}
	if r := p.prior.of(proc); r != nil {
		return r.t, true
	}
	return 0, false
}

// crashLog is every client crash of the windows so far, in index order,
// and by process (a process crashes once): what the windows after need of
// them (see CheckFile): to refuse a crashed process's later events, to end
// its session leases (endSessions) when its keys' events come in a later
// window than its crash, to say whether it crashed while holding a key
// (coverage), and for liveness.
type crashLog struct {
	list   []*crashRec
	byProc map[int]*crashRec
}

// crashRec is one client crash: its process, time and history index, and
// whether it struck a holder (coverage).
type crashRec struct {
	proc   int
	t, idx int64
	struck bool
}

func newCrashLog() *crashLog { return &crashLog{byProc: map[int]*crashRec{}} }

// of is proc's crash, or nil (also for a nil log).
func (l *crashLog) of(proc int) *crashRec {
	if l == nil {
		return nil
	}
	return l.byProc[proc]
}

// add logs the crashes of a window.
func (l *crashLog) add(rs []crashRec) {
	for _, r := range rs {
		if l.byProc[r.proc] == nil {
			rec := r
			l.list = append(l.list, &rec)
			l.byProc[r.proc] = &rec
		}
	}
}

// from is the logged crashes at or after history index idx.
func (l *crashLog) from(idx int64) []*crashRec {
	if l == nil {
		return nil
	}
	i := sort.Search(len(l.list), func(i int) bool { return l.list[i].idx >= idx })
	return l.list[i:]
}

// unusableError says why a history cannot be judged.
type unusableError struct{ msg string }

func (e *unusableError) Error() string { return "unusable history: " + e.msg }

func unusable(format string, args ...any) error {
	return &unusableError{msg: fmt.Sprintf(format, args...)}
}

// prepare pairs invocations with completions and checks the conventions
// every checker relies on: index order is time order, every completion
// follows an invocation of the same f by the same process, and a crashed
// process does nothing afterwards. An invocation without completion (a
// killed run) is an unknown outcome.
func prepare(ops []history.Op) (*prepared, error) {
	return prepareWith(ops, nil)
}

// prepareWith is prepare for one window of a longer history: c (may be
// nil) is what the windows before it carry: what they granted (see
// prepared.priorToken), which clients crashed in them (prepared.prior)
// and their releases that never complete (prepared.priorForever).
func prepareWith(ops []history.Op, c *carry) (*prepared, error) {
	var priorToken func(proc int, key string) (string, bool)
	var prior *crashLog
	var keyIDs map[string]int32
	var winKeys []int32
	var winNames []string
	validated, sorted := false, false
	if c != nil {
		priorToken, prior, keyIDs, validated = c.priorToken, c.crashes, c.keyIDs, c.validated
		winKeys, winNames, sorted = c.winKeys, c.winNames, c.winSorted
	}
	if !sorted && !slices.IsSortedFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) }) {
		winKeys = nil // of the events in their order
		ops = slices.Clone(ops)
		slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Index, b.Index) })
	}
	pr := newPreparer(ops, priorToken)
	pr.validated = validated
	pr.p.prior = prior
	if c != nil {
		pr.p.priorForever = c.priorForever
	}
	if len(ops) > 0 {
		pr.priorCrashes = prior.from(ops[0].Index)
	}
	for i := range ops {
		pr.endPriorSessions(ops[i].Index)
		if err := pr.add(ops, i); err != nil {
			return nil, err
		}
	}
	pr.endPriorSessions(math.MaxInt64)
	p := pr.p
	if id := callKeyIDs(p, ops, winKeys); id != nil {
		indexKeyIDs(p, id, winNames)
	} else {
		indexKeys(p, keyIDs)
	}
	markRenewals(p)
	return p, nil
}

// preparer pairs a history's events into a prepared one, event by event.
type preparer struct {
	p       *prepared
	pending pendingCalls // → position in p.calls
	// Keys each process holds under a session lease (history.Value's
	// Session) and has not begun to release: its crash ends them.
	sessions   map[int]map[string]bool
	nemPending map[string]int // nemesis f → position in p.nemesis
	prevTime   int64
	// The crashes of the windows before, from this window's first event
	// on, not yet passed: a session lease granted here ends at its
	// holder's crash there.
	priorCrashes []*crashRec
	// validated: every event satisfies Validate (read from a file, whose
	// reader refuses one that does not), so add need not ask again.
	validated bool
}

// endPriorSessions ends, at each crash of the windows before that came
// before history index idx, the session leases its process holds here.
func (pr *preparer) endPriorSessions(idx int64) {
	for len(pr.priorCrashes) > 0 && pr.priorCrashes[0].idx < idx {
		r := pr.priorCrashes[0]
		pr.priorCrashes = pr.priorCrashes[1:]
		if keys := pr.sessions[r.proc]; len(keys) > 0 {
			endSessions(pr.p, keys, r.proc, &history.Op{Index: r.idx, Time: r.t})
			delete(pr.sessions, r.proc)
		}
	}
}

// pendingKey is what pairs a completion with its invocation: the process
// that recorded both, and the operation.
type pendingKey struct {
	proc int
	f    string
}

// pendingCalls is the invocations awaiting their completion, by process
// and f (pendingKey): a process has one or two at once (a client's
// operation, a renewer's renew), so each process's are a short list, in
// a slice by process number for the numbers a run gives its clients (a
// map by process and f hashed both, three times a call).
type pendingCalls struct {
	byProc [][]pendingCall // processes 0 to pendingProcs-1
	other  map[pendingKey]int
}

type pendingCall struct {
	f string
	j int
}

// pendingProcs bounds pendingCalls.byProc.
const pendingProcs = 1 << 12

// list is proc's list, nil for a process past byProc (grow: made room for).
func (pc *pendingCalls) list(proc int, grow bool) *[]pendingCall {
	if proc < 0 || proc >= pendingProcs {
		return nil
	}
	if proc >= len(pc.byProc) {
		if !grow {
			return nil
		}
		pc.byProc = append(pc.byProc, make([][]pendingCall, proc+1-len(pc.byProc))...)
	}
	return &pc.byProc[proc]
}

// get is the position of k's invocation, if it awaits its completion.
func (pc *pendingCalls) get(k pendingKey) (int, bool) {
	l := pc.list(k.proc, false)
	if l == nil {
		j, ok := pc.other[k]
		return j, ok
	}
	for _, x := range *l {
		if x.f == k.f {
			return x.j, true
		}
	}
	return 0, false
}

// put notes that k's invocation at j awaits its completion (k has none
// awaiting).
func (pc *pendingCalls) put(k pendingKey, j int) {
	if l := pc.list(k.proc, true); l != nil {
		*l = append(*l, pendingCall{k.f, j})
		return
	}
	if pc.other == nil {
		pc.other = map[pendingKey]int{}
	}
	pc.other[k] = j
}

// del notes that k's invocation completed.
func (pc *pendingCalls) del(k pendingKey) {
	l := pc.list(k.proc, false)
	if l == nil {
		delete(pc.other, k)
		return
	}
	for i, x := range *l {
		if x.f == k.f {
			*l = slices.Delete(*l, i, i+1)
			return
		}
	}
}

func newPreparer(ops []history.Op, priorToken func(proc int, key string) (string, bool)) *preparer {
	// Room for every call at once: on a long history a copy while the
	// slice grows is a large part of the checker's memory.
	ncalls := 0
	for i := range ops {
		if ops[i].Type == history.Invoke && !ops[i].Process.IsNemesis() && ops[i].F != history.FCrash {
			ncalls++
		}
	}
	p := &prepared{heal: -1, crashedAt: map[int]int64{}, calls: make([]call, 0, ncalls), priorToken: priorToken}
	if len(ops) > 0 {
		p.first = ops[0].Time
	}
	return &preparer{p: p, sessions: map[int]map[string]bool{}, nemPending: map[string]int{}, prevTime: math.MinInt64}
}

// add takes ops[i], after checking that it is an event at all and that
// index order is time order.
func (pr *preparer) add(ops []history.Op, i int) error {
	op := &ops[i]
	if !pr.validated {
		if err := op.Validate(); err != nil {
			return unusable("event %d: %v", op.Index, err)
		}
	}
	if i > 0 && op.Index == ops[i-1].Index {
		return unusable("two events have index %d", op.Index)
	}
	if op.Time < pr.prevTime {
		return unusable("time goes backwards at event %d (%d after %d)", op.Index, op.Time, pr.prevTime)
	}
	pr.prevTime = op.Time
	pr.p.last, pr.p.lastIndex = op.Time, op.Index
	if op.Process.IsNemesis() {
		pr.nemesis(op)
		return nil
	}
	return pr.client(op)
}

// nemesis pairs a nemesis event with the pending invocation of its f, and
// notes the final heal.
func (pr *preparer) nemesis(op *history.Op) {
	p := pr.p
	if op.Type == history.Invoke {
		pr.nemPending[op.F] = len(p.nemesis)
		p.nemesis = append(p.nemesis, nemesisEvent{f: op.F, start: op.Time, end: -1, typ: history.Info, in: op.Value, idx: op.Index, endIdx: op.Index})
		return
	}
	if j, ok := pr.nemPending[op.F]; ok {
		delete(pr.nemPending, op.F)
		p.nemesis[j].end, p.nemesis[j].typ, p.nemesis[j].out, p.nemesis[j].endIdx = op.Time, op.Type, op.Value, op.Index
	} else {
		// A nemesis may record an event without invocation (a notice);
		// it is only ever shown, so accept it.
		p.nemesis = append(p.nemesis, nemesisEvent{f: op.F, start: op.Time, end: op.Time, typ: op.Type, out: op.Value, idx: op.Index, endIdx: op.Index})
	}
	if op.F == history.FFinalHeal && op.Type == history.OK {
		p.heal = op.Time
	}
}

// client takes a client event: a crash, an invocation, or a completion of
// the same process's pending invocation of the same f; a crashed process
// records nothing more.
func (pr *preparer) client(op *history.Op) error {
	proc := int(op.Process)
	owner := proc
	if op.Owner != nil {
		owner = int(*op.Owner)
	}
	if t, dead := pr.crashedBefore(proc, op.Index); dead && op.F != history.FCrash {
		return unusable("process %d crashed at %s but recorded %s %s at event %d", proc, secs(t), op.F, op.Type, op.Index)
	}
	if op.F == history.FCrash {
		pr.crash(op, proc)
		return nil
	}
	pr.followSessions(op, owner)
	pk := pendingKey{proc, op.F}
	if op.Type == history.Invoke {
		if j, ok := pr.pending.get(pk); ok {
			return unusable("process %d invoked %s at event %d while its %s of event %d was outstanding", proc, op.F, op.Index, op.F, pr.p.calls[j].inv)
		}
		pr.pending.put(pk, len(pr.p.calls))
		pr.p.calls = append(pr.p.calls, call{proc: owner, thread: proc, f: op.F, key: op.Key, typ: history.Info,
			start: op.Time, end: never, inv: op.Index, done: -1, in: op.Value})
		return nil
	}
	return pr.complete(op, pk, owner)
}

// crash records process proc's crash. A crash may be recorded as
// invoke+info or as a lone info; it is not paired with anything, and it
// leaves the process's outstanding operation (if any) unknown forever,
// and ends its session leases.
func (pr *preparer) crash(op *history.Op, proc int) {
	if op.Type == history.Invoke {
		return
	}
	if _, dead := pr.crashedBefore(proc, op.Index); !dead {
		pr.p.crashedAt[proc] = op.Time
		pr.p.crashes = append(pr.p.crashes, crashRec{proc: proc, t: op.Time, idx: op.Index})
		endSessions(pr.p, pr.sessions[proc], proc, op)
		delete(pr.sessions, proc)
	}
}

// crashedBefore is when proc crashed, if it did before history index idx
// (in this window, or a window before).
func (pr *preparer) crashedBefore(proc int, idx int64) (int64, bool) {
	if t, dead := pr.p.crashedAt[proc]; dead {
		return t, true
	}
	if r := pr.p.prior.of(proc); r != nil && r.idx < idx {
		return r.t, true
	}
	return 0, false
}

// followSessions notes the session leases owner acquires and begins to
// release.
func (pr *preparer) followSessions(op *history.Op, owner int) {
	if op.F == history.FRelease && op.Type == history.Invoke {
		delete(pr.sessions[owner], op.Key)
	}
	if op.F == history.FAcquire && op.Type == history.OK && op.Value != nil && op.Value.Session {
		if pr.sessions[owner] == nil {
			pr.sessions[owner] = map[string]bool{}
		}
		pr.sessions[owner][op.Key] = true
	}
}

// complete pairs a completion with its pending invocation (pk), which
// must be of the same key and for the same owner.
func (pr *preparer) complete(op *history.Op, pk pendingKey, owner int) error {
	j, ok := pr.pending.get(pk)
	if !ok {
		return unusable("event %d: %s %s by process %d without a preceding invocation by that process", op.Index, op.F, op.Type, pk.proc)
	}
	c := &pr.p.calls[j]
	if c.key != op.Key {
		return unusable("event %d: %s %s on key %q completes an invocation on key %q (event %d)", op.Index, op.F, op.Type, op.Key, c.key, c.inv)
	}
	if c.proc != owner {
		return unusable("event %d: %s %s by process %d for owner %d completes an invocation for owner %d (event %d)", op.Index, op.F, op.Type, pk.proc, owner, c.proc, c.inv)
	}
	pr.pending.del(pk)
	c.typ, c.end, c.done, c.out = op.Type, op.Time, op.Index, op.Value
	return nil
}

// endSessions ends, at crash (a history event), the session leases keys
// of crashed process proc: a lease that lasts as long as its connection
// ends when the crash closes it. Each is recorded as the process's
// release invoked at the crash, with an unknown outcome, which is what
// both lock-promise definitions take it to be: the claim ends there (the
// overlap analysis ends a claim at any release's invocation; the model
// may linearise an unknown release at any instant after it), and nothing
// else reads it as evidence (it is not ok, and not "not held").
func endSessions(p *prepared, keys map[string]bool, proc int, crash *history.Op) {
	ks := make([]string, 0, len(keys))
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		p.calls = append(p.calls, call{proc: proc, thread: proc, f: history.FRelease, key: k, typ: history.Info,
			start: crash.Time, end: never, inv: crash.Index, done: -1})
	}
}

// indexKeys fills p.keyCalls and p.keys: each call's key numbered once
// (ids, emptied again before it returns; nil: a map of its own), then
// every key's list cut at its size from one array. A window of fresh keys
// (a key or two per call) made two maps, grown a dozen times, and a slice
// per key, and looked each call's key up three times.
func indexKeys(p *prepared, ids map[string]int32) {
	if ids == nil {
		ids = map[string]int32{}
	}
	defer clear(ids)
	id := make([]int32, len(p.calls)) // of each call's key, -1 for none
	var n []int                       // calls per key, by number
	for i := range p.calls {
		k := p.calls[i].key
		if k == "" {
			p.keyless, id[i] = true, -1
			continue
		}
		j, ok := ids[k]
		if !ok {
			j = int32(len(p.keys))
			ids[k] = j
			p.keys = append(p.keys, k)
			n = append(n, 0)
		}
		id[i] = j
		n[j]++
	}
	listKeys(p, id, n)
}

// indexKeyIDs is indexKeys with each call's key numbered already: id
// (callKeyIDs') is its place in names, -1 for none. The keys are numbered
// again, in the order of their first calls, as indexKeys numbers them
// (names may hold keys no call names), and id is renumbered in place:
// p.keys, p.keyCalls and p.keyless come out as indexKeys makes them.
func indexKeyIDs(p *prepared, id []int32, names []string) {
	local := make([]int32, len(names)) // a name's number plus one, 0 for none yet
	n := make([]int, 0, len(names))    // at most every name: grown, they cost as much as the numbering
	p.keys = make([]string, 0, len(names))
	for i, w := range id {
		if w < 0 {
			p.keyless = true
			continue
		}
		j := local[w] - 1
		if j < 0 {
			j = int32(len(p.keys))
			local[w] = j + 1
			p.keys = append(p.keys, names[w])
			n = append(n, 0)
		}
		id[i] = j
		n[j]++
	}
	listKeys(p, id, n)
}

// callKeyIDs is the number of each of p's calls' key in the cutter's
// numbering (winKeys: of each of ops, see cutter.winKeys), -1 for a call
// that names no key; nil when it cannot tell, and indexKeys numbers them
// by their strings. Each invocation of a client (neither a nemesis nor a
// crash) made one call, in order (newPreparer counts them alike), and
// its key is its event's: the walk pairs them, and checks that it did
// (each call's invocation index), since a crash also makes calls, for
// the session leases it ends (endSessions), which no event numbers. An
// invocation whose key the cutter did not number (a pause's, a global
// event) and that names one leaves the numbering to indexKeys too.
func callKeyIDs(p *prepared, ops []history.Op, winKeys []int32) []int32 {
	if len(winKeys) != len(ops) || len(ops) == 0 {
		return nil
	}
	id := make([]int32, 0, len(p.calls))
	for i := range ops {
		op := &ops[i]
		if op.Type != history.Invoke || op.Process.IsNemesis() || op.F == history.FCrash {
			continue
		}
		j := len(id)
		if j == len(p.calls) || p.calls[j].inv != op.Index {
			return nil
		}
		w := winKeys[i]
		switch {
		case p.calls[j].key == "":
			w = -1
		case w < 0:
			return nil
		}
		id = append(id, w)
	}
	if len(id) != len(p.calls) {
		return nil
	}
	return id
}

// listKeys sorts p.keys and fills p.keyLists beside them from id, each
// call's key's number (-1 for none), and n, the calls of each number (see
// indexKeys). The map of them by key (p.keyCalls) is made only if asked
// for (callsOf): the checkers go key by key (windowKeys), and a window
// of fresh keys made a map of thousands of keys for nothing.
func listKeys(p *prepared, id []int32, n []int) {
	// n becomes where each key's list begins, then where it ends.
	at := 0
	for j, c := range n {
		n[j], at = at, at+c
	}
	lists := make([]int, at)
	for i, j := range id {
		if j >= 0 {
			lists[n[j]] = i
			n[j]++
		}
	}
	order := make([]int32, len(p.keys)) // the numbers, by their keys
	for j := range order {
		order[j] = int32(j)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(p.keys[a], p.keys[b]) })
	keys, byKey := make([]string, len(order)), make([][]int, len(order))
	for i, j := range order {
		begin := 0
		if j > 0 {
			begin = n[j-1]
		}
		keys[i], byKey[i] = p.keys[j], lists[begin:n[j]:n[j]]
	}
	p.keys, p.keyLists = keys, byKey
}

// callsOf is the positions in p.calls of key k's calls, in order (nil
// for a key no call names, and for "").
func (p *prepared) callsOf(k string) []int {
	if p.keyCalls == nil {
		p.keyCalls = make(map[string][]int, len(p.keys))
		for i, k := range p.keys {
			p.keyCalls[k] = p.keyLists[i]
		}
	}
	return p.keyCalls[k]
}

// markRenewals classifies, once for both lock-promise definitions, the
// calls whose meaning depends on their neighbours (see claim for the
// rules):
//
//   - a renew by (or for) p on key k is absorbed when it is concurrent
//     with a release by p on k: it completes after the release's
//     invocation and was invoked before the release's completion (a
//     release that never completed is concurrent with everything after
//     its invocation);
//   - a release or renew by p on k is lost-lease evidence when it failed
//     with a definite "not held" (Value.NotHeld), is not absorbed, and
//     names the lease in force: its token, if the history records one, is
//     that of p's latest grant of k (an acquire ok, or a renew ok that was
//     not absorbed) completed before its invocation. A renew's grant
//     counts because a watchdog may renew a lease its client no longer
//     knows of (an orphan, redisson#7272): the client's "not held" about
//     its own, other lease then says nothing about the orphan's.
//
// p's releases and acquires are its client's, one at a time, so each
// lookup is a binary search: O(n log n) in all.
func markRenewals(p *prepared) {
	if !p.anyCall(func(c *call) bool { return c.f == history.FRenew || c.typ == history.Fail }) {
		// Nothing to classify: no renew, and no release that failed. (A
		// window of fresh keys, each acquired and released once, spared
		// its maps of every process and key's calls.)
		return
	}
	type pk struct {
		proc int
		key  string
	}
	// At the window's number of keys, about one process each for a
	// history of many keys: growing them cost more than filling them.
	releases, acquires := make(map[pk][]*call, len(p.keys)), make(map[pk][]*call, len(p.keys))
	for i := range p.calls {
		c := &p.calls[i]
		k := pk{c.proc, c.key}
		switch {
		case c.f == history.FRelease:
			releases[k] = append(releases[k], c)
		case c.f == history.FAcquire && c.typ == history.OK:
			acquires[k] = append(acquires[k], c)
		}
	}
	// Renew grants join the acquires once they are known not to be
	// absorbed (below, in invocation order: a renew's absorption depends
	// on releases only, so it is decided before any later call needs it).
	renews := map[pk][]*call{}
	// p.calls is in invocation order; acquires by completion order, which
	// is the same for one client's calls, but say so.
	for _, as := range acquires {
		slices.SortFunc(as, func(a, b *call) int { return cmp.Compare(a.done, b.done) })
	}
	for i := range p.calls {
		c := &p.calls[i]
		k := pk{c.proc, c.key}
		if c.f == history.FRenew {
			// The latest release invoked before the renew completed.
			rs := releases[k]
			j := sort.Search(len(rs), func(j int) bool { return !rs[j].invoked().less(c.completion()) }) - 1
			if j >= 0 && c.invoked().less(rs[j].completion()) || p.foreverReleased(c) {
				c.absorbed = true
				continue
			}
			if c.typ == history.OK && c.token() != "" {
				rs := renews[k] // kept sorted by completion
				j, _ := slices.BinarySearchFunc(rs, c.done, func(r *call, d int64) int { return cmp.Compare(r.done, d) })
				renews[k] = slices.Insert(rs, j, c)
			}
		}
		if c.typ != history.Fail || c.out == nil || !c.out.NotHeld || (c.f != history.FRelease && c.f != history.FRenew) {
			continue
		}
		if tok := c.token(); tok != "" {
			if g := latestGrant(acquires[k], renews[k], c.inv); g != nil && g.token() != "" && g.token() != tok {
				continue // about another lease of p's
			}
			if g := latestGrant(acquires[k], renews[k], c.inv); g == nil && p.priorToken != nil {
				if t, ok := p.priorToken(c.proc, c.key); ok && t != "" && t != tok {
					continue // about an older lease, granted in an earlier window
				}
			}
		}
		c.lost = true
	}
}

// foreverReleased reports whether renew c completed after the invocation
// of its process's release on its key, in a window before, that never
// completes: concurrent with it, so absorbed.
func (p *prepared) foreverReleased(c *call) bool {
	if p.priorForever == nil {
		return false
	}
	at, ok := p.priorForever(c.proc, c.key)
	return ok && at.less(c.completion())
}

// latestGrant returns the grant among acquires and renews (each sorted by
// completion) that completed last before history index inv, or nil.
func latestGrant(acquires, renews []*call, inv int64) *call {
	var g *call
	for _, gs := range [][]*call{acquires, renews} {
		if j := sort.Search(len(gs), func(j int) bool { return gs[j].done >= inv }) - 1; j >= 0 && (g == nil || gs[j].done > g.done) {
			g = gs[j]
		}
	}
	return g
}

// has reports whether one of p's calls is an f.
func (p *prepared) has(f string) bool {
	return p.anyCall(func(c *call) bool { return c.f == f })
}

// anyCall reports whether ok holds of one of p's calls.
func (p *prepared) anyCall(ok func(c *call) bool) bool {
	for i := range p.calls {
		if ok(&p.calls[i]) {
			return true
		}
	}
	return false
}

// invoked and completion are the call's instants (completion is forever
// when it never completed).
func (c *call) invoked() instant    { return instant{c.start, c.inv} }
func (c *call) completion() instant { return eventAt(c.end, c.done) }

// counts is Result.Counts: completions by f and type; an invocation that
// never completed counts as info, since that is how it is judged.
func counts(ops []history.Op, p *prepared) map[string]map[string]int {
	var c fCounts
	for i := range ops {
		if ops[i].Type != history.Invoke {
			c.add(ops[i].F, string(ops[i].Type))
		}
	}
	if p != nil {
		for i := range p.calls {
			if !p.calls[i].completed() {
				c.add(p.calls[i].f, string(history.Info))
			}
		}
	}
	out := map[string]map[string]int{}
	for _, x := range c.list {
		m := out[x.f]
		if m == nil {
			m = map[string]int{}
			out[x.f] = m
		}
		m[x.t] += x.n
	}
	return out
}

// fCounts counts completions by function and type in a short list: a
// history has a few functions and four types, and the pair counted last
// comes again most often (two map lookups an event were a few per cent
// of a check of many keys).
type fCounts struct {
	list []fCount
	last int // where the pair counted last is in list
}

type fCount struct {
	f, t string
	n    int
}

func (c *fCounts) add(f, t string) {
	if c.last < len(c.list) && c.list[c.last].f == f && c.list[c.last].t == t {
		c.list[c.last].n++
		return
	}
	for i := range c.list {
		if c.list[i].f == f && c.list[i].t == t {
			c.list[i].n++
			c.last = i
			return
		}
	}
	c.last = len(c.list)
	c.list = append(c.list, fCount{f, t, 1})
}

// secs renders run-clock nanoseconds as seconds for sentences.
func secs(ns int64) string {
	if ns == never {
		return "never"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

// dur renders a duration in nanoseconds for sentences.
func dur(ns int64) string {
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}
