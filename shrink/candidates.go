package shrink

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/schedule"
)

// Candidate is a schedule one change smaller than the one it was made
// from. Change says what changed in words; it also names the change by
// what it leaves ("time_limit 2s", "drop step 3.1s client-pause holder"),
// so that a change that did not reproduce is not tried again on a smaller
// schedule (see Search).
type Candidate struct {
	Schedule schedule.Schedule
	Change   string
	// key names the change for the memory of changes that did not
	// reproduce, when Change says more than what matters (the time limit
	// that goes with halved step times).
	key string
	// dim names the duration the change shortens and val its new value:
	// a value that did not reproduce bounds the next tries from below
	// (a binary search), see lower.
	dim string
	val time.Duration
}

// lower is, by dimension (a duration a reducer shortens: "time_limit",
// a step's "duration"), the longest value that did not reproduce: the
// reducers try no value at or below it.
type lower map[string]time.Duration

// reducer makes the candidates of one kind of change, the biggest first.
type reducer func(s schedule.Schedule, lo lower) []Candidate

// reducers are the kinds of change in the order Search tries them: the
// faults first (most of what a reader has to understand), then the
// length of the run, the workload, the size of each fault, and last the
// awaits, which make a step strike a holder on a loaded machine too.
var reducers = []reducer{dropSteps, earlierSteps, shorterTimeLimit, shorterRecovery, fewerClients, fewerKeys,
	shorterParams, shorterClientPause, rarerClientPause, awaitHolder}

// memo is the name of c's change in the memory of changes that did not
// reproduce.
func (c Candidate) memo() string {
	if c.key != "" {
		return c.key
	}
	return c.Change
}

// Candidates are the candidates made from s, in the order they are tried:
// every reducer's, each biggest change first.
func Candidates(s schedule.Schedule) []Candidate { return candidates(s, nil) }

func candidates(s schedule.Schedule, lo lower) []Candidate {
	var out []Candidate
	seen := map[string]bool{}
	for _, r := range reducers {
		for _, c := range r(s, lo) {
			if !seen[c.Change] {
				seen[c.Change] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// dropSteps drops every step, then each half, quarter, … of the steps, down
// to each step alone (delta debugging's complements). A step that did not
// act in the run (its await never held, the run ended first) goes first,
// on its own, before the chunks.
func dropSteps(s schedule.Schedule, _ lower) []Candidate {
	n := len(s.Steps)
	if n == 0 {
		return nil
	}
	var out []Candidate
	var idle []int
	for i, st := range s.Steps {
		if st.NotDone != "" {
			idle = append(idle, i)
		}
	}
	if len(idle) > 0 && len(idle) < n {
		out = append(out, without(s, idle))
	}
	for size := n; size >= 1; {
		for i := 0; i < n; i += size {
			out = append(out, without(s, span(i, min(i+size, n))))
		}
		if size == 1 {
			break
		}
		size = (size + 1) / 2
	}
	return out
}

func span(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// without is s without the steps at drop (ascending).
func without(s schedule.Schedule, drop []int) Candidate {
	c := clone(s)
	names := make([]string, len(drop))
	for k, i := range slices.Backward(drop) {
		names[k] = stepName(s.Steps[i])
		c.Steps = slices.Delete(c.Steps, i, i+1)
	}
	if len(c.Steps) == 0 {
		c.Steps = nil
	}
	if len(drop) == len(s.Steps) {
		return Candidate{Schedule: c, Change: "drop every step"}
	}
	return Candidate{Schedule: c, Change: "drop " + plural(len(drop), "step") + ": " + strings.Join(names, ", ")}
}

// stepName names a step by what it is and when, stable when the steps
// around it go.
func stepName(st schedule.Step) string {
	name := fmt.Sprintf("%v %s %s", st.At, st.Nemesis, st.Action)
	if len(st.Targets) > 0 {
		name += " " + strings.Join(st.Targets, ",")
	}
	return name
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// earlierSteps halves every step's time and the run phase with them,
// keeping the steps' order and proportions: the biggest cut of a run's
// length a single candidate can make (a random run's faults are seconds
// apart).
func earlierSteps(s schedule.Schedule, _ lower) []Candidate {
	if len(s.Steps) == 0 || lastAt(s) < 2*timeQuantum {
		return nil
	}
	c := clone(s)
	for i := range c.Steps {
		c.Steps[i].At = (c.Steps[i].At / 2).Round(time.Millisecond)
	}
	c.TimeLimit = max(lastAt(c), (s.TimeLimit / 2).Round(timeQuantum))
	return []Candidate{{Schedule: c, Change: fmt.Sprintf("twice as fast: steps at half their times (the last at %v), time_limit %v", lastAt(c), c.TimeLimit),
		key: fmt.Sprintf("twice as fast: the last step at %v", lastAt(c))}}
}

func lastAt(s schedule.Schedule) time.Duration {
	var last time.Duration
	for _, st := range s.Steps {
		last = max(last, st.At)
	}
	return last
}

// timeQuantum is the resolution of the durations Search tries: 100 ms,
// finer than a lease of a second and coarser than the noise of a run.
const timeQuantum = 100 * time.Millisecond

// shorter are the shorter values of d tried, above floor: the half of what
// d has above floor, then three quarters, each rounded up to q; none that
// is not shorter than d by q at least. With floor the longest value that
// did not reproduce, repeated shortening is a binary search, which stops
// within a tenth of d of the floor: the last few percent are not worth
// their runs.
func shorter(d, floor, q time.Duration) []time.Duration {
	if d-floor < d/10 {
		return nil
	}
	var out []time.Duration
	for _, f := range []float64{0.5, 0.75} {
		v := floor + time.Duration(float64(d-floor)*f)
		if r := v % q; r != 0 {
			v += q - r
		}
		if v > floor && v <= d-q && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// shorterTimeLimit shortens the run phase, never before the last step.
func shorterTimeLimit(s schedule.Schedule, lo lower) []Candidate {
	var out []Candidate
	for _, d := range shorter(s.TimeLimit, max(lastAt(s), lo["time_limit"]), timeQuantum) {
		c := clone(s)
		c.TimeLimit = d
		out = append(out, Candidate{Schedule: c, Change: fmt.Sprintf("time_limit %v", d), dim: "time_limit", val: d})
	}
	return out
}

// shorterRecovery shortens the fault-free time after the final heal.
func shorterRecovery(s schedule.Schedule, lo lower) []Candidate {
	var out []Candidate
	for _, d := range shorter(s.Recovery, lo["recovery"], timeQuantum) {
		c := clone(s)
		c.Recovery = d
		out = append(out, Candidate{Schedule: c, Change: fmt.Sprintf("recovery %v", d), dim: "recovery", val: d})
	}
	return out
}

// fewer are the smaller counts than n tried, not below floor: floor
// itself, the half, one less.
func fewer(n, floor int) []int {
	var out []int
	for _, v := range []int{floor, n / 2, n - 1} {
		if v >= floor && v < n && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// fewerClients runs fewer clients: two (the fewest that can share a lock
// wrongly) or as many as the steps name, then the half, one less. One
// client alone comes last: an orphaned lock needs no second one.
func fewerClients(s schedule.Schedule, _ lower) []Candidate {
	floor := max(2, clientsNamed(s))
	counts := fewer(s.Workload.Clients, floor)
	if floor == 2 && s.Workload.Clients > 1 {
		counts = append(counts, 1)
	}
	var out []Candidate
	for _, n := range counts {
		c := clone(s)
		c.Workload.Clients = n
		out = append(out, Candidate{Schedule: c, Change: fmt.Sprintf("clients %d", n)})
	}
	return out
}

// clientsNamed is how many clients the steps' targets need: one more than
// the highest client they name (c2, c2->n1).
func clientsNamed(s schedule.Schedule) int {
	need := 0
	for _, st := range s.Steps {
		for _, t := range st.Targets {
			from, _, _ := strings.Cut(t, "->")
			if len(from) > 1 && from[0] == 'c' {
				if i, err := strconv.Atoi(from[1:]); err == nil {
					need = max(need, i+1)
				}
			}
		}
	}
	return need
}

// fewerKeys runs the clients on fewer lock keys.
func fewerKeys(s schedule.Schedule, _ lower) []Candidate {
	var out []Candidate
	for _, n := range fewer(s.Workload.Keys, 1) {
		c := clone(s)
		c.Workload.Keys = n
		out = append(out, Candidate{Schedule: c, Change: fmt.Sprintf("keys %d", n)})
	}
	return out
}

// durationParams are the step parameters that size a fault: how long it
// lasts, how much it delays, how far a clock jumps (delta, signed).
var durationParams = []string{"duration", "window", "delay", "latency", "jitter", "delta"}

// paramQuantum is the resolution of a step's durations: 10 ms, as a
// pause of 1.05 s against a lease of 1 s is a different story from one of
// 1.1 s.
const paramQuantum = 10 * time.Millisecond

// shorterParams shortens each step's durations, one at a time.
func shorterParams(s schedule.Schedule, lo lower) []Candidate {
	var out []Candidate
	for i, st := range s.Steps {
		for _, k := range durationParams {
			d, err := time.ParseDuration(st.Params[k])
			if err != nil {
				continue
			}
			sign := time.Duration(1)
			if d < 0 {
				sign, d = -1, -d
			}
			dim := fmt.Sprintf("step %s: %s", stepName(st), k)
			for _, v := range shorter(d, lo[dim], paramQuantum) {
				c := clone(s)
				c.Steps[i].Params[k] = formatParam(k, sign*v)
				out = append(out, Candidate{Schedule: c, Change: dim + " " + c.Steps[i].Params[k], dim: dim, val: v})
			}
		}
	}
	return out
}

// formatParam writes a step's duration as the nemesis writes it: a clock's
// delta with its sign.
func formatParam(k string, d time.Duration) string {
	if k == "delta" && d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// shorterClientPause shortens the workload's own pauses in the critical
// section (a GC pause), and rarerClientPause makes them rarer: fewer
// faults in the history to read.
func shorterClientPause(s schedule.Schedule, lo lower) []Candidate {
	var out []Candidate
	for _, d := range shorter(s.Workload.ClientPause, lo["client_pause"], paramQuantum) {
		c := clone(s)
		c.Workload.ClientPause = d
		out = append(out, Candidate{Schedule: c, Change: fmt.Sprintf("workload client_pause %v", d), dim: "client_pause", val: d})
	}
	return out
}

func rarerClientPause(s schedule.Schedule, _ lower) []Candidate {
	r := s.Workload.ClientPauseRate
	if s.Workload.ClientPause == 0 || r < 0.02 {
		return nil
	}
	c := clone(s)
	c.Workload.ClientPauseRate = float64(int(r*500+0.5)) / 1000 // the half, to three places
	return []Candidate{{Schedule: c, Change: fmt.Sprintf("workload client_pause_rate %g", c.Workload.ClientPauseRate)}}
}

// heals are the actions that end a fault rather than begin one: a step
// that heals strikes whatever holds, it has no holder to await.
var heals = []string{"stop", "reset", "restart", "mend", "resume", "heal"}

// awaitHolder makes each time-based step that begins a fault await a
// holder from its time on (await: {}), so that it strikes one however
// late a loaded machine makes the grants. A step that already targets a
// holder itself (client-pause holder, a failpoint) waits for one anyway.
func awaitHolder(s schedule.Schedule, _ lower) []Candidate {
	var out []Candidate
	for i, st := range s.Steps {
		if !mayAwait(st) {
			continue
		}
		c := clone(s)
		c.Steps[i].Await = &schedule.Await{}
		out = append(out, Candidate{Schedule: c, Change: fmt.Sprintf("step %s awaits a holder", stepName(st))})
	}
	return out
}

// mayAwait reports whether st is a time-based step that begins a fault.
func mayAwait(st schedule.Step) bool {
	return st.Await == nil && !slices.Contains(heals, st.Action) && st.Action != "holder" && st.Action != "failpoint"
}

// awaitAll is s with every time-based step that begins a fault awaiting a
// holder; false when s has none.
func awaitAll(s schedule.Schedule) (schedule.Schedule, bool) {
	c, any := clone(s), false
	for i, st := range c.Steps {
		if mayAwait(st) {
			c.Steps[i].Await, any = &schedule.Await{}, true
		}
	}
	return c, any
}

// clone is a deep copy of s, as far as the reducers change it.
func clone(s schedule.Schedule) schedule.Schedule {
	s.Steps = slices.Clone(s.Steps)
	for i := range s.Steps {
		st := &s.Steps[i]
		st.Targets = slices.Clone(st.Targets)
		st.Params = maps.Clone(st.Params)
		if st.Await != nil {
			a := *st.Await
			a.Granted = slices.Clone(a.Granted)
			st.Await = &a
		}
	}
	s.Expect = maps.Clone(s.Expect)
	s.Exposure = slices.Clone(s.Exposure)
	s.Nemesis.Names = slices.Clone(s.Nemesis.Names)
	return s
}
