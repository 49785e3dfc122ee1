package reports

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

// appendHold writes a hold as json.Marshal does, byte for byte: holds.jsonl
// reads the same whichever wrote it.
func TestAppendHoldIsJSON(t *testing.T) {
	// A field added to Hold must be added to appendHold too.
	if n := reflect.TypeFor[checker.Hold]().NumField(); n != 7 {
		t.Fatalf("checker.Hold has %d fields; appendHold writes 7: add the new ones to it", n)
	}
	for _, h := range []checker.Hold{
		{},
		{Process: 3, Key: "lock-0", Start: 1, End: 2, Acquire: 5},
		{Process: 1 << 30, Key: "k", Start: -1, End: 1 << 62, Deadline: 9, Fence: 4, Acquire: 1 << 40},
		{Key: `a"b\c<d>&e`, Deadline: -3},
		{Key: "é\u2028\x01\xff", Fence: 1},
	} {
		want, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendHold(nil, &h); string(got) != string(want) {
			t.Errorf("%+v:\n got %s\nwant %s", h, got, want)
		}
	}
}
