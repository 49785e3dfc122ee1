package reports

import (
	"testing"

	"github.com/lockharness/lockharness/history/synth"
)

// BenchmarkDigestSee… are the report's digest alone (Digest.See, given
// every event as the check reads the history) of a synthetic history of
// 1M events: what the report adds to its check while the check runs.
// The events are read from a slice of them all, out of the caches, where
// the check gives the digest each event it has just decoded: the
// benchmark is dearer than the digest in a report, by about what reading
// 100 MB of events costs.
func BenchmarkDigestSeeCrash(b *testing.B)         { benchDigestSee(b, synth.Crash) }
func BenchmarkDigestSeeCrashNoExpiry(b *testing.B) { benchDigestSee(b, synth.CrashNoExpiry) }
func BenchmarkDigestSeeValid(b *testing.B)         { benchDigestSee(b, synth.Valid) }

func benchDigestSee(b *testing.B, shape synth.Shape) {
	events := 1_000_000
	if testing.Short() {
		events /= 10
	}
	ops, err := synth.Ops(synth.Config{Shape: shape, Events: events, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	end := ops[len(ops)-1].Time
	b.ResetTimer()
	for b.Loop() {
		g := NewDigest(end)
		for i := range ops {
			g.See(&ops[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ops)), "ns/event")
}
