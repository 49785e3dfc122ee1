package cluster

import (
	"fmt"

	"github.com/lockharness/lockharness/deploy"
)

// Layout is the shape of the deployment c starts (defaults filled in), so
// a fault schedule can be drawn before it runs.
func (c Config) Layout() deploy.Layout {
	c = c.WithDefaults()
	l := deploy.Layout{Clients: c.Clients, Replicated: c.Topology == Replicated}
	l.Elected = l.Replicated && c.Failover == FailoverSentinel
	for i := 0; i < c.Nodes; i++ {
		l.Nodes = append(l.Nodes, fmt.Sprintf("n%d", i+1))
	}
	for i := 0; i < c.Sentinels; i++ {
		l.Sentinels = append(l.Sentinels, fmt.Sprintf("s%d", i+1))
	}
	return l
}

// Provide returns c arranged to meet needs where the local backend can and
// the user has not chosen otherwise: a replicated topology when one is
// needed and none was named, every lock node under libfaketime when clocks
// are set. Whatever it cannot arrange, deploy.Check refuses once the
// deployment is up.
func (c Config) Provide(needs deploy.Needs) Config {
	if needs.Replicated && c.Topology == "" {
		c.Topology = Replicated
	}
	if needs.Has(deploy.CanSetClock) {
		c.Faketime = true
	}
	return c
}
