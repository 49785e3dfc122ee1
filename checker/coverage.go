package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// Coverage is what a history exercised: the evidence a verdict rests on. A
// valid verdict over a run in which nothing was granted, or in which the
// requested fault never struck while a client held a lock, proves nothing;
// Coverage says which, and Requirement turns it into a verdict. It is
// computed from the history alone, so a stored history shows it too.
type Coverage struct {
	// Grants are successful acquires; Renewals successful renews; Claims
	// the lock-promise claims they made (see Hold).
	Grants   int `json:"grants"`
	Renewals int `json:"renewals"`
	Claims   int `json:"claims"`
	// Faults are the nemesis's faults by f ("start-partition", "kill", …).
	Faults map[string]FaultCoverage `json:"faults,omitempty"`
	// Pauses are client pauses (f "pause" by a client: a GC pause, at a
	// safe point of the critical section or at a lock's failpoint).
	Pauses PauseCoverage `json:"pauses"`
	// Crashes are client crashes.
	Crashes CrashCoverage `json:"crashes"`
	// Disturbed names, in words, each server that exited without the
	// harness asking (history.FServerExit): "n1 exited unexpectedly at
	// 3.2 s". Not a fault's exposure: see judgeDisturbance.
	Disturbed []string `json:"disturbed,omitempty"`
}

// FaultCoverage counts one nemesis f.
type FaultCoverage struct {
	// TookEffect counts the attempts that completed ok.
	TookEffect int `json:"took_effect"`
	// StruckHolder counts those whose fault window overlapped a live claim:
	// some client held a lock while the fault was in force. A window runs
	// from the fault's invoke to the invoke of its heal (stop-partition
	// for start-partition, restart for kill, …), or to the final heal or
	// the end of the history when never healed; an instantaneous fault
	// (promote, await-promotion, pause-client, …) is the instant of its
	// completion, when it had certainly taken effect: a claim merely
	// overlapping the few milliseconds of a promotion may have ended
	// before the clients moved, and was never exposed to it.
	StruckHolder int `json:"struck_holder"`
	// Attempts counts the acquires invoked while a lasting fault was in
	// force (its window, as above): the lock was asked to grant under the
	// fault. A lock that fails closed (WAIT with the replication link
	// frozen) is exposed by these, not by a holder.
	Attempts int `json:"attempts,omitempty"`
	// Failed certainly did not happen (nothing to act on); Unknown may be
	// half applied.
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
}

// PauseCoverage counts client pauses.
type PauseCoverage struct {
	Total int `json:"total"`
	// StruckHolder: the pause began while its process held a live claim.
	StruckHolder int `json:"struck_holder"`
	// OutlivedLease: of those, the claim ran out before the pause ended
	// (the client woke up believing it still held the lock).
	OutlivedLease int `json:"outlived_lease"`
}

// CrashCoverage counts client crashes.
type CrashCoverage struct {
	Total int `json:"total"`
	// WhileHolding: the process crashed while it held a live claim.
	WhileHolding int `json:"while_holding"`
}

// heals maps a fault f to the nemesis f that ends its window. A fault not
// listed here and not itself a heal is instantaneous.
var heals = map[string]string{
	"start-partition": "stop-partition",
	"start-latency":   "stop-latency",
	"pause-node":      "resume-node",
	"kill":            "restart",
	"bump-clock":      "reset-clock",
	"strobe-clock":    "reset-clock",
	"drift-clock":     "reset-clock",
	"cut-replication": "promote",
	"pause-master":    "heal-master",
	"isolate-master":  "heal-master",

	"start-memory-pressure": "stop-memory-pressure",
	"start-lose-replies":    "stop-lose-replies",
	"start-stale-replica":   "stop-stale-replica",
}

// isHeal reports whether f undoes a fault rather than injecting one.
func isHeal(f string) bool {
	switch f {
	case history.FFinalHeal, "stop-partition", "stop-latency", "resume-node", "restart", "reset-clock", "heal-master", "demote", "stop-memory-pressure", "stop-lose-replies", "stop-stale-replica":
		return true
	}
	return false
}

// liveDuring reports whether claim c was live at some time in the fault
// window s (an instantaneous one, a == b, is the instant itself).
func (c *claim) liveDuring(s span) bool {
	return c.start.t <= s.b && s.a < c.end.t
}

// coverage computes Coverage from a prepared history and its claims, all
// but the faults, whose exposure it adds to w's carry (see faultCoverage):
// a fault's window may span windows of a long history.
func coverage(p *prepared, byKey map[string][]claim, w window) Coverage {
	cc := newCoverageClaims(p, byKey, len(w.c.crashes.list) > 0)
	cov := Coverage{Claims: len(cc.all)}
	for i := range p.calls {
		c := &p.calls[i]
		switch {
		case c.f == history.FAcquire && c.typ == history.OK:
			cov.Grants++
		case c.f == history.FRenew && c.typ == history.OK:
			cov.Renewals++
		case c.f == history.FPause:
			cov.Pauses.Total++
			w.c.pauses = append(w.c.pauses, pauseProbe{proc: c.proc, at: c.start, end: pauseEnd(p, c)})
		}
	}
	strike(w.c.pauses, cc.all)
	cov.Crashes.Total += len(p.crashes)
	strikeCrashes(w.c.crashes, cc)
	exposeFaults(p, w, cc)
	return cov
}

// coverageClaims are a window's claims: all of them, by start, and each
// process's.
type coverageClaims struct {
	all    []*claim
	byProc map[int][]*claim
}

// newCoverageClaims is byKey's claims as coverageClaims. byProc is read by
// strikeCrashes alone, of the processes that crashed: it is made only when
// the history has had a crash (crashes), which saves a window of
// thousands of keys a map entry per claim.
func newCoverageClaims(p *prepared, byKey map[string][]claim, crashes bool) coverageClaims {
	cc := coverageClaims{byProc: map[int][]*claim{}}
	eachClaims(p, byKey, func(cs []claim) {
		for i := range cs {
			c := &cs[i]
			cc.all = append(cc.all, c)
			if crashes {
				cc.byProc[c.proc] = append(cc.byProc[c.proc], c)
			}
		}
	})
	sort.Slice(cc.all, func(i, j int) bool { return cc.all[i].start.t < cc.all[j].start.t })
	return cc
}

// held reports whether some claim was live at some time in s.
func (cc coverageClaims) held(s span) bool {
	for _, c := range cc.all {
		if c.start.t > s.b {
			return false
		}
		if c.liveDuring(s) {
			return true
		}
	}
	return false
}

// heldBy is proc's claim live at t, or nil.
func (cc coverageClaims) heldBy(proc int, t int64) *claim {
	for _, c := range cc.byProc[proc] {
		if c.liveDuring(span{t, t}) {
			return c
		}
	}
	return nil
}

// pauseEnd is when client pause c ended. One cut off by the end of the
// history lasted at least until then, and was meant to last its duration.
func pauseEnd(p *prepared, c *call) int64 {
	if c.completed() {
		return c.end
	}
	end := p.last
	if c.in != nil && c.in.Duration > 0 {
		end = max(end, c.start+c.in.Duration)
	}
	return end
}

// exposeFaults adds p's nemesis events to the history's so far (w.c.nem)
// and records, for each fault among them that took effect, how many
// acquires were asked for while it was in force and whether it struck a
// holder of this window (w.c.faults). The events join without their
// values, which nothing here reads and which would keep the window's
// memory alive.
func exposeFaults(p *prepared, w window, cc coverageClaims) {
	for _, e := range p.nemesis {
		e.in, e.out = nil, nil
		w.c.nem = append(w.c.nem, e)
		w.c.faults = append(w.c.faults, faultExposure{})
	}
	nem := w.c.nem
	end := p.last
	if p.heal >= 0 || w.c.heal >= 0 {
		// The final heal's invocation ends every window still open.
		for _, e := range nem {
			if e.f == history.FFinalHeal {
				end = e.start
			}
		}
	}
	acquires := acquireTimes(p)
	for i, e := range nem {
		if isHeal(e.f) || e.typ != history.OK {
			continue
		}
		win := faultWindow(nem, i, end, w.last)
		if win.a < win.b {
			w.c.faults[i].attempts += attemptsIn(acquires, win)
		}
		if cc.held(win) || heldOpen(w.c.open, win) {
			w.c.faults[i].struck = true
		}
	}
}

// heldOpen reports whether one of the claims the windows before carry as
// live through this one (carry.open, see cutter.forgone) was live at
// some time in s: the whole check's claim, struck by a fault as there.
func heldOpen(open map[string][]claim, s span) bool {
	for _, cs := range open {
		for i := range cs {
			if cs[i].liveDuring(s) {
				return true
			}
		}
	}
	return false
}

// faultWindow is the window of nem[i]'s fault (see FaultCoverage): a
// lasting fault's from its invocation to the invocation of its heal or of
// the final heal, or to end (when it is never healed: in a window before
// the last, the heal comes later than anything here); an instantaneous
// fault's is the instant of its completion. It never ends before the
// fault's completion.
func faultWindow(nem []nemesisEvent, i int, end int64, last bool) span {
	e := nem[i]
	win := span{e.end, e.end}
	if h, ok := heals[e.f]; ok {
		win.a = e.start
		win.b = never
		if last {
			win.b = end
		}
		for _, later := range nem[i+1:] {
			if later.f == h || later.f == history.FFinalHeal {
				win.b = later.start
				break
			}
		}
	}
	win.b = max(win.b, e.end)
	return win
}

// acquireTimes are the invocation times of p's acquires, in order (calls
// are).
func acquireTimes(p *prepared) []int64 {
	var acquires []int64
	for i := range p.calls {
		if p.calls[i].f == history.FAcquire {
			acquires = append(acquires, p.calls[i].start)
		}
	}
	return acquires
}

// attemptsIn counts the acquires (invocation times, sorted) invoked in s.
func attemptsIn(acquires []int64, s span) int {
	lo, _ := slices.BinarySearch(acquires, s.a)
	hi := len(acquires)
	if s.b < never {
		hi, _ = slices.BinarySearch(acquires, s.b+1)
	}
	return hi - lo
}

// pauseProbe is a client pause and the claim it struck, if any: of its
// process's claims live when it began, the one on the first key (at
// most one per key is live at an instant), as a whole history's first
// match is.
type pauseProbe struct {
	proc    int
	at, end int64 // the pause's start and end
	struck  bool
	key     string // the key of the claim it struck
	holdEnd int64  // that claim's end
}

// strike records in probes (the pauses so far, in the order of their
// starts) the claims among cs each struck: a pause's process may hold a
// key whose claims a later window holds (see CheckFile), never one an
// earlier window held. Each claim looks at the pauses that began while
// it was live, found by binary search, so a window costs as much as its
// claims, not its claims times the pauses so far.
func strike(probes []pauseProbe, cs []*claim) {
	for _, c := range cs {
		lo := sort.Search(len(probes), func(j int) bool { return probes[j].at >= c.start.t })
		for j := lo; j < len(probes) && probes[j].at < c.end.t; j++ {
			if pr := &probes[j]; pr.proc == c.proc && (!pr.struck || c.key < pr.key) {
				pr.struck, pr.key, pr.holdEnd = true, c.key, c.end.t
			}
		}
	}
}

// strikeCrashes marks the crashes of log (the windows' so far, this
// one's among them) that struck one of cc's claims: the crashed process's
// claim live at the crash, or a session lease the crash ended. A crashed
// process's claim may lie in a later window than its crash (see
// CheckFile), never in an earlier one: a window's claims end by its cut,
// before the next window's first event.
func strikeCrashes(log *crashLog, cc coverageClaims) {
	for proc, cs := range cc.byProc {
		r := log.of(proc)
		if r == nil || r.struck {
			continue
		}
		r.struck = cc.heldBy(proc, r.t) != nil || endedByCrash(cs, r.t)
	}
}

// crashCoverage counts the crashes of log that struck a holder.
func crashCoverage(log *crashLog, cov *CrashCoverage) {
	for _, r := range log.list {
		if r.struck {
			cov.WhileHolding++
		}
	}
}

// pauseCoverage counts the pauses of probes that struck a holder and
// that outlived the holder's claim.
func pauseCoverage(probes []pauseProbe, cov *PauseCoverage) {
	for _, pr := range probes {
		if !pr.struck {
			continue
		}
		cov.StruckHolder++
		if pr.holdEnd < pr.end {
			cov.OutlivedLease++
		}
	}
}

// faultExposure is what the windows of a history showed about one
// nemesis event's fault: whether it struck a holder, and how many
// acquires were asked for while it was in force.
type faultExposure struct {
	struck   bool
	attempts int
}

// faultCoverage counts the faults of nem (the whole history's nemesis
// events) with what exp says of each.
func faultCoverage(nem []nemesisEvent, exp []faultExposure) map[string]FaultCoverage {
	var out map[string]FaultCoverage
	for i, e := range nem {
		if isHeal(e.f) || e.f == history.FServerExit {
			continue
		}
		if out == nil {
			out = map[string]FaultCoverage{}
		}
		fc := out[e.f]
		switch e.typ {
		case history.OK:
			fc.TookEffect++
			fc.Attempts += exp[i].attempts
			if exp[i].struck {
				fc.StruckHolder++
			}
		case history.Fail:
			fc.Failed++
		default:
			fc.Unknown++
		}
		out[e.f] = fc
	}
	return out
}

// Requirement is exposure a run must reach for a valid verdict to be
// evidence: a named fault striking while a client held a lock, a client
// pause inside a critical section, one that outlived the lease, a client
// crashing while holding. Every condition set must hold.
type Requirement struct {
	// Name says what was asked for, for the reason text ("the partition
	// nemesis", "a pause longer than the TTL").
	Name string `json:"name"`
	// Faults are nemesis fs of which at least one must have taken effect
	// while some client held a claim (FaultCoverage.StruckHolder), or,
	// with Attempted, while some client tried to acquire.
	Faults []string `json:"faults,omitempty"`
	// Attempted: an acquire invoked while one of Faults was in force is
	// enough (FaultCoverage.Attempts): the exposure of a lock that must
	// refuse to grant under the fault.
	Attempted bool `json:"attempted,omitempty"`
	// Paused: a client paused at all (at a lock's failpoint, inside an
	// acquire, there is no claim yet to strike).
	Paused bool `json:"paused,omitempty"`
	// PauseStruck: a client pause began while its process held a claim.
	PauseStruck bool `json:"pause_struck,omitempty"`
	// PauseOutlived: a client pause outlived its holder's claim.
	PauseOutlived bool `json:"pause_outlived,omitempty"`
	// Crashed: a client crashed at all (at a failpoint, say).
	Crashed bool `json:"crashed,omitempty"`
	// CrashStruck: a client crashed while it held a claim.
	CrashStruck bool `json:"crash_struck,omitempty"`
}

// Unmet says, in words, what of r the coverage did not reach; nil when r
// is met.
func (r Requirement) Unmet(cov Coverage) []string {
	var out []string
	name := r.Name
	if name == "" {
		name = "the requested fault"
	}
	if len(r.Faults) > 0 {
		var took, struck, attempts, failed, unknown int
		for _, f := range r.Faults {
			fc := cov.Faults[f]
			took, struck, failed, unknown = took+fc.TookEffect, struck+fc.StruckHolder, failed+fc.Failed, unknown+fc.Unknown
			attempts += fc.Attempts
		}
		if r.Attempted && attempts == 0 {
			what := strings.Join(r.Faults, "/")
			detail := fmt.Sprintf("%d %s took effect", took, what)
			if took == 0 {
				detail = fmt.Sprintf("no %s took effect", what)
			}
			out = append(out, fmt.Sprintf("no client tried to acquire while %s was in force (%s)", name, detail))
		}
		if !r.Attempted && struck == 0 {
			what := strings.Join(r.Faults, "/")
			detail := fmt.Sprintf("%d %s took effect, none while a client held a lock", took, what)
			if took == 0 {
				detail = fmt.Sprintf("no %s took effect", what)
				if failed+unknown > 0 {
					detail += fmt.Sprintf(": %d failed, %d unknown", failed, unknown)
				}
			}
			out = append(out, fmt.Sprintf("%s never struck while a client held a lock (%s)", name, detail))
		}
	}
	if r.Paused && cov.Pauses.Total == 0 {
		out = append(out, fmt.Sprintf("%s: no client paused", name))
	}
	if r.PauseStruck && cov.Pauses.StruckHolder == 0 {
		out = append(out, fmt.Sprintf("%s: no client pause struck a holder (%d pauses, none inside a live claim)", name, cov.Pauses.Total))
	}
	if r.PauseOutlived && cov.Pauses.OutlivedLease == 0 {
		out = append(out, fmt.Sprintf("%s: no client pause outlived its holder's lease (%d pauses struck a holder)", name, cov.Pauses.StruckHolder))
	}
	if r.Crashed && cov.Crashes.Total == 0 {
		out = append(out, fmt.Sprintf("%s: no client crashed", name))
	}
	if r.CrashStruck && cov.Crashes.WhileHolding == 0 {
		out = append(out, fmt.Sprintf("%s: no client crashed while holding a lock (%d crashes)", name, cov.Crashes.Total))
	}
	return out
}

// vacuous lists every unmet requirement of a history's coverage; nothing
// granted is always one.
func vacuous(cov Coverage, counts map[string]map[string]int, reqs []Requirement) []string {
	var out []string
	if cov.Grants == 0 {
		a := counts[history.FAcquire]
		if n := a["fail"] + a["info"]; n > 0 {
			what := "acquires"
			if n == 1 {
				what = "acquire"
			}
			out = append(out, fmt.Sprintf("nothing was granted (%d %s: %d failed, %d unknown)", n, what, a["fail"], a["info"]))
		} else {
			out = append(out, "nothing was granted (no acquire was attempted)")
		}
	}
	for _, r := range reqs {
		out = append(out, r.Unmet(cov)...)
	}
	return slices.Compact(out)
}

// VacuousPrefix begins Result.Reason when a valid verdict became unknown
// for lack of exposure.
const VacuousPrefix = "valid but vacuous: "

// endedByCrash reports whether one of the claims ended at the crash at t:
// a session lease, which its holder's crash ends (see endSessions), was
// held up to the crash.
func endedByCrash(cs []*claim, t int64) bool {
	for _, c := range cs {
		if c.released >= 0 && c.end.t == t && c.start.t <= t {
			return true
		}
	}
	return false
}
