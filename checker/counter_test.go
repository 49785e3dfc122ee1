package checker

import (
	"reflect"
	"testing"
)

// Reads that failed or saw nothing open no section; a write's outcome and
// the value it wrote come from its completion when its invocation does
// not say.
func TestSectionsOfFailedAndUnknownReadsAndWrites(t *testing.T) {
	b := &hb{}
	// Process 1: a failed read and one without a value, then a read of 0
	// and a write of 1 that failed.
	b.inv(0, 1, "read", "lock-0", nil).fail(ms, 1, "read", "lock-0")
	b.inv(2*ms, 1, "read", "lock-0", nil).ok(3*ms, 1, "read", "lock-0", nil)
	b.inv(4*ms, 1, "read", "lock-0", nil).ok(5*ms, 1, "read", "lock-0", ctr(0))
	b.inv(6*ms, 1, "write", "lock-0", ctr(1)).fail(7*ms, 1, "write", "lock-0")
	// Process 2: a read of 0, then a write whose value only its
	// completion records.
	b.inv(10*ms, 2, "read", "lock-0", nil).ok(11*ms, 2, "read", "lock-0", ctr(0))
	b.inv(12*ms, 2, "write", "lock-0", nil).ok(13*ms, 2, "write", "lock-0", ctr(1))
	// Process 3: a blind write of unknown outcome.
	b.inv(20*ms, 3, "write", "lock-0", ctr(5)).info(21*ms, 3, "write", "lock-0")

	got := sections(mustPrepare(t, b.ops))["lock-0"]
	want := []Section{
		{Process: 1, HasRead: true, Read: 0, Write: WriteFailed, Wrote: 1, ReadIndex: 4, WriteIndex: 7, Start: 4 * ms, End: 7 * ms, Call: 4, Return: 7},
		{Process: 2, HasRead: true, Read: 0, Write: WriteAccepted, Wrote: 1, ReadIndex: 8, WriteIndex: 11, Start: 10 * ms, End: 13 * ms, Call: 8, Return: 11},
		{Process: 3, Write: WriteUnknown, Wrote: 5, ReadIndex: -1, WriteIndex: 13, Start: 20 * ms, End: never, Call: 12, Return: never},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections\n%+v\nwant\n%+v", got, want)
	}
	r := check(t, b.ops)
	if st := r.Checkers[Resource].Stats; st["failed-writes"] != 1 || st["accepted-writes"] != 1 || st["unknown-writes"] != 1 || st["sections"] != 3 {
		t.Errorf("resource stats %v", st)
	}
}
