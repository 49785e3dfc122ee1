package schedule

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseFile(t *testing.T, path string) Schedule {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Parse(f, Env{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

func TestParseReadsEveryPart(t *testing.T) {
	s := parseFile(t, "testdata/gc-pause.yaml")
	if s.Lock != "set-nx-ex" || s.Workload.TTL != time.Second || s.TimeLimit != 3500*time.Millisecond {
		t.Errorf("config %+v", s)
	}
	if len(s.Steps) != 1 || s.Steps[0].Params["duration"] != "2.5s" || s.Steps[0].Await.LeaseLeft != 500*time.Millisecond {
		t.Errorf("steps %+v", s.Steps)
	}
	if s.Expect["resource"] != "invalid" || !s.Exposure[0].PauseOutlived {
		t.Errorf("expect %v exposure %v", s.Expect, s.Exposure)
	}
	if s.Explanation != "A holds the lock and pauses.\n\nB takes it." {
		t.Errorf("explanation %q", s.Explanation)
	}
	ns := s.Steps[0].NemesisStep()
	if back := StepOf(ns); !reflect.DeepEqual(back, s.Steps[0]) {
		t.Errorf("step round trip %+v, want %+v", back, s.Steps[0])
	}
}

// roundTrip checks Parse(Write(s)) == s.
func roundTrip(t *testing.T, s Schedule) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(bytes.NewReader(buf.Bytes()), Env{})
	if err != nil {
		t.Fatalf("parse what Write wrote: %v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(back, s.normal()) {
		t.Fatalf("round trip changed the schedule:\n got %+v\nwant %+v\n%s", back, s.normal(), buf.String())
	}
}

func TestWriteRoundTrips(t *testing.T) {
	s := parseFile(t, "testdata/gc-pause.yaml")
	roundTrip(t, s)
	s.Explanation = strings.Repeat("a long explanation that Write wraps, ", 20) + "\n\nand a second paragraph."
	s.Steps = append(s.Steps, Step{At: 2 * time.Second, Nemesis: "partition", Action: "start", Targets: []string{"c0->n1"},
		Params: map[string]string{"pattern": "isolate"}, Await: &Await{}, Struck: 2100 * time.Millisecond, Waited: 100 * time.Millisecond, Holder: "process 3 on lock-0"})
	s.Deployment.Faketime = true
	s.Nemesis.Names = []string{"clock"}
	s.Kinds = []Kind{{System: "redis", Has: []string{"expiring lease"}, Lacks: []string{"fencing"}, Expect: map[string]string{"resource": "invalid"}}}
	roundTrip(t, s)
}

// TestParseRefusesBadInput: every malformed schedule is refused with the
// line at fault and the fix.
func TestParseRefusesBadInput(t *testing.T) {
	good, err := os.ReadFile("testdata/gc-pause.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("testdata lacks %q", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"unknown fault", edit("nemesis: client-pause", "nemesis: partiton"), []string{"line 15:", `unknown fault "partiton"`, "known:", "partition"}},
		{"unknown field", edit("    action: holder", "    acton: holder"), []string{"line 16:", `unknown field "acton" in a step`, "known: action, at, await"}},
		{"unknown top field", edit("seed: 1", "sed: 1"), []string{"line 4:", `unknown field "sed" in the schedule`}},
		{"missing target", edit("    action: holder", "    action: holder\n    targets: [n7]"), []string{"line 17:", `no node or client "n7"`, "nodes n1, clients c0 to c1"}},
		{"missing link end", edit("    action: holder", "    action: holder\n    targets: [c0->n2]"), []string{"line 17:", `ends at "n2"`}},
		{"negative duration", edit("hold: 300ms", "hold: -300ms"), []string{"line 9:", "negative duration -300ms"}},
		{"absurd duration", edit("time_limit: 3.5s", "time_limit: 90000h"), []string{"line 11:", "longer than a day"}},
		{"no unit", edit("ttl: 1s", "ttl: 1"), []string{"line 8:", "duration with its unit"}},
		{"bad param duration", edit("{duration: 2.5s}", "{duration: long}"), []string{"line 17:", `"long" is not a duration`}},
		{"await never holds", edit("{lease_left: 500ms}", "{lease_left: 2s}"), []string{"line 18:", "can never hold", "TTL"}},
		{"await by a missing node", edit("{lease_left: 500ms}", "{granted: [n3]}"), []string{"line 18:", "n3", "can never hold"}},
		{"bare quorum on one node", edit("{lease_left: 500ms}", "{bare_quorum: true}"), []string{"line 18:", "bare quorum", "can never hold"}},
		{"step after the end", edit("at: 100ms", "at: 10s"), []string{"line 14:", "after the run phase ends"}},
		{"unknown lock", edit("lock: set-nx-ex", "lock: set-nx-exx"), []string{"line 3:", `unknown lock "set-nx-exx"`}},
		{"unknown verdict", edit("resource: invalid", "resource: broken"), []string{"line 21:", `unknown verdict "broken"`}},
		{"unknown checker", edit("resource: invalid", "resources: invalid"), []string{"line 21:", `unknown checker "resources"`}},
		{"unknown strike", edit("pause_struck: true", "pause_struck: true\n    faults: [partiton]"), []string{"line 26:", `no fault records "partiton"`}},
		{"two documents", string(good) + "---\nlock: token\n", []string{"line 33:", "second YAML document"}},
		{"empty", "", []string{"line 1:", "empty"}},
		{"not yaml", "lock: [", []string{"line 1:"}},
		{"too large", "lock: token\nexplanation: " + strings.Repeat("x", MaxSize), []string{"larger than"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.text), Env{})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// end_early reads back as written, in one line, as params are.
func TestEndEarlyRoundTrips(t *testing.T) {
	src := "lock: token\ntime_limit: 3s\nend_early: {run: true, grants: 3, recovery: true}\nsteps:\n  - at: 100ms\n    nemesis: client-crash\n    action: holder\n"
	s, err := Parse(strings.NewReader(src), Env{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (EndEarly{Run: true, Grants: 3, Recovery: true}); s.EndEarly != want {
		t.Errorf("EndEarly = %+v, want %+v", s.EndEarly, want)
	}
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nend_early: {run: true, grants: 3, recovery: true}\n") {
		t.Errorf("written:\n%s", buf.String())
	}
	if _, err := Parse(strings.NewReader("lock: token\nend_early: {run: true, until: 3s}\n"), Env{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an unknown end_early field: %v", err)
	}
}
