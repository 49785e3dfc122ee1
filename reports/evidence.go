package reports

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
)

// Evidence is a short account, a few lines, of what a run exercised: the
// grants, the faults that took effect and how many struck a holder, the
// client pauses and crashes. The terminal summary and the report show it
// next to the verdict, which rests on it.
func Evidence(cov checker.Coverage) []string {
	out := []string{fmt.Sprintf("%s, %s (%s)", plural(cov.Grants, "grant"), plural(cov.Renewals, "renewal"), plural(cov.Claims, "claim"))}
	if len(cov.Faults) > 0 {
		var parts []string
		for _, f := range slices.Sorted(maps.Keys(cov.Faults)) {
			fc := cov.Faults[f]
			s := fmt.Sprintf("%s %d took effect, %d struck a holder", f, fc.TookEffect, fc.StruckHolder)
			if fc.Failed+fc.Unknown > 0 {
				s += fmt.Sprintf(" (%d failed, %d unknown)", fc.Failed, fc.Unknown)
			}
			parts = append(parts, s)
		}
		out = append(out, "faults: "+strings.Join(parts, "; "))
	}
	var client []string
	if p := cov.Pauses; p.Total > 0 {
		client = append(client, fmt.Sprintf("%s, %d struck a holder, %d outlived the lease", plural(p.Total, "client pause"), p.StruckHolder, p.OutlivedLease))
	}
	if c := cov.Crashes; c.Total > 0 {
		client = append(client, fmt.Sprintf("%s, %d while holding", plural(c.Total, "client crash"), c.WhileHolding))
	}
	if len(client) > 0 {
		out = append(out, strings.Join(client, "; "))
	}
	if len(cov.Disturbed) > 0 {
		out = append(out, "DISTURBED: "+strings.Join(cov.Disturbed, "; ")+" (no fault planned it)")
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "sh") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
