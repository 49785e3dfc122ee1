package sut_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/sut"
)

var (
	nodeCapabilities       = []sut.Capability{sut.CanKill, sut.CanPause, sut.CanSetClock, sut.CanCommand}
	deploymentCapabilities = []sut.Capability{sut.CanCutLinks, sut.CanSlowLinks, sut.CanDropReplies, sut.CanSetPersistence,
		sut.CanPromote, sut.CanElect, sut.CanPartitionNodes, sut.CanFailoverShard, sut.CanMoveSlots, sut.CanKillConnections}
)

// Check asks every node capability of every lock node (never of a
// sentinel), every other capability of the deployment, and a master with
// replicas of the layout, whichever of them the deployment has or lacks.
func TestCheckEveryCapability(t *testing.T) {
	all := append(append([]sut.Capability(nil), nodeCapabilities...), deploymentCapabilities...)
	for _, c := range all {
		isNode := false
		for _, nc := range nodeCapabilities {
			isNode = isNode || nc == c
		}
		needs := sut.Needs{Capabilities: []sut.Capability{c}}
		// Everything but c: refused, naming what lacks it.
		d := newFake(2, 1, without(nodeCapabilities, c), without(deploymentCapabilities, c))
		d.hints = map[sut.Capability]string{c: "how to get " + string(c)}
		err := sut.Check(d, "the test nemesis", needs)
		var ue *sut.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, sut.ErrUnsupported) {
			t.Fatalf("%s lacking: %v, want an UnsupportedError", c, err)
		}
		wantTarget := ""
		if isNode {
			wantTarget = "n1"
		}
		if ue.Capability != c || ue.Target != wantTarget || ue.Need != "the test nemesis" || ue.Hint != "how to get "+string(c) {
			t.Errorf("%s lacking: %+v", c, ue)
		}
		// Only one lock node lacks it: still refused, naming that one.
		if isNode {
			d := newFake(3, 0, nodeCapabilities, deploymentCapabilities)
			d.node("n3").caps = without(nodeCapabilities, c)
			if err := sut.Check(d, "", needs); !errors.As(err, &ue) || ue.Target != "n3" {
				t.Errorf("%s lacking on n3: %v", c, err)
			}
		}
		// Everything: accepted, though the sentinels can do nothing.
		if err := sut.Check(newFake(2, 3, nodeCapabilities, deploymentCapabilities), "the test nemesis", needs); err != nil {
			t.Errorf("%s there: %v", c, err)
		}
	}
}

// A fault that needs a master with replicas is refused by independent
// nodes, whatever their capabilities, and accepted by a replicated
// layout; with no asker the message says "this fault".
func TestCheckLayout(t *testing.T) {
	needs := sut.Needs{Replicated: true, Capabilities: []sut.Capability{sut.CanPromote}}
	independent := newFake(3, 0, nodeCapabilities, deploymentCapabilities)
	err := sut.Check(independent, "", needs)
	if !errors.Is(err, sut.ErrUnsupported) || !strings.HasPrefix(err.Error(), "this fault needs a master with replicas, and this deployment has independent nodes") {
		t.Errorf("independent: %v", err)
	}
	if err := sut.Check(independent, "the failover nemesis", needs); err == nil || !strings.HasPrefix(err.Error(), "the failover nemesis needs") {
		t.Errorf("independent, named asker: %v", err)
	}
	replicated := newFake(3, 0, nodeCapabilities, deploymentCapabilities).replicated()
	if err := sut.Check(replicated, "", needs); err != nil {
		t.Errorf("replicated: %v", err)
	}
	// The layout is asked first: a replicated need on a deployment that
	// lacks the capability too names the layout.
	bare := newFake(1, 0, nil, nil)
	if err := sut.Check(bare, "", needs); err == nil || !strings.Contains(err.Error(), "a master with replicas") {
		t.Errorf("bare: %v", err)
	}
	// Nothing needed: nothing refused.
	if err := sut.Check(bare, "", sut.Needs{}); err != nil {
		t.Errorf("no needs: %v", err)
	}
}

// Without a Hinter an UnsupportedError has no hint.
func TestCheckWithoutHinter(t *testing.T) {
	d := noHints{newFake(1, 0, nil, nil)}
	var ue *sut.UnsupportedError
	if err := sut.Check(d, "", sut.Needs{Capabilities: []sut.Capability{sut.CanCutLinks}}); !errors.As(err, &ue) || ue.Hint != "" {
		t.Errorf("%v", err)
	}
}

// noHints hides the fake's Hint.
type noHints struct{ sut.Deployment }

// As gives a node's implementation of the interface behind a capability
// it claims, and refuses, naming the node, one it does not claim or does
// not implement.
func TestAs(t *testing.T) {
	n := &fakeNode{name: "n1", kind: sut.KindLock, caps: sut.Capabilities{sut.CanKill, sut.CanCommand}}
	k, err := sut.As[sut.Killer](n, sut.CanKill)
	if err != nil || k == nil {
		t.Fatalf("killer: %v", err)
	}
	var ue *sut.UnsupportedError
	if _, err := sut.As[sut.Pauser](n, sut.CanPause); !errors.As(err, &ue) || ue.Target != "n1" || ue.Capability != sut.CanPause {
		t.Errorf("a capability not claimed: %v", err)
	}
	// Claimed, but fakeNode is no Commander.
	if _, err := sut.As[sut.Commander](n, sut.CanCommand); !errors.As(err, &ue) || ue.Capability != sut.CanCommand {
		t.Errorf("a capability claimed and not implemented: %v", err)
	}
}

// Merge keeps each capability once, in the order first seen, and a
// replicated need from either side.
func TestNeedsMergeKeepsOrder(t *testing.T) {
	a := sut.Needs{Capabilities: []sut.Capability{sut.CanKill, sut.CanCutLinks, sut.CanKill}}
	b := sut.Needs{Replicated: true, Capabilities: []sut.Capability{sut.CanCutLinks, sut.CanSetClock}}
	m := a.Merge(b)
	if want := []sut.Capability{sut.CanKill, sut.CanCutLinks, sut.CanSetClock}; !m.Replicated || !reflect.DeepEqual(m.Capabilities, want) {
		t.Errorf("merged %+v, want %v", m, want)
	}
	if m := (sut.Needs{}).Merge(sut.Needs{}); m.Replicated || len(m.Capabilities) != 0 || m.Has(sut.CanKill) {
		t.Errorf("empty merge %+v", m)
	}
	if len(a.Capabilities) != 3 {
		t.Errorf("Merge changed its receiver: %+v", a)
	}
}

// Every capability says in words what it lets a fault do.
func TestCapabilityWords(t *testing.T) {
	for _, c := range append(append([]sut.Capability(nil), nodeCapabilities...), deploymentCapabilities...) {
		if c.String() == string(c) {
			t.Errorf("%s has no words", c)
		}
	}
	if got := sut.Capability("teleport").String(); got != "teleport" {
		t.Errorf("an unknown capability reads %q", got)
	}
}

// HealAll undoes every fault through the seam and says what it did:
// links, the native partition, paused, dead and clock-skewed members, and
// a replicated deployment's roles; CheckHealthy finds all of it before,
// none after, and HealAll then has nothing to heal.
func TestHealAll(t *testing.T) {
	ctx := context.Background()
	d := newFake(3, 0, nodeCapabilities, append(deploymentCapabilities[:0:0], sut.CanCutLinks, sut.CanPromote, sut.CanPartitionNodes)).replicated()
	if err := sut.CheckHealthy(ctx, d); err != nil {
		t.Fatalf("a fresh deployment: %v", err)
	}
	if did, err := sut.HealAll(ctx, d); err != nil || did != "master n1" {
		t.Fatalf("nothing broken: %q, %v", did, err)
	}
	l, _ := d.Network().Link("c0", "n1")
	_ = l.Cut()
	_ = l.Slow(time.Second, 0)
	r, _ := d.Network().Link("n2", "n1")
	_ = r.Cut()
	_ = d.PartitionNodes(ctx, [][2]string{{"n1", "n3"}})
	d.node("n2").paused = true
	d.node("n3").dead = true
	_ = d.node("n1").SetClock(time.Hour, 1)
	// A failover by hand, half done: n2 promoted, n1 and n3 still as they were.
	d.primary = "n2"
	d.roles["n2"] = sut.RoleInfo{Role: sut.RoleMaster}

	err := sut.CheckHealthy(ctx, d)
	for _, want := range []string{"link c0->n1 still has toxics [cut slow]", "link n2->n1 still has toxics", "n1, n3 still cut off",
		"n3 is not running", "n2 is paused", "n1 clock is 1h0m0s", "replica n1 does not follow n2", "replica n3 does not follow n2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHealthy: %v, want %q", err, want)
		}
	}
	did, err := sut.HealAll(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if want := "healed 2 links, rejoined n1, n3, resumed n2, restarted n3, reset clock of n1, n1 follows n2, n3 follows n2, master n2"; did != want {
		t.Errorf("HealAll did %q, want %q", did, want)
	}
	if err := sut.CheckHealthy(ctx, d); err != nil {
		t.Errorf("after HealAll: %v", err)
	}
	if sut.Primary(d) != "n2" || !reflect.DeepEqual(sut.Replicas(d), []string{"n1", "n3"}) {
		t.Errorf("master %s, replicas %v", sut.Primary(d), sut.Replicas(d))
	}
}

// HealAll leaves alone what a deployment cannot do: independent nodes
// have no roles to heal, and a member without CanKill is not restarted.
func TestHealAllIndependent(t *testing.T) {
	ctx := context.Background()
	d := newFake(2, 0, sut.Capabilities{sut.CanPause}, sut.Capabilities{sut.CanCutLinks})
	d.node("n1").paused = true
	d.node("n2").dead = true // it cannot be killed, so this is none of the seam's business
	did, err := sut.HealAll(ctx, d)
	if err != nil || did != "resumed n1" {
		t.Errorf("did %q, %v", did, err)
	}
	if d.node("n2").started != 0 {
		t.Error("restarted a node that claims no CanKill")
	}
	if sut.Primary(d) != "" || sut.Replicas(d) != nil {
		t.Errorf("independent nodes have master %q, replicas %v", sut.Primary(d), sut.Replicas(d))
	}
	if _, err := sut.HealReplication(ctx, d); !errors.Is(err, sut.ErrUnsupported) {
		t.Errorf("HealReplication of independent nodes: %v", err)
	}
	if did, err := sut.HealAll(ctx, d); err != nil || did != "nothing to heal" {
		t.Errorf("healed twice: %q, %v", did, err)
	}
}

// With an elected master, HealAll makes the harness's master the one the
// failure detector names before it heals the roles.
func TestHealAllFollowsTheElectedMaster(t *testing.T) {
	ctx := context.Background()
	d := newFake(3, 3, nodeCapabilities, sut.Capabilities{sut.CanCutLinks, sut.CanPromote, sut.CanElect}).replicated()
	d.layout.Elected = true
	d.elected = "n3"
	d.roles["n3"] = sut.RoleInfo{Role: sut.RoleMaster}
	for _, n := range []string{"n1", "n2"} {
		_ = d.Follow(ctx, n, "n3")
	}
	did, err := sut.HealAll(ctx, d)
	if err != nil || did != "master n3" || d.Primary() != "n3" {
		t.Errorf("did %q, %v; master %s", did, err, d.Primary())
	}
	if err := sut.CheckHealthy(ctx, d); err != nil {
		t.Errorf("after HealAll: %v", err)
	}
	d.elected = "n1"
	if err := sut.CheckHealthy(ctx, d); err == nil || !strings.Contains(err.Error(), `sentinels say master "n1"`) {
		t.Errorf("the sentinels disagree: %v", err)
	}
}

// without is cs without c.
func without(cs []sut.Capability, c sut.Capability) sut.Capabilities {
	var out sut.Capabilities
	for _, x := range cs {
		if x != c {
			out = append(out, x)
		}
	}
	return out
}
