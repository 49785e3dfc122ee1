package checker

// instant is a point in a history's total order: run-clock time, then
// history index. Events at the same nanosecond are still ordered (the
// recorder numbers them in the order they happened). A lease deadline is a
// time at which no event happens: it comes before every event of that
// nanosecond (idx -1), so a lease with deadline d has run out for an event
// at time d.
//
// Both lock-promise definitions (claims and the lease-mutex model) compare
// instants, never bare times, and porcupine is given history indexes as its
// clock; that is what makes them agree exactly, ties included.
type instant struct{ t, i int64 }

var forever = instant{never, never}

func (a instant) less(b instant) bool { return a.t < b.t || (a.t == b.t && a.i < b.i) }

func minInstant(a, b instant) instant {
	if b.less(a) {
		return b
	}
	return a
}

// deadlineAt is the instant a lease with deadline d (never = none) runs out.
func deadlineAt(d int64) instant {
	if d == never {
		return forever
	}
	return instant{d, -1}
}

// eventAt is the instant of the event with history index idx at time t;
// forever when the event never happened (idx < 0).
func eventAt(t, idx int64) instant {
	if idx < 0 {
		return forever
	}
	return instant{t, idx}
}
