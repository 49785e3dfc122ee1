package resource_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/redis/redistest"
)

func storage(t *testing.T) *redis.Client {
	t.Helper()
	c := redistest.Up(t, sut.Config{Nodes: 1})
	cl := redis.NewClient(&redis.Options{Addr: c.StorageAddr(), MaxRetries: -1})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func TestFencedWrites(t *testing.T) {
	ctx := context.Background()
	s := storage(t)
	if v, err := resource.Read(ctx, s, "k"); err != nil || v != 0 {
		t.Fatalf("unwritten counter = %d, %v; want 0", v, err)
	}
	steps := []struct {
		value, fence int64
		accepted     bool
		counter      int64
	}{
		{1, 5, true, 1},  // first token
		{2, 5, true, 2},  // same holder writes again
		{3, 3, false, 2}, // stale token
		{4, 7, true, 4},  // newer holder
		{5, 6, false, 4}, // older than the newest seen
		{6, 0, true, 6},  // unfenced: a plain SET, always accepted
		{7, 6, false, 6}, // the unfenced write did not lower the bar
		{8, 8, true, 8},
	}
	for i, st := range steps {
		ok, err := resource.Write(ctx, s, "k", st.value, st.fence)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if ok != st.accepted {
			t.Fatalf("step %d: write %d with token %d accepted=%v, want %v", i, st.value, st.fence, ok, st.accepted)
		}
		if v, _ := resource.Read(ctx, s, "k"); v != st.counter {
			t.Fatalf("step %d: counter %d, want %d", i, v, st.counter)
		}
	}
	if v, _ := s.Get(ctx, resource.CounterKey("k")).Int64(); v != 8 {
		t.Fatalf("counter lives at %s: got %d", resource.CounterKey("k"), v)
	}
	if _, err := resource.Write(ctx, s, "k", 1, -1); err == nil {
		t.Fatal("negative token accepted")
	}
}
