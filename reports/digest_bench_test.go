package reports

import (
	"testing"

	"github.com/lockharness/lockharness/history/synth"
)

// BenchmarkDigestSee… are the report's digest alone (Digest.See, given
// every event as the check reads the history) of a synthetic history of
// 1M events: what the report adds to its check while the check runs.
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
	// The check gives the digest an event it has just decoded, in the
	// caches: each is copied to where it is seen, which "copy" alone
	// measures.
	run := func(b *testing.B, see bool) {
		for b.Loop() {
			g := NewDigest(end)
			for i := range ops {
				op := ops[i]
				if see {
					g.See(&op)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ops)), "ns/event")
	}
	b.Run("copy", func(b *testing.B) { run(b, false) })
	b.Run("see", func(b *testing.B) { run(b, true) })
}
