package nemesis

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// A negative ClockBump from a library caller is the same magnitude, never
// a panic (the CLI refuses it before setup).
func TestNegativeClockBumpIsAMagnitude(t *testing.T) {
	topo := TopologyOf(sut.Config{Nodes: 3}.Layout())
	cfg := Config{ClockBump: -time.Minute, Interval: time.Second}.WithDefaults()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		for _, s := range (&clock{}).Generate(rng, cfg, topo) {
			for _, p := range []string{"delta", "b"} {
				v, ok := s.Params[p]
				if !ok {
					continue
				}
				d, err := time.ParseDuration(strings.TrimPrefix(v, "+"))
				if err != nil {
					t.Fatalf("%s=%q: %v", p, v, err)
				}
				if d < -time.Minute || d > time.Minute || (d > -6*time.Second && d < 6*time.Second) {
					t.Fatalf("%s=%v outside a tenth of a minute to a minute", p, d)
				}
			}
		}
	}
}
