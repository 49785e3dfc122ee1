package nemesis

import (
	"reflect"
	"slices"
	"testing"
)

// The native partition's schedule: one side against every other member,
// drawn from the seed, and its heal.
func TestNativePartitionSchedule(t *testing.T) {
	topo := Topology{Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Clients: 2}
	r, err := New(Config{Names: []string{"native-partition"}, Seed: 3, Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	steps := r.Schedule(60 * r.Config().Interval)
	if len(steps) < 2 {
		t.Fatalf("schedule of %d steps", len(steps))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(steps); i += 2 { // the limit may cut the last stop
		start, stop := steps[i], steps[i+1]
		if start.Action != "start" || stop.Action != "stop" || stop.At-start.At != r.Config().Interval {
			t.Fatalf("steps %v, %v", start, stop)
		}
		pat := start.Params["pattern"]
		seen[pat] = true
		switch pat {
		case PatternIsolate:
			if len(start.Targets) != 1 {
				t.Errorf("isolate cuts %v", start.Targets)
			}
		case PatternHalves:
			if len(start.Targets) != 2 || !slices.IsSorted(start.Targets) {
				t.Errorf("halves of 5 nodes cuts %v", start.Targets)
			}
		default:
			t.Errorf("pattern %q", pat)
		}
	}
	if !seen[PatternIsolate] || !seen[PatternHalves] {
		t.Errorf("patterns drawn: %v", seen)
	}
	if again := r.Schedule(60 * r.Config().Interval); !reflect.DeepEqual(again, steps) {
		t.Error("the same seed drew another schedule")
	}
	got := sidePairs([]string{"n1", "n2"}, []string{"n1", "n2", "n3", "s1"})
	want := [][2]string{{"n1", "n3"}, {"n1", "s1"}, {"n2", "n3"}, {"n2", "s1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
}
