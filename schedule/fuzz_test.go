package schedule

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzParse: whatever the bytes, Parse returns a schedule or an error
// naming a line, never panics, and what it accepts Write writes back to
// the same schedule.
func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile("testdata/gc-pause.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("lock: token\n"))
	f.Add([]byte("lock: token\nsteps:\n  - {at: 1s, nemesis: kill, action: kill, targets: [n1]}\n"))
	f.Add([]byte("lock: [\n"))
	f.Add([]byte("---\nlock: a\n---\nlock: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data), Env{})
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, s); err != nil {
			t.Fatalf("write an accepted schedule: %v", err)
		}
		back, err := Parse(bytes.NewReader(buf.Bytes()), Env{})
		if err != nil {
			t.Fatalf("parse what Write wrote: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the schedule:\n got %+v\nwant %+v", back, s)
		}
	})
}
