package reports

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// ViolationWords tells a violation in plain words, with the faults that
// were in force around it: "client 2 and client 4 both held lock-0 from
// 3.41 s to 3.97 s; meanwhile node 3's clock had jumped +60 s at 3.40 s."
func ViolationWords(v checker.Violation, faults []Fault) string {
	var b strings.Builder
	b.WriteString(violationSentence(v))
	if ctx := faultsAround(faults, v.Start, v.End); len(ctx) > 0 {
		parts := make([]string, len(ctx))
		for i, f := range ctx {
			parts[i] = f.Sentence(v.Start)
		}
		b.WriteString("; meanwhile " + strings.Join(parts, "; "))
	} else if len(faults) > 0 {
		b.WriteString("; no fault was in force then")
	}
	b.WriteString(".")
	if !v.Fatal && !strings.Contains(v.Description, "harmless") {
		b.WriteString(" (Reported, but harmless by itself.)")
	}
	return b.String()
}

func clients(ps []int) string {
	ws := make([]string, len(ps))
	for i, p := range ps {
		ws[i] = clientName(p)
	}
	if len(ws) == 0 {
		return "a client"
	}
	return andList(ws)
}

// andList joins words as people list them: "a", "a and b", "a, b and c".
func andList(ws []string) string {
	if len(ws) < 2 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}

func span(v checker.Violation) string {
	switch d := v.End - v.Start; {
	case d >= 10*int64(time.Millisecond):
		return fmt.Sprintf("from %s to %s (%s)", fmtTime(v.Start), fmtTime(v.End), fmtDur(d))
	case d > 0:
		return fmt.Sprintf("at %s (for %s)", fmtTime(v.Start), fmtDur(d))
	}
	return "at " + fmtTime(v.Start)
}

func keyOr(k string) string {
	if k == "" {
		return "the lock"
	}
	return k
}

func violationSentence(v checker.Violation) string {
	desc := strings.TrimSuffix(strings.TrimSpace(v.Description), ".")
	if v.Kind == checker.KindOverlap {
		who := clients(v.Processes)
		if len(v.Processes) >= 2 {
			who += " both"
		}
		return capitalise(fmt.Sprintf("%s held %s %s", who, keyOr(v.Key), span(v)))
	}
	// The checker's own description is precise; say "client" as the rest
	// of the report does.
	if desc != "" {
		return capitalise(sameSpan(processWord.ReplaceAllString(desc, "client $1")))
	}
	switch v.Kind {
	case checker.KindForeignRelease:
		return capitalise(fmt.Sprintf("%s: a release or renew by %s succeeded while another client's claim on %s was live", span(v), clients(v.Processes), keyOr(v.Key)))
	case checker.KindLostLease:
		return capitalise(fmt.Sprintf("%s: %s was told its lease on %s was gone before its deadline", span(v), clients(v.Processes), keyOr(v.Key)))
	case checker.KindStaleWrite:
		return capitalise(fmt.Sprintf("%s wrote %s after its lease on %s had expired", clients(v.Processes), span(v), keyOr(v.Key)))
	case checker.KindLostUpdate:
		return capitalise(fmt.Sprintf("lost update %s: critical sections of %s are not linearizable", span(v), clients(v.Processes)))
	case checker.KindFinalCount:
		return "The final counter does not match the accepted writes"
	case checker.KindUnavailable:
		return capitalise(fmt.Sprintf("%s stayed unavailable %s, through the whole recovery period", keyOr(v.Key), span(v)))
	case checker.KindNonLinearizable:
		return capitalise(fmt.Sprintf("porcupine found no linearization of %s", keyOr(v.Key)))
	}
	s := fmt.Sprintf("%s %s", v.Kind, span(v))
	if len(v.Processes) > 0 {
		s += " involving " + clients(v.Processes)
	}
	return capitalise(s)
}

var processWord = regexp.MustCompile(`\bprocess (\d+)`)

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
