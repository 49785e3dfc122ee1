package reports

import (
	"fmt"
	"html"
	"html/template"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// Term is a term of art of the report, explained in its glossary: the
// words that name it in a sentence (the first the title), its anchor,
// and what it means in two sentences.
type Term struct {
	Words   []string
	Anchor  string
	Meaning string
}

// Glossary is every term of art the report uses, in the order its
// glossary lists them. A sentence of the page links each one's first
// mention to its entry (LinkTerms).
var Glossary = []Term{
	{[]string{"claim", "claims"}, "g-claim", "What a client may believe after an acquire's ok: that it holds the key until it releases it or its lease runs out. The checkers judge claims, not what the server thought."},
	{[]string{"hold", "holds"}, "g-hold", "A claim as the timeline draws it: a bar from the acquire's ok to the release or the lease's deadline."},
	{[]string{"lease", "TTL"}, "g-lease", "The time a lock is granted for (its TTL). After it, the server may give the lock to someone else, whatever the old holder believes."},
	{[]string{"overlap", "overlapping claims", "two holders"}, "g-overlap", "Two clients held the same key at the same time: the broken promise of a mutex."},
	{[]string{"foreign release", "foreign releases"}, "g-foreign-release", "A release or renew by one client that succeeded while another client's claim on the key was live: it removed or extended someone else's lock."},
	{[]string{"lost lease", "lost leases"}, "g-lost-lease", "A client was told its lease was gone before its deadline: the lock took back what it had promised."},
	{[]string{"stale write", "stale writes"}, "g-stale-write", "A write to the protected resource by a client whose lease had already ended. Harmless when storage rejects it (fencing); when storage accepts it, it can overwrite a newer holder's work."},
	{[]string{"lost update", "lost updates"}, "g-lost-update", "Two critical sections read the same counter value and both wrote value+1, and storage accepted both: one increment is gone."},
	{[]string{"fencing token", "fencing"}, "g-fencing", "A number the lock hands out with each grant, larger each time; storage rejects a write carrying a smaller one than it has seen, so a stale holder cannot do damage."},
	{[]string{"struck a holder"}, "g-struck", "A fault struck a holder when it was in force while some client held a live claim: only then can it break the lock."},
	{[]string{"exposure"}, "g-exposure", "What a run must have exercised for a valid verdict to mean anything: the faults it asked for striking a holder."},
	{[]string{"vacuous"}, "g-vacuous", "A valid verdict from a run that did not reach its required exposure: nothing broke, but nothing was tested either, so the run is unknown."},
	{[]string{"recovery"}, "g-recovery", "The time after the final heal, without faults, in which the lock must grant again: a lock that stays unavailable through it fails liveness."},
	{[]string{"final heal"}, "g-final-heal", "The end of every fault at the end of the run phase: partitions healed, clocks reset, nodes restarted."},
	{[]string{"final reader"}, "g-final-reader", "The process that reads every key's counter after the run, to compare it with the writes storage accepted; it takes no lock."},
	{[]string{"unavailable"}, "g-unavailable", "Acquires of a key failed while nobody legitimately held it."},
	{[]string{"orphan lock", "orphan locks"}, "g-orphan", "A lock kept alive (renewed) for a client that no longer exists, so nobody can take it."},
	{[]string{"linearizable", "linearization"}, "g-linearizable", "The operations can be put in one order, each at an instant between its call and its return, that a single correct lock (or counter) would have produced. Porcupine searches for that order."},
	{[]string{"drift allowance"}, "g-drift", "The clock drift Redlock subtracts from a lease's validity (1% of the TTL plus 2 ms): a clock that runs faster than that breaks its assumption."},
	{[]string{"harmless finding", "harmless findings"}, "g-harmless", "Something the checkers report that does not by itself make the run invalid, such as a stale write that storage rejected."},
}

// termPattern matches any term's words, longest first, as whole words.
var termPattern = func() *regexp.Regexp {
	var alts []string
	for _, t := range Glossary {
		for _, w := range t.Words {
			alts = append(alts, regexp.QuoteMeta(w))
		}
	}
	slices.SortStableFunc(alts, func(a, b string) int { return len(b) - len(a) })
	return regexp.MustCompile(`\b(` + strings.Join(alts, "|") + `)\b`)
}()

// termAnchor is the anchor of the term whose words include w
// (case-insensitively for the first letter).
func termAnchor(w string) string {
	for _, t := range Glossary {
		for _, x := range t.Words {
			if x == w {
				return t.Anchor
			}
		}
	}
	return ""
}

// LinkTerms is text as HTML, escaped, with the first mention of each
// term of art linked to its glossary entry.
func LinkTerms(text string) template.HTML {
	linked := map[string]bool{}
	var b strings.Builder
	last := 0
	for _, m := range termPattern.FindAllStringIndex(text, -1) {
		a := termAnchor(text[m[0]:m[1]])
		if a == "" || linked[a] {
			continue
		}
		linked[a] = true
		b.WriteString(html.EscapeString(text[last:m[0]]))
		fmt.Fprintf(&b, `<a class="term" href="#%s">%s</a>`, a, html.EscapeString(text[m[0]:m[1]]))
		last = m[1]
	}
	b.WriteString(html.EscapeString(text[last:]))
	return template.HTML(b.String()) // #nosec: every part is escaped above
}

// sameInstant matches the checker's "from 2.691s to 2.691s", which
// sameSpan says as an instant.
var sameInstant = regexp.MustCompile(`\(?from (\d+(?:\.\d+)?s) to (\d+(?:\.\d+)?s)\)?`)

// sameSpan rewrites a span of the checker's words whose ends read the
// same ("from 2.691s to 2.691s") as the instant it is ("at 2.691s").
func sameSpan(s string) string {
	return sameInstant.ReplaceAllStringFunc(s, func(m string) string {
		sub := sameInstant.FindStringSubmatch(m)
		if sub[1] != sub[2] {
			return m
		}
		if strings.HasPrefix(m, "(") && strings.HasSuffix(m, ")") {
			return "(at " + sub[1] + ")"
		}
		return strings.Replace(m, sub[0], "at "+sub[1], 1)
	})
}

// StatWords tells a checker's statistics as sentences, the way a reader
// asks about them: "228 claims; 138 overlapping claims, 138 foreign
// releases, no lost leases." Statistics the report does not know are
// listed by name after them.
func StatWords(stats map[string]float64) []string {
	st := statReader{stats: stats, used: map[string]bool{}}
	var out []string
	for _, f := range []func() string{st.promise, st.resource, st.recovery, st.unavailability} {
		if s := f(); s != "" {
			out = append(out, s)
		}
	}
	var rest []string
	for _, k := range slices.Sorted(maps.Keys(stats)) {
		if !st.used[k] {
			rest = append(rest, k+" "+fmtStat(stats[k]))
		}
	}
	if len(rest) > 0 {
		out = append(out, "Also: "+strings.Join(rest, ", ")+".")
	}
	return out
}

// statReader reads statistics by name and remembers which it read.
type statReader struct {
	stats map[string]float64
	used  map[string]bool
}

// get is statistic k and whether there is one.
func (s statReader) get(k string) (float64, bool) {
	x, ok := s.stats[k]
	if ok {
		s.used[k] = true
	}
	return x, ok
}

// count is "n what" of statistic k ("no what" for 0), "" when absent.
func (s statReader) count(k, one, many string) string {
	x, ok := s.get(k)
	switch {
	case !ok:
		return ""
	case x == 0:
		return "no " + many
	case x == 1:
		return "1 " + one
	}
	return fmt.Sprintf("%s %s", fmtStat(x), many)
}

// sentence joins the non-empty parts into a sentence.
func sentence(parts ...string) string {
	var ps []string
	for _, p := range parts {
		if p != "" {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return ""
	}
	return capitalise(strings.Join(ps, ", ")) + "."
}

// promise is the lock-promise checker's counts.
func (s statReader) promise() string {
	ops := ""
	if n, ok := s.get("porcupine-ops"); ok && n > 0 {
		ops = fmt.Sprintf("porcupine checked %s operations", fmtStat(n))
	}
	return sentence(s.count("claims", "claim", "claims"), s.count("overlaps", "overlapping claim", "overlapping claims"),
		s.count("foreign-releases", "foreign release", "foreign releases"), s.count("lost-leases", "lost lease", "lost leases"), ops)
}

// resource is the resource checker's counts: the writes of the critical
// sections by outcome, and what went wrong.
func (s statReader) resource() string {
	var writes string
	if n, ok := s.get("sections"); ok {
		writes = fmt.Sprintf("%s critical sections", fmtStat(n))
		var outs []string
		for _, o := range []struct{ k, w string }{{"accepted-writes", "accepted"}, {"rejected-writes", "rejected by fencing"}, {"failed-writes", "failed"}, {"unknown-writes", "of unknown outcome"}} {
			if x, ok := s.get(o.k); ok && x > 0 {
				outs = append(outs, fmtStat(x)+" "+o.w)
			}
		}
		if len(outs) > 0 {
			writes += " (writes: " + strings.Join(outs, ", ") + ")"
		}
	}
	var finals []string
	for _, k := range slices.Sorted(maps.Keys(s.stats)) {
		if key, ok := strings.CutPrefix(k, "final-count/"); ok {
			x, _ := s.get(k)
			finals = append(finals, fmt.Sprintf("%s's final counter read %s", key, fmtStat(x)))
		}
	}
	return sentence(writes, s.count("stale-writes", "stale write", "stale writes"), s.count("lost-updates", "lost update", "lost updates"),
		s.count("fence-backwards", "fencing token that went backwards", "fencing tokens that went backwards"), strings.Join(finals, ", "))
}

// recovery is the liveness checker's account of the recovery.
func (s statReader) recovery() string {
	ms, ok := s.get("recovery-ms")
	if !ok {
		return ""
	}
	out := fmt.Sprintf("Recovery lasted %s", fmtLength(time.Duration(ms*1e6)))
	att, _ := s.get("recovery-acquire-attempts")
	okN, _ := s.get("recovery-acquire-ok")
	if att > 0 {
		out += fmt.Sprintf(": %s of %s acquires succeeded (%s)", fmtStat(okN), fmtStat(att), percent(okN/att))
	}
	s.get("recovery-success-rate")
	var per []string
	for _, k := range slices.Sorted(maps.Keys(s.stats)) {
		if key, ok := strings.CutPrefix(k, "recovery-success-rate/"); ok {
			x, _ := s.get(k)
			per = append(per, fmt.Sprintf("%s %s", key, percent(x)))
		}
	}
	if len(per) > 1 {
		out += "; by key: " + strings.Join(per, ", ")
	}
	return out + "."
}

// unavailability is the liveness checker's unavailable time and orphan
// locks.
func (s statReader) unavailability() string {
	un := ""
	if ms, ok := s.get("unavailable-ms"); ok {
		if ms == 0 {
			un = "acquires never failed while the lock was free"
		} else {
			un = fmt.Sprintf("acquires failed while the lock was free for %s in all", fmtDur(int64(ms*1e6)))
		}
	}
	var per []string
	for _, k := range slices.Sorted(maps.Keys(s.stats)) {
		if key, ok := strings.CutPrefix(k, "unavailable-ms/"); ok {
			x, _ := s.get(k)
			per = append(per, fmt.Sprintf("%s %s", key, fmtDur(int64(x*1e6))))
		}
	}
	if len(per) > 1 {
		un += " (" + strings.Join(per, ", ") + ")"
	}
	return sentence(un, s.count("orphan-locks", "orphan lock", "orphan locks"))
}

// percent writes a share as a percentage people read: "3%", "0.5%".
func percent(x float64) string {
	p := x * 100
	switch {
	case p == 0 || p >= 10:
		return fmt.Sprintf("%.0f%%", p)
	case p >= 1:
		return fmt.Sprintf("%.0f%%", math.Round(p))
	}
	return fmt.Sprintf("%.1g%%", p)
}

// promiseCounts is the counts the lock-promise checker's reason begins
// with.
var promiseCounts = regexp.MustCompile(`^\d+ overlapping claims, \d+ foreign releases, \d+ lost leases(; )?`)

// checkerSentences is a checker's reason and its statistics in words.
func checkerSentences(cr checker.CheckResult) string {
	parts := StatWords(cr.Stats)
	// The lock-promise checker's reason starts with the counts its
	// statistics say in words.
	if reason := strings.TrimSuffix(promiseCounts.ReplaceAllString(cr.Reason, ""), "."); reason != "" {
		parts = append([]string{capitalise(reason) + "."}, parts...)
	}
	return strings.Join(parts, " ")
}
