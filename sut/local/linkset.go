package local

import (
	"fmt"

	"github.com/lockharness/lockharness/sut"
)

// LinkSet is a deployment's links by name (sut.LinkName): its
// sut.Network, and the endpoints its clients reach through their own
// links. Every local backend keeps its links in one (Group.Links).
type LinkSet struct {
	what   string
	byName map[string]sut.Link
}

var _ sut.Network = (*LinkSet)(nil)

// NewLinkSet is an empty set; what names the deployment in errors ("etcd
// cluster").
func NewLinkSet(what string) *LinkSet {
	return &LinkSet{what: what, byName: map[string]sut.Link{}}
}

// Add puts l in the set under its name.
func (s *LinkSet) Add(l sut.Link) { s.byName[l.Name()] = l }

// Links lists every link.
func (s *LinkSet) Links() []sut.Link {
	out := make([]sut.Link, 0, len(s.byName))
	for _, l := range s.byName {
		out = append(out, l)
	}
	return out
}

// Link returns the link from → to.
func (s *LinkSet) Link(from, to string) (sut.Link, error) {
	l := s.byName[sut.LinkName(from, to)]
	if l == nil {
		return nil, fmt.Errorf("no link %s in this %s", sut.LinkName(from, to), s.what)
	}
	return l, nil
}

// Endpoints are nodes, in the order given, as client slot cl reaches them
// through its links; a node it has no link to is left out.
func (s *LinkSet) Endpoints(cl int, nodes ...string) []sut.Endpoint {
	var out []sut.Endpoint
	for _, n := range nodes {
		if l := s.byName[sut.LinkName(sut.ClientName(cl), n)]; l != nil {
			out = append(out, sut.Endpoint{Node: n, Addr: l.Addr()})
		}
	}
	return out
}
