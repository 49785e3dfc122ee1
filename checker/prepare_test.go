package checker

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// An event that breaks history.Op's own rules, or whose completion is
// recorded for another owner than its invocation, makes the history
// unusable, and says where.
func TestUnusableHistoriesOfMalformedEvents(t *testing.T) {
	owner := func(p int) *history.Process { o := history.Process(p); return &o }
	for want, ops := range map[string][]history.Op{
		"event 1: missing f": {
			{Index: 0, Time: 0, Process: 1, Type: history.Invoke, F: "acquire", Key: "lock-0"},
			{Index: 1, Time: ms, Process: 1, Type: history.OK, Key: "lock-0"},
		},
		"event 0: negative deadline": {
			{Index: 0, Time: 0, Process: 1, Type: history.Invoke, F: "acquire", Key: "lock-0", Value: &history.Value{Deadline: -1}},
		},
		"event 1: renew ok by process 9 for owner 2 completes an invocation for owner 1": {
			{Index: 0, Time: 0, Process: 9, Owner: owner(1), Type: history.Invoke, F: "renew", Key: "lock-0"},
			{Index: 1, Time: ms, Process: 9, Owner: owner(2), Type: history.OK, F: "renew", Key: "lock-0"},
		},
	} {
		_, err := prepare(ops)
		if err == nil || !strings.Contains(err.Error(), "unusable history: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v", want, err)
		}
	}
}

// A nemesis may record an event without an invocation (a notice): it is
// kept as it is, ended where it began; and only a final heal that
// completed ok is the final heal.
func TestNemesisNoticeWithoutInvocation(t *testing.T) {
	b := &hb{}
	b.nem(0, history.Info, "notice")
	b.nem(ms, history.Invoke, history.FFinalHeal).nem(2*ms, history.Fail, history.FFinalHeal)
	b.nem(3*ms, history.OK, history.FFinalHeal) // a notice of its own: the heal
	p := mustPrepare(t, b.ops)
	if len(p.nemesis) != 3 {
		t.Fatalf("nemesis events %+v", p.nemesis)
	}
	n := p.nemesis[0]
	if n.f != "notice" || n.start != 0 || n.end != 0 || n.typ != history.Info || n.idx != 0 || n.endIdx != 0 {
		t.Errorf("notice %+v", n)
	}
	if h := p.nemesis[1]; h.start != ms || h.end != 2*ms || h.typ != history.Fail || h.endIdx != 2 {
		t.Errorf("failed heal %+v", h)
	}
	if p.heal != 3*ms {
		t.Errorf("final heal at %d, want the ok notice's %d", p.heal, 3*ms)
	}
}

// The windows the cutter takes index their calls by its numbering of
// their keys (callKeyIDs, indexKeyIDs): p.keys, p.keyLists and p.keyless
// come out as indexKeys makes them from the keys' strings, on random
// histories with crashes (whose session leases make calls no event
// numbers: indexKeys then), renewer threads, pauses and calls that name
// no key, and numbering by the cutter is what most windows use.
func TestKeyIDsIndexAsKeyStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 27))
	byIDs, windows := 0, 0
	for trial := range 60 {
		ops := genLockHistory(rng, genConfig{procs: 4, keys: 1 + trial%7, opsPerProc: 60, maxLat: 4, maxGap: 30, maxTTL: 40,
			pInfo: 0.1, crash: trial%2 == 0, renewers: trial%3 == 0, sessions: trial%4 < 2})
		for i := range ops {
			switch {
			case trial%5 == 0 && ops[i].Key == "lock-0":
				ops[i].Key = "" // a call that names no key
			case trial%5 == 1 && ops[i].F == history.FCrash:
				ops[i].F, ops[i].Key = history.FPause, "lock-1" // global, yet it names a key
			}
		}
		cut := newCutter(nil)
		check := func(win []history.Op) {
			windows++
			c := newCarry("", 0)
			c.winKeys, c.winNames = cut.winKeys, cut.winNames
			if callKeyIDs(mustPrepare(t, win), win, cut.winKeys) != nil {
				byIDs++
			}
			got, gerr := prepareWith(win, c)
			want, werr := prepareWith(win, nil)
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("trial %d: errors %v and %v", trial, gerr, werr)
			}
			if gerr != nil {
				return
			}
			if !slices.Equal(got.keys, want.keys) || got.keyless != want.keyless || !slices.EqualFunc(got.keyLists, want.keyLists, slices.Equal) {
				t.Fatalf("trial %d: keys %q %v %v, want %q %v %v", trial, got.keys, got.keyless, got.keyLists, want.keys, want.keyless, want.keyLists)
			}
		}
		for i := range ops {
			if cut.since >= 25 && cut.ok(&ops[i]) {
				if win, _, _ := cut.take(); len(win) > 0 {
					check(win)
				}
			}
			cut.observe(&ops[i])
		}
	}
	t.Logf("%d of %d windows numbered by the cutter", byIDs, windows)
	if byIDs*2 < windows {
		t.Errorf("%d of %d windows numbered by the cutter", byIDs, windows)
	}
}
