package checker

import (
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
