package local

import (
	"strings"
	"testing"
)

// A LinkSet finds links by their ends, lists them, and gives a client's
// endpoints in the order asked, leaving out a node it has no link to.
func TestLinkSet(t *testing.T) {
	proxies := NewProxyServer()
	t.Cleanup(func() { StopAll(proxies, nil, "", false) })
	s := NewLinkSet("test deployment")
	for _, to := range []string{"n1", "n2"} {
		l, err := NewLink(proxies, "c0", to, "127.0.0.1:0", "127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		s.Add(l)
	}
	if got := len(s.Links()); got != 2 {
		t.Fatalf("%d links, want 2", got)
	}
	l, err := s.Link("c0", "n2")
	if err != nil || l.To() != "n2" {
		t.Fatalf("link c0->n2: %v %v", l, err)
	}
	if _, err := s.Link("c1", "n1"); err == nil || !strings.Contains(err.Error(), "no link c1->n1 in this test deployment") {
		t.Errorf("a missing link: %v", err)
	}
	eps := s.Endpoints(0, "n2", "n3", "n1")
	if len(eps) != 2 || eps[0].Node != "n2" || eps[1].Node != "n1" || eps[0].Addr == "" {
		t.Errorf("endpoints %+v, want n2 then n1", eps)
	}
}
