package redis

import (
	"context"
	"fmt"

	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/sut/local"
)

// AddLink creates a proxy from "from" to server s.
func (c *Cluster) AddLink(from string, s *local.Server) (*local.Link, error) {
	name := sut.LinkName(from, s.Name)
	if _, dup := c.links[name]; dup {
		return nil, fmt.Errorf("link %s already exists", name)
	}
	l, err := local.NewLink(c.proxies, from, s.Name, "127.0.0.1:0", s.Addr())
	if err != nil {
		return nil, err
	}
	c.links[name] = l
	return l, nil
}

// Link returns the link named from->to.
func (c *Cluster) Link(from, to string) (*local.Link, error) {
	l := c.links[sut.LinkName(from, to)]
	if l == nil {
		return nil, fmt.Errorf("no link %s in this topology", sut.LinkName(from, to))
	}
	return l, nil
}

// Links lists every link.
func (c *Cluster) Links() []*local.Link {
	out := make([]*local.Link, 0, len(c.links))
	for _, l := range c.links {
		out = append(out, l)
	}
	return out
}

// HealLinks removes every toxic from every link.
func (c *Cluster) HealLinks(ctx context.Context) {
	for _, l := range c.links {
		l.Heal(ctx)
	}
}
