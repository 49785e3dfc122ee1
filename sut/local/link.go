package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/lockharness/lockharness/sut"
)

// Link is one directed network path, from a client (or a replica, or a
// sentinel) to a node, through its own toxiproxy proxy. Faults are toxics on
// the link's proxy.
//
// *Link is the local backends' sut.Link.
type Link struct {
	name  string // "c0->n1"
	from  string // "c0"
	to    string // "n1"
	proxy *toxiproxy.Proxy
}

var _ sut.Link = (*Link)(nil)

// Name is the link's name, "c0->n1".
func (l *Link) Name() string { return l.name }

// From is where the link starts: a client slot "c0", a replica "n2", or
// sut.SentinelsFrom.
func (l *Link) From() string { return l.from }

// To is the node the link leads to.
func (l *Link) To() string { return l.to }

// Addr is the address to dial to use this link: the proxy's, on loopback,
// the same from every place on this host.
func (l *Link) Addr() string { return l.proxy.Listen }

// NewProxyServer is an embedded toxiproxy server, logging nothing, for a
// deployment's links (NewLink). Its Collection.Clear stops every proxy.
func NewProxyServer() *toxiproxy.ApiServer {
	zerolog.SetGlobalLevel(zerolog.Disabled) // the bandwidth toxic logs through the global logger
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
}

// NewLink starts a proxy on srv for the link from → to, listening on listen
// (host:0 picks a free port) and forwarding to upstream. Other backends
// (containers) use it to front their nodes the same way.
func NewLink(srv *toxiproxy.ApiServer, from, to, listen, upstream string) (*Link, error) {
	name := sut.LinkName(from, to)
	p := toxiproxy.NewProxy(srv, strings.ReplaceAll(name, "->", "_"), listen, upstream)
	if err := srv.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("start proxy %s: %w", name, err)
	}
	return &Link{name: name, from: from, to: to, proxy: p}, nil
}

// AddToxic adds a toxic to the link, given as toxiproxy's JSON
// ({"name","type","stream","toxicity","attributes"}).
func (l *Link) AddToxic(json string) error {
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(json)); err != nil {
		return fmt.Errorf("add toxic to %s: %w", l.name, err)
	}
	return nil
}

// Cut stops all traffic on the link in both directions: bytes are held,
// never delivered, and connections hang (toxiproxy's timeout toxic with
// timeout 0), as a network partition looks to TCP.
func (l *Link) Cut() error {
	for _, stream := range []string{"upstream", "downstream"} {
		j := fmt.Sprintf(`{"name":"partition-%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, stream, stream)
		if err := l.AddToxic(j); err != nil {
			return err
		}
	}
	return nil
}

// CutIdle is Cut for a link whose connections may sit idle through the
// cut: bytes sent meanwhile are dropped as Cut drops them, but removing
// it (Uncut, Heal) leaves the connections open, where toxiproxy's timeout
// toxic closes them. An idle connection then works again after the heal,
// as a TCP connection that sent nothing during a partition does; a client
// that timed out during the cut closed its connection itself. The
// nemesis's holder partition needs it: the cut holder's release, held back
// until the heal, goes out on its pooled connection and must reach the
// node, not meet a connection the heal closed a moment before.
func (l *Link) CutIdle() error {
	for _, stream := range []string{"upstream", "downstream"} {
		j := fmt.Sprintf(`{"name":"partition-%s","type":%q,"stream":%q}`, stream, blackholeToxic, stream)
		if err := l.AddToxic(j); err != nil {
			return err
		}
	}
	return nil
}

// blackholeToxic is the toxic type of CutIdle.
const blackholeToxic = "lockharness-blackhole"

// blackhole drops every byte, as the timeout toxic with timeout 0 does,
// and closes the connection when its client closes it; unlike that toxic
// it has no Cleanup, so its removal leaves the connection open.
type blackhole struct{}

func (*blackhole) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
		}
	}
}

func init() { toxics.Register(blackholeToxic, new(blackhole)) }

// DropReplies holds back every byte from the node to From, and only
// those: requests reach the node and run, their replies never arrive
// (the downstream half of Cut, so IsCut and Uncut see it).
func (l *Link) DropReplies() error {
	return l.AddToxic(`{"name":"partition-downstream","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
}

// Heal removes every toxic from the link. Connections stalled by a
// blackhole are closed, as toxiproxy does.
func (l *Link) Heal(ctx context.Context) {
	l.proxy.Toxics.ResetToxics(ctx)
}

// Slow delays every byte on the link by latency ± jitter, in both
// directions.
func (l *Link) Slow(latency, jitter time.Duration) error {
	for _, stream := range []string{"upstream", "downstream"} {
		j := fmt.Sprintf(`{"name":"latency-%s","type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":%d}}`,
			stream, stream, latency.Milliseconds(), jitter.Milliseconds())
		if err := l.AddToxic(j); err != nil {
			return err
		}
	}
	return nil
}

// Faults names the toxics on the link; none means the link is healthy.
func (l *Link) Faults() []string {
	var out []string
	for _, t := range l.proxy.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			out = append(out, w.Name)
			continue
		}
		out = append(out, fmt.Sprintf("%T", t))
	}
	return out
}

// Faulted reports whether the link has any toxic on it.
func (l *Link) Faulted() bool { return len(l.proxy.Toxics.GetToxicArray()) > 0 }

// RemoveToxic removes the named toxic from the link; a missing toxic is not
// an error.
func (l *Link) RemoveToxic(ctx context.Context, name string) error {
	if l.proxy.Toxics.GetToxic(name) == nil {
		return nil
	}
	if err := l.proxy.Toxics.RemoveToxic(ctx, name); err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", name, l.name, err)
	}
	return nil
}

// IsCut reports whether Cut is in effect on the link.
func (l *Link) IsCut() bool {
	return l.proxy.Toxics.GetToxic("partition-upstream") != nil || l.proxy.Toxics.GetToxic("partition-downstream") != nil
}

// Uncut removes what Cut added and nothing else. Connections stalled by
// the cut are closed.
func (l *Link) Uncut(ctx context.Context) error {
	return errors.Join(l.RemoveToxic(ctx, "partition-upstream"), l.RemoveToxic(ctx, "partition-downstream"))
}

// Unslow removes what Slow added and nothing else.
func (l *Link) Unslow(ctx context.Context) error {
	return errors.Join(l.RemoveToxic(ctx, "latency-upstream"), l.RemoveToxic(ctx, "latency-downstream"))
}
