// Package history is the operation record of a run: Jepsen's vocabulary
// (invoke, then exactly one of ok, fail or info), one JSON object per line,
// streamed to disk while the run goes on so that a killed run still leaves a
// checkable prefix.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Type is the kind of a history event.
type Type string

// The four event types. An invocation is followed by exactly one completion
// from the same process: ok (it happened), fail (it certainly did not happen)
// or info (its effect is unknown: a timeout, a reset connection). A harness
// never guesses: an error whose effect is unknown is info.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// Valid reports whether t is one of the four known types.
func (t Type) Valid() bool {
	switch t {
	case Invoke, OK, Fail, Info:
		return true
	}
	return false
}

// Function names used by clients. Nemeses use their own names (for example
// "start-partition"); checkers only interpret the ones below and the
// nemesis-process events.
const (
	FAcquire = "acquire"
	FRelease = "release"
	FRenew   = "renew"
	FRead    = "read"  // the protected resource: read the counter
	FWrite   = "write" // the protected resource: write counter+1
	FPause   = "pause" // a client stops the world (GC pause) inside its critical section
	FCrash   = "crash" // a client process dies; it never completes anything again

	// FFinalHeal is recorded by the nemesis process when every fault has been
	// healed at the end of the run; the recovery period starts at its ok.
	FFinalHeal = "final-heal"

	// FServerExit is recorded under the nemesis process, as a notice (an
	// ok without invocation), when a server the harness started ends
	// without the harness asking: killed from outside, crashed. Its value
	// names the node in Targets, says how it ended in Detail, and puts
	// the fault FaultExit in force on it until it is healed. No nemesis
	// planned it: the checker names it in the verdict (a valid one
	// becomes unknown), and it counts as no fault's exposure.
	FServerExit = "server-exit"
	// FaultExit is the fault an FServerExit puts in force.
	FaultExit = "exit"
)

// Process identifies who performed an event: a client number (0, 1, …) or
// the nemesis. It is written as a JSON number, or the string "nemesis".
type Process int

// Nemesis is the process number of the fault injector.
const Nemesis Process = -1

// IsNemesis reports whether p is the nemesis process.
func (p Process) IsNemesis() bool { return p == Nemesis }

func (p Process) String() string {
	if p == Nemesis {
		return "nemesis"
	}
	return strconv.Itoa(int(p))
}

// MarshalJSON writes a client as a number and the nemesis as "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	if p < 0 {
		return nil, fmt.Errorf("invalid process number %d", int(p))
	}
	return []byte(strconv.Itoa(int(p))), nil
}

// UnmarshalJSON accepts a non-negative number or the string "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = Nemesis
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return fmt.Errorf("process must be a non-negative number or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

// Value is the payload of an event. Which fields are set depends on f and
// type; every field is optional so the JSON stays small.
type Value struct {
	// Lease, on acquire/renew ok and on release invoke.
	Token string `json:"token,omitempty"`
	// Fence is the fencing token, when the lock hands one out (> 0).
	Fence int64 `json:"fence,omitempty"`
	// Deadline is the end of the lease as the lock itself computed it, in
	// nanoseconds of the run clock. Zero means the lease never expires
	// (setnx, or setnx-expire before its EXPIRE).
	Deadline int64 `json:"deadline,omitempty"`
	// Session, on an acquire ok, says the lease lasts as long as the
	// holder's connection to the server (a database row held FOR UPDATE,
	// GET_LOCK): it has no deadline, and the holder's crash, which closes
	// the connection, ends it. A lease without it and without a deadline
	// (setnx) outlives a crash for ever.
	Session bool `json:"session,omitempty"`
	// Nodes, on an acquire or renew ok of a lock over several independent
	// nodes (Redlock), names the nodes that granted it, and Quorum is how
	// many grants the lock needed: a claim granted by exactly Quorum nodes
	// rests on every one of them, and one node losing its key early (a
	// clock jump, a restart) lets another client assemble a majority.
	Nodes  []string `json:"nodes,omitempty"`
	Quorum int      `json:"quorum,omitempty"`

	// Counter is the value read (read ok) or written (write invoke/ok).
	Counter *int64 `json:"counter,omitempty"`
	// Rejected is set on a write ok that the storage refused because its
	// fencing token was stale: the write completed and changed nothing.
	Rejected bool `json:"rejected,omitempty"`

	// Duration, for pauses, in nanoseconds.
	Duration int64 `json:"duration,omitempty"`

	// Targets names what a nemesis event affected: nodes ("n1"), links
	// ("c0->n2"), clients ("c3").
	Targets []string `json:"targets,omitempty"`
	// Detail is a short human description ("clock +60s", "aof-always"),
	// for people: reports read the fields below, never this text.
	Detail string `json:"detail,omitempty"`

	// Fault, on a nemesis event, is the fault it puts in force on Targets
	// ("partition", "clock", "kill", "pause", "promote", …), and Ends the
	// faults it ends there (or every open one of those when it names none
	// of their targets): "stop-partition" ends "partition", "promote" ends
	// a "replication cut" and starts a "promote". Mark is set on an event
	// that is neither (a moment worth showing: "await-promotion"). A
	// nemesis event with none of the three comes from a history recorded
	// before these fields existed; readers fall back on its f.
	Fault string   `json:"fault,omitempty"`
	Ends  []string `json:"ends,omitempty"`
	Mark  bool     `json:"mark,omitempty"`
	// Clocks are, on a clock fault, each target node's new clock.
	Clocks []NodeClock `json:"clocks,omitempty"`
	// Shard is, on a Redis Cluster fault (a slot's failover, a slot
	// move), the slot struck and what became of it.
	Shard *ShardChange `json:"shard,omitempty"`

	// NotHeld is set on the fail of a release or renew when the lock
	// answered that the lease is no longer the caller's (locks.ErrNotHeld):
	// a definite "not held", as opposed to a command the server refused (a
	// Redis error reply, also a fail). Only such an answer, given before
	// the lease's deadline, is evidence that the lock lost the lease early.
	NotHeld bool `json:"not_held,omitempty"`
}

// ShardChange is what a Redis Cluster fault did to one hash slot.
type ShardChange struct {
	// Key is the lock key that led to the slot.
	Key  string `json:"key"`
	Slot int    `json:"slot"`
	// From is the slot's master before, To the node serving it after
	// (as that node reports itself).
	From string `json:"from"`
	To   string `json:"to"`
	// Mode is a failover's CLUSTER FAILOVER option ("" graceful, "force",
	// "takeover"); empty on a slot move.
	Mode string `json:"mode,omitempty"`
	// Keys is how many keys a slot move migrated.
	Keys int `json:"keys,omitempty"`
	// Took is how long the change took, in nanoseconds: from the command
	// to the new master confirming its role, or the whole move.
	Took int64 `json:"took,omitempty"`
}

// NodeClock is one node's clock as a clock fault left it. Durations are
// nanoseconds; a nil pointer means the fault did not say.
type NodeClock struct {
	Node string `json:"node"`
	// Delta is the jump a bump made (positive: forward).
	Delta *int64 `json:"delta,omitempty"`
	// Offset is how far ahead of real time the node's clock read once the
	// change was confirmed (negative: behind).
	Offset *int64 `json:"offset,omitempty"`
	// Rate is a drifting clock's rate (2: twice as fast); 0 when not set.
	Rate float64 `json:"rate,omitempty"`
	// Strobe is the two offsets a strobing clock flips between, every
	// Period.
	Strobe []int64 `json:"strobe,omitempty"`
	Period int64   `json:"period,omitempty"`
}

// Op is one history event.
//
// Process is the thread of execution that performed it: an invocation and
// its completion have the same Process, and a process has at most one
// invocation of each f outstanding. A lock's background renewer (a
// Redisson-style watchdog) runs beside its client, so its renews are
// recorded under a process number of their own (a renewer thread) with
// Owner set to the client process whose lease they renew: the renewer's
// calls pair unambiguously however they overlap the client's (or another
// renewer's), and the checker attributes their effect to the owner. A
// lock failpoint that pauses a renewer thread is recorded as a pause of
// such a thread with the same Owner: the watchdog stood still, its client
// did not. Owner is absent on every other event, and in histories recorded
// before renewer threads existed (their renews carry the client's own
// process number).
type Op struct {
	Index   int64   `json:"index"`
	Time    int64   `json:"time"` // nanoseconds since the run started, one monotonic clock
	Process Process `json:"process"`
	// Owner is the client process on whose behalf a renewer thread acted
	// (renew and pause events only); nil otherwise.
	Owner *Process `json:"owner,omitempty"`
	Type  Type     `json:"type"`
	F     string   `json:"f"`
	Key   string   `json:"key,omitempty"`
	Value *Value   `json:"value,omitempty"`
	// Error is the error text of a fail or info completion.
	Error string `json:"error,omitempty"`
}

// Validate checks the invariants every event must satisfy on its own.
// MaxTime bounds every time, deadline and duration of a history: ten
// years of nanoseconds, far past any run (a run's time limit is at most a
// day), and small enough that the checkers' sums of a few of them cannot
// overflow int64 (MaxInt64 is about 29 MaxTimes). A time near MaxInt64
// made a deadline plus a TTL wrap around: "held it from never", and a
// false INVALID.
const MaxTime = int64(10 * 365 * 24 * time.Hour)

func (o Op) Validate() error { return o.validate() }

// validate is Validate without copying the event (the reader validates
// every event it decodes).
func (o *Op) validate() error {
	if !o.Type.Valid() {
		return fmt.Errorf("unknown type %q (want invoke, ok, fail or info)", o.Type)
	}
	if o.F == "" {
		return fmt.Errorf("missing f")
	}
	if o.Time < 0 {
		return fmt.Errorf("negative time %d", o.Time)
	}
	if o.Time > MaxTime {
		return fmt.Errorf("event %d: time %d ns is out of range: a history's times are nanoseconds since its run began, at most %d (ten years)", o.Index, o.Time, MaxTime)
	}
	if o.Index < 0 {
		return fmt.Errorf("negative index %d", o.Index)
	}
	if o.Owner != nil {
		switch {
		case o.Owner.IsNemesis() || o.Process.IsNemesis():
			return fmt.Errorf("owner is only for client processes (process %s, owner %s)", o.Process, o.Owner)
		case o.F != FRenew && o.F != FPause:
			return fmt.Errorf("owner on a %s event: only a renewer thread's renews and pauses have an owner", o.F)
		}
	}
	if v := o.Value; v != nil {
		// Times and counts the harness writes are never negative; a
		// negative one would make a lease end before the run began.
		switch {
		case v.Deadline < 0:
			return fmt.Errorf("event %d: negative deadline %d", o.Index, v.Deadline)
		case v.Fence < 0:
			return fmt.Errorf("event %d: negative fence %d", o.Index, v.Fence)
		case v.Duration < 0:
			return fmt.Errorf("event %d: negative duration %d", o.Index, v.Duration)
		case v.Deadline > MaxTime || v.Duration > MaxTime:
			return fmt.Errorf("event %d: deadline %d or duration %d ns is out of range: at most %d (ten years after the run began)", o.Index, v.Deadline, v.Duration, MaxTime)
		}
	}
	return nil
}

func (o Op) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}
