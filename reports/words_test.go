package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// The configuration of a recorded scenario (cli/testdata/oldruns) in
// human rows: no nanoseconds, no zeroed field, one key case, the script
// and the required exposure in words, the shared clients once.
func TestConfigRowsAreForPeople(t *testing.T) {
	raw := json.RawMessage(`{"lock":"redlock","nodes":5,
	 "workload":{"Clients":2,"Keys":1,"TTL":2000000000,"AcquireTimeout":1000000000,"ClientPause":0,"Hold":1400000000,"RenewBeforeWrite":false,"Seed":1},
	 "cluster":{"Nodes":0,"Clients":2,"Dir":"","Faketime":true},
	 "nemesis":{"Names":null,"Interval":5000000000,"Seed":1},
	 "script":[{"At":0,"Nemesis":"partition","Action":"start","Targets":["c0->n4","c1->n1"],"Params":{"pattern":"client-split"}},
	           {"At":2300000000,"Nemesis":"clock","Action":"bump","Targets":["n3"],"Params":{"delta":"+10s"}}],
	 "require":[{"name":"the clock jump","faults":["bump-clock"]}],
	 "time_limit":5000000000,"recovery":1500000000,"seed":1,"store":"store","command":"harness scenario run x"}`)
	got := map[string]string{}
	var names []string
	for _, r := range ConfigRows(raw) {
		got[r.Name] = r.Value
		names = append(names, r.Name)
	}
	want := map[string]string{
		"nodes": "5", "clients": "2", "keys": "1", "TTL": "2 s", "acquire timeout": "1 s", "hold": "1.4 s",
		"faketime": "yes", "time limit": "5 s", "recovery": "1.5 s",
		"fault script":      "partition start at 0 s on c0->n4, c1->n1 (pattern client-split); clock bump at 2.3 s on n3 (delta +10s)",
		"required exposure": "the clock jump",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows %q, want only %d: no zero, no seed, store, command, nor the tuning of nemeses not chosen", names, len(want))
	}
	for _, n := range names {
		if n != keyWords(n) || strings.ContainsAny(n, "_ABCDEFGHIJKLMNOPQRSUVWXYZ") && n != "TTL" {
			t.Errorf("row name %q is not in words", n)
		}
	}
}

func TestKeyWords(t *testing.T) {
	for in, want := range map[string]string{
		"AcquireTimeout": "acquire timeout", "time_limit": "time limit", "TTL": "TTL",
		"ClusterNodeTimeout": "cluster node timeout", "RenewBeforeWrite": "renew before write", "Keys": "keys",
	} {
		if got := keyWords(in); got != want {
			t.Errorf("keyWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// Seventeen identical client pauses are one line, with how many struck
// a holder; the nemesis's faults are grouped by family with the range of
// their lengths.
func TestFaultsAreGrouped(t *testing.T) {
	s := Scale{TTL: time.Second}
	var ops []history.Op
	for i := 0; i < 17; i++ {
		ops = append(ops, history.Op{Process: history.Process(i % 5), Type: history.Invoke, F: history.FPause, Time: int64(i) * 5e8,
			Value: &history.Value{Duration: int64(1500 * time.Millisecond)}})
	}
	g := GroupClientPauses(ops, s, true, checker.PauseCoverage{Total: 17, StruckHolder: 17, OutlivedLease: 16})
	if len(g) != 1 || len(g[0].Items) != 17 {
		t.Fatalf("groups %+v, want one of 17", g)
	}
	if want := "17 client pauses of 1.5 s = 1.5 × TTL (1 s), 17 struck a holder, 16 outlived the lease"; g[0].Title != want {
		t.Errorf("title %q, want %q", g[0].Title, want)
	}
	ops = append(ops, history.Op{Process: 1, Type: history.Invoke, F: history.FPause, Value: &history.Value{Duration: int64(300 * time.Millisecond)}})
	if g := GroupClientPauses(ops, s, true, checker.PauseCoverage{Total: 18, StruckHolder: 3}); len(g) != 3 || !strings.HasPrefix(g[2].Title, "Of all 18 client pauses, 3 struck") {
		t.Errorf("two lengths: %+v", g)
	}

	faults := []Fault{
		{Family: "partition", F: "start-partition", Start: 1e9, End: 2e9, Stopped: true, Label: "partition a"},
		{Family: "partition", F: "start-partition", Start: 3e9, End: 5.5e9, Stopped: true, Label: "partition b"},
		{Family: "kill", F: "kill", Targets: []string{"n1"}, Start: 4e9, End: 4.5e9, Stopped: true, Label: "kill n1"},
	}
	cov := checker.Coverage{Faults: map[string]checker.FaultCoverage{"start-partition": {TookEffect: 2, StruckHolder: 1}, "kill": {TookEffect: 1}}}
	fg := GroupFaults(faults, s, true, cov)
	if len(fg) != 2 {
		t.Fatalf("groups %+v, want partition and kill", fg)
	}
	if want := "2 partitions of 1 s to 2.5 s = 1 to 2.5 × TTL (1 s), 1 struck a holder"; fg[0].Title != want {
		t.Errorf("title %q, want %q", fg[0].Title, want)
	}
	if want := "1 kill of 500 ms = 0.5 × TTL (1 s), 0 struck a holder"; fg[1].Title != want {
		t.Errorf("title %q, want %q", fg[1].Title, want)
	}
}

func TestStatWordsAreSentences(t *testing.T) {
	got := strings.Join(StatWords(map[string]float64{
		"recovery-success-rate/lock-0": 0.08413, "unavailable-ms/lock-0": 35.16, "unavailable-ms": 35.16,
		"recovery-ms": 2000, "recovery-acquire-attempts": 107, "recovery-acquire-ok": 9, "recovery-success-rate": 0.08413,
		"claims": 12, "overlaps": 1, "foreign-releases": 0, "lost-leases": 0,
	}), " ")
	for _, want := range []string{"Recovery lasted 2 s: 9 of 107 acquires succeeded (8%).", "12 claims, 1 overlapping claim, no foreign releases, no lost leases.", "free for 35 ms in all"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "recovery-success-rate") || strings.Contains(got, "0.08413") {
		t.Errorf("raw keys left: %q", got)
	}
	if got := StatWords(map[string]float64{"new-stat": 2}); len(got) != 1 || got[0] != "Also: new-stat 2." {
		t.Errorf("an unknown statistic: %q", got)
	}
}

func TestAnInstantIsAt(t *testing.T) {
	got := sameSpan("process 4 released lock-0 (from 2.691s to 2.691s) while process 2 held it (from 1.000s to 2.000s)")
	if want := "process 4 released lock-0 (at 2.691s) while process 2 held it (from 1.000s to 2.000s)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLinkTerms(t *testing.T) {
	got := string(LinkTerms(`2 foreign releases & a stale write <b>; a stale write again`))
	want := `2 <a class="term" href="#g-foreign-release">foreign releases</a> &amp; a <a class="term" href="#g-stale-write">stale write</a> &lt;b&gt;; a stale write again`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Every term the page links has its entry in the glossary, and the
// glossary is on the page.
func TestIndexLinksItsTermsToTheGlossary(t *testing.T) {
	meta, ops, res := clockFixture()
	dir := outDir(t, "glossary")
	if err := renderOps(t.Context(), dir, meta, ops, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	links := regexp.MustCompile(`href="#(g-[a-z-]+)"`).FindAllStringSubmatch(page, -1)
	if len(links) < 3 {
		t.Fatalf("%d links to the glossary, want the terms of the violations and checkers linked", len(links))
	}
	for _, l := range links {
		if !strings.Contains(page, `id="`+l[1]+`"`) {
			t.Errorf("link to #%s has no glossary entry", l[1])
		}
	}
	for _, term := range []string{"vacuous", "struck a holder", "claim", "foreign release", "lost lease", "stale write", "fencing token", "exposure", "recovery"} {
		if !strings.Contains(page, `<dt id="`+termAnchor(term)+`">`) {
			t.Errorf("the glossary lacks %q", term)
		}
	}
}

func TestGroupFiles(t *testing.T) {
	g := GroupFiles([]string{"history.jsonl", "index.html", "harness.log", "timeline.png", "timeline-violation-1.png", "porcupine-lock-0.html", "run.json"})
	var got []string
	for _, x := range g {
		got = append(got, x.Name+":"+strings.Join(x.Files, ","))
	}
	want := []string{"the record of the run (re-check it with harness report):history.jsonl,run.json", "logs:harness.log",
		"close-ups of violations:timeline-violation-1.png", "porcupine's views:porcupine-lock-0.html", "figures:timeline.png"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
