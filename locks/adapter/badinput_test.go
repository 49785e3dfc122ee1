package adapter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/locks/adapter"
	"github.com/lockharness/lockharness/sut"
)

type pider interface{ PID() int }

// newLock starts the misbehaving adapter mode after answering n requests,
// and checks in Cleanup that its process group is gone.
func newLock(t *testing.T, nodes []sut.ClientNode, mode, after string, tune ...func(*adapter.Spec)) (locks.Lock, error) {
	t.Helper()
	spec := testdataSpec(t, "misbehave.py")
	for _, f := range tune {
		f(&spec)
	}
	spec.Name = "misbehave-" + mode
	spec.Command = append(spec.Command, mode, after)
	l, err := adapter.Factory(spec)(nodes, locks.Options{TTL: time.Second, Dir: t.TempDir()})
	if err != nil {
		return nil, err
	}
	pid := l.(pider).PID()
	t.Cleanup(func() {
		_ = l.(locks.Closer).Close()
		noProcessLeft(t, []int{pid})
	})
	return l, nil
}

// An adapter that cannot start or answer init is an error naming the
// adapter and what it sent (or its log): nothing can be tested.
func TestBadAdapterAtInit(t *testing.T) {
	nodes := redisNodes(t)(0)
	cases := []struct{ mode, want string }{
		{"crash-start", `adapter misbehave-crash-start ended (exit status 3) before answering request 1 (init); its log ends: misbehave: crashing at start, as asked`},
		{"garbage", `adapter misbehave-garbage broke the protocol: line 1 "Traceback (most recent call last): this is not JSON": not a JSON object`},
		{"noid", `adapter misbehave-noid broke the protocol: line 1 "{\"status\": \"ok\"`},
		{"nothing", `an answer to nothing: no request has id 999999`},
		{"silent", `adapter misbehave-silent: no answer to request 1 (init) within`},
		{"exit", `adapter misbehave-exit ended (exit status 0) before answering request 1 (init)`},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel() // modes differ: each looks for its own leftovers
			var tune []func(*adapter.Spec)
			if c.mode == "silent" {
				// It never answers: any bound runs out, and says so.
				tune = append(tune, func(s *adapter.Spec) { s.StartTimeout = time.Second })
			}
			_, err := newLock(t, nodes, c.mode, "0", tune...)
			if err == nil {
				t.Fatal("the adapter started")
			}
			if left := processesUnder(t, "misbehave.py "+c.mode); len(left) > 0 {
				t.Errorf("left running: %q", left)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// An adapter that breaks the protocol in the middle of a run: the
// operation is unknown (info), never fail, the error names the line, the
// adapter is killed and says why (Err), and nothing is left running.
func TestBadAdapterMidRun(t *testing.T) {
	t.Parallel()
	nodes := redisNodes(t)(0)
	cases := []struct{ mode, want string }{
		{"garbage", `line 2 "Traceback (most recent call last): this is not JSON": not a JSON object`},
		{"twice", `line 3 "{\"status\": \"ok\", \"lease\"`},
		{"noid", `no "id": every answer carries the id of the request it answers`},
		{"nothing", `an answer to nothing: no request has id 999999`},
		{"novalidity", `a lease without validity`},
		{"exit", `adapter misbehave-exit ended (exit status 0) before answering request 2 (acquire)`},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			l, err := newLock(t, nodes, c.mode, "1") // init answered, then the mode
			if err != nil {
				t.Fatal(err)
			}
			key := "mid-" + c.mode
			_, err = l.Acquire(context.Background(), key, locks.AcquireOptions{})
			if c.mode == "twice" { // the first answer is sound; the second is the fault
				if err != nil {
					t.Fatalf("first acquire: %v", err)
				}
				_, err = l.Acquire(context.Background(), key+"-2", locks.AcquireOptions{})
			}
			perr := l.(locks.Process).Err()
			if err == nil || perr == nil {
				t.Fatalf("acquire error %v, adapter fault %v: want both", err, perr)
			}
			if got := locks.Outcome(err); got != history.Info {
				t.Errorf("outcome %s, want info: %v", got, err)
			}
			if !strings.Contains(perr.Error(), c.want) || !strings.Contains(perr.Error(), "misbehave-"+c.mode) {
				t.Errorf("fault %q\nwant it to name the adapter and contain %q", perr, c.want)
			}
			if !errors.Is(err, adapter.ErrUnknown) {
				t.Errorf("error does not wrap ErrUnknown: %v", err)
			}
			if err := l.Release(context.Background(), locks.Lease{Key: key, Token: "x"}); locks.Outcome(err) != history.Info {
				t.Errorf("release on a broken adapter: %v, want an unknown outcome", err)
			}
		})
	}
}

// A slow adapter is not a broken one: a request that runs out of time is
// unknown, its late answer is dropped, and the next request is answered.
func TestSlowAdapterIsUnknownNotBroken(t *testing.T) {
	t.Parallel()
	nodes := redisNodes(t)(0)
	// Requests may take 3s, the adapter answers each 1.5s late.
	l, err := newLock(t, nodes, "slow", "2", func(s *adapter.Spec) { s.RequestTimeout = 3 * time.Second }) // init and one acquire on time
	if err != nil {
		t.Fatal(err)
	}
	lease, err := l.Acquire(context.Background(), "slow", locks.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err = l.Release(ctx, lease)
	cancel()
	if locks.Outcome(err) != history.Info || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("release past its deadline: %v, want unknown (deadline exceeded)", err)
	}
	// Its late answer (1.5s after it was sent) comes first, then this
	// one's (1.5s after that).
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	err = l.Release(ctx, lease)
	cancel()
	if !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("second release: %v, want not held (the first one released it)", err)
	}
	if perr := l.(locks.Process).Err(); perr != nil {
		t.Fatalf("a late answer counted as a fault: %v", perr)
	}
}
