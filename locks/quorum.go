package locks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/sut"
)

// Result is what one node answered to one step of a multi-node operation.
type Result int

// The three answers a node can give. Unknown covers timeouts, resets and a
// node that did not answer within the per-node timeout: the step may or may
// not have happened there.
const (
	Unknown Result = iota
	Done           // the step happened (SET NX set the key, the script matched our token)
	Refused        // the node answered and the step did not happen
)

func (r Result) String() string {
	switch r {
	case Done:
		return "done"
	case Refused:
		return "refused"
	}
	return "unknown"
}

// NodeResult is one node's answer.
type NodeResult struct {
	Node   string
	Result Result
	Err    error // the node's error, if any (a Refused node may have none)
}

// QuorumError is the failure of an operation on several independent nodes
// (Redlock, redsync): which nodes did what. When the outcome is certain it
// wraps ErrNotAcquired or ErrNotHeld; when it is not (the token may be held,
// or released, on a quorum of nodes) it wraps nothing, so Outcome reports
// info. The node errors are listed in Nodes and never wrapped: a Redis error
// reply from one node must not make the whole operation look definite.
type QuorumError struct {
	Op     string // "acquire", "release", "renew"
	Key    string
	Quorum int
	Nodes  []NodeResult
	// Reason says why the operation failed: "no quorum", "validity
	// expired", or the library's own error text.
	Reason string
	// Definite is ErrNotAcquired or ErrNotHeld when the outcome is certain,
	// nil when it is unknown.
	Definite error
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q: %s (quorum %d;", e.Op, e.Key, e.Reason, e.Quorum)
	for _, n := range e.Nodes {
		fmt.Fprintf(&b, " %s %s", n.Node, n.Result)
		if n.Err != nil {
			fmt.Fprintf(&b, " [%v]", n.Err)
		}
		b.WriteString(",")
	}
	s := strings.TrimSuffix(b.String(), ",") + ")"
	if e.Definite == nil {
		s += ": outcome unknown"
	} else {
		s = e.Definite.Error() + ": " + s
	}
	return s
}

func (e *QuorumError) Unwrap() error { return e.Definite }

// count returns how many nodes gave each answer.
func count(rs []NodeResult) (done, refused, unknown int) {
	for _, r := range rs {
		switch r.Result {
		case Done:
			done++
		case Refused:
			refused++
		default:
			unknown++
		}
	}
	return
}

// grantedBy names the nodes that did the step (Done), in the order given.
func grantedBy(rs []NodeResult) []string {
	var out []string
	for _, r := range rs {
		if r.Result == Done {
			out = append(out, r.Node)
		}
	}
	return out
}

// classify maps an error from one node's step to an answer: nil is Done,
// ErrNotAcquired/ErrNotHeld or a Redis error reply is Refused, anything else
// is Unknown.
func classify(err error) Result {
	if err == nil {
		return Done
	}
	if Outcome(err) == history.Fail {
		return Refused
	}
	return Unknown
}

// ctxErrMeansUnsent reports whether a context error from client proves the
// command was never sent. A go-redis client without ContextTimeoutEnabled
// (the harness's) looks at the context only while it waits for a connection
// or dials one, never once the command is on the wire; a per-node deadline
// of a few tens of milliseconds can run out on a loaded machine before the
// connection is even there.
func ctxErrMeansUnsent(c redis.UniversalClient) bool {
	rc, ok := c.(*redis.Client)
	return ok && !rc.Options().ContextTimeoutEnabled
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// errUnsent stands for a command the client never sent: a definite no.
var errUnsent = fmt.Errorf("%w: command not sent", ErrNotAcquired)

// errNodeTimeout is the answer of a node that did not reply within the
// per-node timeout.
var errNodeTimeout = errors.New("no reply within the per-node timeout")

// onAll runs step on every node at once and waits at most timeout for the
// answers. A node that has not answered by then counts as Unknown; its
// command is abandoned, not cancelled (go-redis clients without
// ContextTimeoutEnabled ignore a context deadline once the command is on the
// wire), and finishes within the client's own read timeout.
func onAll(ctx context.Context, nodes []sut.ClientNode, timeout time.Duration, op string, step func(context.Context, sut.ClientNode) error) []NodeResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		i   int
		err error
	}
	ch := make(chan answer, len(nodes))
	for i, n := range nodes {
		unsentOnCtx := ctxErrMeansUnsent(n.Client)
		go func() {
			err := step(ctx, n)
			if unsentOnCtx && isCtxErr(err) {
				err = &NodeError{Node: n.Name, Op: op, Err: errUnsent}
			}
			ch <- answer{i, err}
		}()
	}
	out := make([]NodeResult, len(nodes))
	for i, n := range nodes {
		out[i] = NodeResult{Node: n.Name, Result: Unknown, Err: &NodeError{Node: n.Name, Op: op, Err: errNodeTimeout}}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for range nodes {
		select {
		case a := <-ch:
			r := NodeResult{Node: nodes[a.i].Name, Result: classify(a.err), Err: a.err}
			if errors.Is(a.err, ErrNotAcquired) || errors.Is(a.err, ErrNotHeld) {
				r.Err = nil // a plain "no": the Result says it
			}
			out[a.i] = r
		case <-t.C:
			return out
		}
	}
	return out
}
