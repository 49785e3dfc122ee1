package docker

import (
	"fmt"

	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// ClientNodes returns the lock nodes as client slot cl reaches them, each
// with its own go-redis client through that client's proxies, with the
// harness's client settings (no retries). A replicated topology has one
// lock node, redisbackend.MasterNodeName: with Sentinel, go-redis's failover
// client asks the sentinels through the client's links and reaches the
// master they name (an address on the gateway) through the client's own
// link to it; with manual failover it dials the master the harness set
// (SetPrimary), and SetPrimary closes its connections so the next command
// dials the new one. The caller closes them (sut.CloseClientNodes).
func (d *Deployment) ClientNodes(cl int, o sut.ClientOptions) []sut.ClientNode {
	if d.cfg.Topology != sut.Replicated {
		var out []sut.ClientNode
		for _, ep := range d.Endpoints(cl) {
			out = append(out, sut.ClientNode{Name: ep.Node, Client: redisbackend.NewRedisClient(ep.Addr, o)})
		}
		return out
	}
	o = o.WithDefaults()
	from := sut.ClientName(cl)
	linkAddr := func(name string) (string, bool) {
		l := d.links[sut.LinkName(from, name)]
		if l == nil {
			return "", false
		}
		return l.Addr(), true
	}
	if len(d.Sentinels) > 0 {
		var addrs []string
		for _, s := range d.Sentinels {
			if a, ok := linkAddr(s.name); ok {
				addrs = append(addrs, a)
			}
		}
		dial := redisbackend.AnnounceDialer(redisbackend.AnnouncedLinks(d.Announced(), linkAddr), o.Timeout)
		return []sut.ClientNode{{Name: redisbackend.MasterNodeName, Client: redisbackend.NewFailoverClient(redisbackend.MasterName, addrs, dial, o)}}
	}
	md := redisbackend.NewMasterDialer(func() (string, error) {
		primary := d.Primary()
		if a, ok := linkAddr(primary); ok {
			return a, nil
		}
		return "", fmt.Errorf("no link from %s to %s", from, primary)
	}, o.Timeout)
	d.mu.Lock()
	d.dialers = append(d.dialers, md)
	d.mu.Unlock()
	return []sut.ClientNode{{Name: redisbackend.MasterNodeName, Client: redisbackend.NewMasterClient(md, o)}}
}
