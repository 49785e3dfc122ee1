package target

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// endpoint is one socket a server of the file listens on, its address
// resolved: two entries of the file that share one are the same server.
type endpoint struct {
	ip   netip.Addr
	port int
}

// entry is a server of the file, as its errors name it.
type entry struct{ what, addr string }

// entries are the file's servers in order: the lock nodes, the sentinels,
// the storage.
func (f File) entries() []entry {
	var out []entry
	for _, n := range f.Nodes {
		out = append(out, entry{"node " + n.Name, n.Addr})
	}
	for _, s := range f.Sentinels {
		out = append(out, entry{"sentinel " + s.Name, s.Addr})
	}
	return append(out, entry{"storage", f.Storage})
}

// resolveTimeout bounds the look-up of the file's host names.
const resolveTimeout = 5 * time.Second

// CheckAddresses resolves every address of the file (host names, and ports
// written with leading zeros) and refuses two entries that reach the same
// server: a node listed twice ("localhost:P" and "127.0.0.1:P", or port
// 027101 and 27101) would make a Redlock count one server's vote twice,
// and storage at a lock node's server would put the protected resource
// where the faults strike. Validate compares the addresses as written;
// this compares what they reach.
func (f File) CheckAddresses(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	owner := map[endpoint]entry{}
	for _, e := range f.entries() {
		eps, err := resolve(ctx, e.addr)
		if err != nil {
			return fmt.Errorf("%s: %w", e.what, err)
		}
		for _, ep := range eps {
			if o, ok := owner[ep]; ok && o != e {
				return sameServer(o, e, ep)
			}
			owner[ep] = e
		}
	}
	return nil
}

// sameServer is the error of entries a and b reaching one server at ep.
func sameServer(a, b entry, ep endpoint) error {
	at := net.JoinHostPort(ep.ip.String(), strconv.Itoa(ep.port))
	if b.what == "storage" {
		return fmt.Errorf("storage %s is the server of %s (%s): both reach %s; the storage must be a Redis of its own, which no fault reaches", b.addr, a.what, a.addr, at)
	}
	return fmt.Errorf("%s (%s) and %s (%s) are one server (both reach %s): list each server once", a.what, a.addr, b.what, b.addr, at)
}

// resolve is the endpoints addr reaches: every address its host resolves
// to (IPv4 in IPv6 unmapped), with its port as a number.
func resolve(ctx context.Context, addr string) ([]endpoint, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q is not host:port", addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("address %q: bad port", addr)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("address %s: host %q does not resolve from this host: %w", addr, host, err)
	}
	var out []endpoint
	for _, ip := range ips {
		out = append(out, endpoint{ip.Unmap(), port})
	}
	return out, nil
}

// checkRoles refuses a target whose servers are not what the file says,
// before a run trusts the file: every node of an independent target and
// the master of a replicated one must report role:master in INFO
// replication, every replica role:slave, and with sentinels the master
// they name must be the file's. A replica that is in fact a master made a
// run test something else than it said, and pass.
func (d *Deployment) checkRoles(ctx context.Context) error {
	for _, n := range d.nodes {
		want := "master"
		if n.spec.Role == "replica" {
			want = "slave"
		}
		ri, err := redisbackend.RoleAt(ctx, n.Name(), n.Addr())
		if err != nil {
			return err
		}
		if ri.Role != want {
			return fmt.Errorf("node %s at %s reports role:%s in INFO replication, and the target file makes it a %s: correct its role in the file (or the deployment)", n.Name(), n.Addr(), ri.Role, roleWord(n.spec.Role))
		}
	}
	if len(d.sents) == 0 {
		return nil
	}
	el, err := d.Elected(ctx)
	if err != nil {
		return fmt.Errorf("the sentinels cannot name the master %q: %w (is master-name right?)", d.file.MasterName, err)
	}
	if el != d.primary {
		return fmt.Errorf("the sentinels name %s the master of %q, and the target file makes %s the master: correct the roles in the file", el, d.file.MasterName, d.primary)
	}
	return nil
}

// roleWord is a node's role in the file, as a word.
func roleWord(role string) string {
	if role == "" {
		return "master (every node of an independent target is one)"
	}
	return role
}
