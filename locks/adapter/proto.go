package adapter

import (
	"errors"
	"fmt"
	"strings"
)

// Version is the protocol version this harness speaks (docs/protocol.md).
// It is sent in hello and init; an adapter answers with the version it
// speaks, and a different one is refused with both named.
const Version = 1

// request is one line the harness sends. Fields an operation does not use
// are left out of its line.
type request struct {
	ID      int64       `json:"id"`
	Op      string      `json:"op"`
	Version int         `json:"version,omitempty"`
	Nodes   []nodeAddr  `json:"nodes,omitempty"`
	Lock    *lockParams `json:"lock,omitempty"`
	Key     string      `json:"key,omitempty"`
	Token   string      `json:"token,omitempty"`
	WaitMS  int64       `json:"wait_ms,omitempty"`
}

// Operations.
const (
	opHello   = "hello"
	opInit    = "init"
	opAcquire = "acquire"
	opRelease = "release"
	opRenew   = "renew"
	opClose   = "close"
)

// nodeAddr is one node as the adapter must reach it: the address of the
// client's own link to it.
type nodeAddr struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// lockParams are the lock's parameters, sent with init.
type lockParams struct {
	TTLMS     int64  `json:"ttl_ms"`
	TimeoutMS int64  `json:"timeout_ms"`
	KeyPrefix string `json:"key_prefix"`
	Seed      uint64 `json:"seed"`
	Client    int64  `json:"client"`
}

// Answer statuses.
const (
	statusOK      = "ok"
	statusFail    = "fail"
	statusUnknown = "unknown"
)

// answer is one line an adapter sends.
type answer struct {
	ID      *int64    `json:"id"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Lease   *leaseMsg `json:"lease,omitempty"`
	Adapter *About    `json:"adapter,omitempty"`
}

// leaseMsg is what a grant or a renewal promises.
type leaseMsg struct {
	Token      string `json:"token"`
	ValidityMS *int64 `json:"validity_ms"`
	Fence      int64  `json:"fence"`
	Session    bool   `json:"session"`
}

// About is how an adapter describes itself in its answer to hello and init.
type About struct {
	Name     string `json:"name"`
	Language string `json:"language"`
	Library  string `json:"library"`
	Version  string `json:"version"`
	// System is the system the adapter's library locks on (redis, etcd,
	// zookeeper, mariadb); empty means redis.
	System string `json:"system"`
	// Protocol is the protocol version the adapter speaks.
	Protocol int `json:"protocol"`
	// Renew says the adapter answers renew; Fenced that its grants carry
	// a fencing token.
	Renew  bool `json:"renew"`
	Fenced bool `json:"fenced"`
}

// check reports what is wrong with a description.
func (a *About) check() error {
	switch {
	case a == nil:
		return errors.New(`the answer has no "adapter" object (name, language, library, version, protocol)`)
	case a.Protocol != Version:
		return fmt.Errorf("the adapter speaks protocol version %d, the harness speaks %d", a.Protocol, Version)
	case a.Name == "":
		return errors.New(`the "adapter" object has no name`)
	}
	return nil
}

// ErrUnknown is wrapped by every error whose operation may or may not have
// taken effect: an unknown answer, a timeout, a dead or broken adapter.
// locks.Outcome makes it info in the history.
var ErrUnknown = errors.New("outcome unknown")

// AnswerError is an adapter's answer other than ok: Err is
// locks.ErrNotAcquired or locks.ErrNotHeld for a definite fail, ErrUnknown
// for an unknown.
type AnswerError struct {
	Adapter string
	Op      string
	Reason  string
	Err     error
}

func (e *AnswerError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("adapter %s: %s: %v", e.Adapter, e.Op, e.Err)
	}
	return fmt.Sprintf("adapter %s: %s: %v: %s", e.Adapter, e.Op, e.Err, e.Reason)
}

func (e *AnswerError) Unwrap() error { return e.Err }

// ProtocolError is an adapter breaking the protocol: the line it sent (or
// its absence) and what is wrong with it. The adapter is killed: what it
// would answer next is not evidence.
type ProtocolError struct {
	Adapter string
	// LineNo is the number of the line on the adapter's stdout (from 1),
	// 0 when the problem is not a line (no answer).
	LineNo  int
	Line    string
	Problem string
}

func (e *ProtocolError) Error() string {
	if e.LineNo == 0 {
		return fmt.Sprintf("adapter %s broke the protocol: %s", e.Adapter, e.Problem)
	}
	return fmt.Sprintf("adapter %s broke the protocol: line %d %s: %s", e.Adapter, e.LineNo, quoteLine(e.Line), e.Problem)
}

// Unwrap makes a protocol error an unknown outcome for the operation it
// ended.
func (e *ProtocolError) Unwrap() error { return ErrUnknown }

// quoteLine quotes a line the adapter sent, cut to a readable length.
func quoteLine(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// ExitError is an adapter process that ended without being asked to.
type ExitError struct {
	Adapter string
	// Status is the process's end as the system says it ("exit status 1").
	Status string
	// Log is the tail of its stderr.
	Log string
	// During names what the harness was waiting for ("init").
	During string
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "adapter %s ended (%s)", e.Adapter, e.Status)
	if e.During != "" {
		fmt.Fprintf(&b, " before answering %s", e.During)
	}
	if log := strings.TrimSpace(e.Log); log != "" {
		fmt.Fprintf(&b, "; its log ends: %s", lastLines(log, 3))
	} else {
		b.WriteString("; its log is empty")
	}
	return b.String()
}

func (e *ExitError) Unwrap() error { return ErrUnknown }

// lastLines returns the last n lines of s joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
