// Package checker proves or refutes a recorded history: the lock promise
// (mutual exclusion, by overlap analysis and by a porcupine lease-mutex
// model), the protected resource (a porcupine counter model, the final
// count, stale writes) and liveness. Checkers compose; one that times out or
// cannot read its input yields unknown, never valid.
package checker

// Verdict is the outcome of a check.
type Verdict string

// The three verdicts. Exit codes of the CLI: 0 valid, 1 invalid, 2 unknown.
const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown"
)

// Combine returns the verdict of checks composed together: invalid if any is
// invalid, else unknown if any is unknown, else valid.
func Combine(vs ...Verdict) Verdict {
	out := Valid
	for _, v := range vs {
		switch v {
		case Invalid:
			return Invalid
		case Unknown:
			out = Unknown
		case Valid:
		default:
			out = Unknown
		}
	}
	return out
}

// Violation kinds.
const (
	// KindOverlap: two processes were told they held the same key at once.
	KindOverlap = "overlap"
	// KindForeignRelease: a release (or renew) succeeded while another
	// process's claim on that key was live: it removed (or extended)
	// someone else's lock. A renew by a stale watchdog (its client no longer
	// held the lease, or had crashed) is one.
	KindForeignRelease = "foreign-release"
	// KindLostLease: the lock answered a holder's release or renew with a
	// definite "not held" while the holder's lease was certainly still
	// live: it lost the lease before its deadline, whether or not another
	// client got in.
	KindLostLease = "lost-lease"
	// KindLostUpdate: critical sections on the protected resource are not
	// linearizable (two sections read the same value and both wrote).
	KindLostUpdate = "lost-update"
	// KindFinalCount: the final counter differs from the accepted writes.
	KindFinalCount = "final-count"
	// KindStaleWrite: a write was made after the writer's lease had expired.
	KindStaleWrite = "stale-write"
	// KindFenceBackwards: a grant's fencing token was not greater than the
	// token of a grant that completed before it was asked for: the counter
	// that numbers grants went backwards (lost on a flush or a failover),
	// so the storage refuses the new holder or takes a stale one's writes.
	KindFenceBackwards = "fence-backwards"
	// KindUnavailable: a key stayed unavailable through the whole recovery
	// period after the final heal.
	KindUnavailable = "unavailable"
	// KindNonLinearizable: porcupine found no linearization of the lease
	// mutex model for a key.
	KindNonLinearizable = "non-linearizable"
)

// Violation is one finding, with everything needed to show it: which
// checker, which key, which processes, when (run-clock nanoseconds), which
// history events, and a sentence in plain words.
type Violation struct {
	Checker   string  `json:"checker"` // "lock-promise", "resource", "liveness"
	Kind      string  `json:"kind"`
	Key       string  `json:"key,omitempty"`
	Processes []int   `json:"processes,omitempty"`
	Start     int64   `json:"start"`
	End       int64   `json:"end"`
	Events    []int64 `json:"events,omitempty"` // history indexes involved
	// Fatal is false for findings that are reported but do not by
	// themselves make the verdict invalid (a stale write that storage
	// rejected or that lost nothing).
	Fatal       bool   `json:"fatal"`
	Description string `json:"description"`
	// clippedFrom is the end of a finding that outlasts the events of
	// the window that found it (an overlap of claims that end later or
	// never), 0 for one shown to its end: its End is clipped at the
	// window's last event, and compose clips it again at the history's
	// last, as the whole check does, and clears this.
	clippedFrom int64
}

// Hold is one claim of the lock promise: process p was told it holds key
// from Start until End (the earlier of its release invoke and its lease
// deadline; End is -1 when the claim never ended in the history).
type Hold struct {
	Process  int    `json:"process"`
	Key      string `json:"key"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
	Deadline int64  `json:"deadline,omitempty"` // lease deadline, 0 = never
	Fence    int64  `json:"fence,omitempty"`
	Acquire  int64  `json:"acquire"` // history index of the acquire ok
}

// CheckResult is one checker's outcome.
type CheckResult struct {
	Verdict Verdict `json:"verdict"`
	// Reason explains unknown (timeout, unusable history) or summarises.
	Reason string `json:"reason,omitempty"`
	// Stats are named numbers the checker measured (holds, sections,
	// unavailable-ms, …).
	Stats map[string]float64 `json:"stats,omitempty"`
}

// Result is everything the checkers found about one history.
type Result struct {
	Verdict Verdict `json:"verdict"`
	// Reason explains an unknown overall verdict that no checker's reason
	// does: a valid verdict without the required exposure ("valid but
	// vacuous: …").
	Reason string `json:"reason,omitempty"`
	// Coverage is what the history exercised: grants, faults that took
	// effect and struck a holder, client pauses and crashes.
	Coverage Coverage `json:"coverage"`
	// Vacuous lists, in words, each required exposure the history did not
	// reach (see Config.Require). It makes a valid verdict unknown unless
	// Config.AllowVacuous.
	Vacuous []string `json:"vacuous,omitempty"`
	// Checkers by name: "lock-promise", "resource", "liveness".
	Checkers map[string]CheckResult `json:"checkers"`
	// Counts of completions: f → type → n (for example acquire → ok → 812).
	Counts map[string]map[string]int `json:"counts"`
	// Violations, ordered by start time.
	Violations []Violation `json:"violations"`
	// Holds are the lock-promise claims, for plots. The windowed check of
	// a long history file keeps them in a file instead, and Holds is
	// empty: read them with EachHold.
	Holds   []Hold    `json:"holds,omitempty"`
	spilled *holdFile // the holds, when kept in a file
	// NonLinearizableKeys lists keys whose lease-mutex or counter history
	// porcupine refuted, for visualisation. A key whose porcupine check ran
	// out of time is listed too when an exact check of the same definition
	// refuted it (an overlap or foreign release, two accepted writes of the
	// same read).
	NonLinearizableKeys []string `json:"non_linearizable_keys,omitempty"`
	// Seen is what the check saw of the history besides its verdict, for
	// whoever shows it (see Seen).
	Seen Seen `json:"-"`
}
