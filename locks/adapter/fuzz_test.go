package adapter

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockharness/lockharness/locks"
)

// FuzzAnswer feeds arbitrary lines, as an adapter's stdout, to the
// protocol's reading of an answer and of its lease: none panics; an answer
// accepted has an id and one of the three statuses; a lease accepted has a
// token, a fence ≥ 0 (> 0 when fenced), and a deadline after the request
// was sent and at most ten years later, or none for a session lease. A
// deadline in the past would make every write of the holder look stale: a
// false INVALID from an adapter's bad number.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"status":"ok","lease":{"token":"t","validity_ms":1000}}`,
		`{"id":2,"status":"ok","lease":{"token":"t","session":true,"fence":3}}`,
		`{"id":3,"status":"fail","reason":"not held"}`,
		`{"id":4,"status":"unknown"}`,
		`{"id":5,"status":"ok","lease":{"token":"t","validity_ms":9223372036854775807}}`,
		`{"id":6,"status":"ok","lease":{"token":"t","validity_ms":-5}}`,
		`{"id":7,"status":"ok","lease":{"token":"","validity_ms":5}}`,
		`{"id":8,"status":"maybe"}`,
		`{"status":"ok"}`,
		`not json`,
		`{"id":9,"status":"ok","adapter":{"name":"x","protocol":1}}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	sent := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, line []byte, fenced bool) {
		a, problem := parseAnswer(line)
		if problem != "" {
			return
		}
		if a.ID == nil || (a.Status != statusOK && a.Status != statusFail && a.Status != statusUnknown) {
			t.Fatalf("accepted %q: id %v, status %q", line, a.ID, a.Status)
		}
		if a.Adapter != nil {
			_ = a.Adapter.check()
		}
		lease, problem := leaseFrom(locks.Lease{Key: "k"}, a.Lease, fenced, sent)
		if problem != "" {
			return
		}
		switch {
		case lease.Token == "":
			t.Fatalf("a lease without a token from %q", line)
		case lease.Fence < 0 || (fenced && lease.Fence == 0):
			t.Fatalf("fence %d (fenced %v) from %q", lease.Fence, fenced, line)
		case lease.Session && !lease.ValidUntil.IsZero():
			t.Fatalf("a session lease with a deadline from %q", line)
		case !lease.Session && (!lease.ValidUntil.After(sent) || lease.ValidUntil.Sub(sent) > 10*365*24*time.Hour):
			t.Fatalf("deadline %v after sending, from %q", lease.ValidUntil.Sub(sent), line)
		}
	})
}

// TestNewTokenIsTwoPaddedNumbers keeps a proposed token what it was when it
// was formatted with %016x%016x: a run replayed from its seed proposes the
// same tokens.
func TestNewTokenIsTwoPaddedNumbers(t *testing.T) {
	for seed := range uint64(50) {
		a, b := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		got := newToken(locks.Options{Rand: a})
		if want := fmt.Sprintf("%016x%016x", b.Uint64(), b.Uint64()); got != want {
			t.Fatalf("seed %d: token %q, want %q", seed, got, want)
		}
	}
}
