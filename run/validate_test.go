package run

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/nemesis"
	"github.com/lockharness/lockharness/sut"
	"github.com/lockharness/lockharness/workloads"
)

// A field error names its fields by their path in Config, or as the
// caller names them; braces that name no field are left as they are.
func TestFieldErrorText(t *testing.T) {
	fe := &FieldError{Field: "Workload.TTL", Value: time.Duration(0),
		Problem: "{Workload.TTL} must be positive, got 0s", Fix: "use e.g. {Workload.TTL 1s} (not {Workload.Nope 2s} or {x})"}
	if got, want := fe.Error(), "Workload.TTL must be positive, got 0s: use e.g. Workload.TTL=1s (not {Workload.Nope 2s} or {x})"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	flags := func(f string) string { return map[string]string{"Workload.TTL": "--ttl"}[f] }
	if got, want := fe.Text(flags), "--ttl must be positive, got 0s: use e.g. --ttl 1s (not {Workload.Nope 2s} or {x})"; got != want {
		t.Errorf("Text(flags) = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("cell a/b: %w", &UsageError{Err: fe})
	if got, want := Text(wrapped, flags), "cell a/b: --ttl must be positive, got 0s: use e.g. --ttl 1s (not {Workload.Nope 2s} or {x})"; got != want {
		t.Errorf("Text(wrapped) = %q, want %q", got, want)
	}
	if got := Text(errors.New("plain {Workload.TTL}"), flags); got != "plain {Workload.TTL}" {
		t.Errorf("an error with no field error: %q", got)
	}
	var ue *UsageError
	var got *FieldError
	if !errors.As(wrapped, &ue) || !errors.As(wrapped, &got) || got.Field != "Workload.TTL" {
		t.Errorf("errors.As through the wrapping: %v, %+v", ue, got)
	}
}

// The fields a caller gives (Config.Given) refuse a zero, which otherwise
// means the default; a field Given cannot name is a mistake of the caller.
func TestGivenZeroes(t *testing.T) {
	zero := Config{Lock: "token"}
	if err := zero.Validate(); err != nil {
		t.Fatalf("zeroes not given are defaults: %v", err)
	}
	for _, c := range []struct {
		field string
		cfg   Config
		want  string
	}{
		{"Lock", Config{}, "Lock is required (known locks: "},
		{"Workload.Clients", Config{Lock: "token", Workload: workloads.Config{Clients: -3}}, "Workload.Clients must be at least 1, got -3: use e.g. Workload.Clients=5"},
		{"Workload.Keys", zero, "Workload.Keys must be at least 1, got 0: use e.g. Workload.Keys=1"},
		{"Workload.TTL", zero, "Workload.TTL must be positive, got 0s: use e.g. Workload.TTL=1s"},
		{"TimeLimit", zero, "TimeLimit must be positive, got 0s: use e.g. TimeLimit=25s"},
		{"Nemesis.Interval", zero, "Nemesis.Interval must be positive, got 0s"},
		{"CheckTimeout", zero, "CheckTimeout must be positive, got 0s"},
		{"Nemesis.ClientPause", zero, "Nemesis.ClientPause must be positive, got 0s: use e.g. Nemesis.ClientPause=1.5s"},
	} {
		cfg := c.cfg
		cfg.Given = []string{c.field}
		err := cfg.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s given as zero: %v, want a field error saying %q", c.field, err, c.want)
		}
	}
	bad := Config{Lock: "token", Given: []string{"Workload.Hold"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `Given names "Workload.Hold"`) {
		t.Errorf("Given naming a field whose zero is no default: %v", err)
	}
}

// Every problem of one field is a field error naming it, refused before
// anything is created.
func TestValidateNamesTheField(t *testing.T) {
	base := func(f func(*Config)) Config {
		c := Config{Lock: "token", Store: filepath.Join(t.TempDir(), "store")}
		f(&c)
		return c
	}
	for _, c := range []struct {
		cfg         Config
		field, want string
	}{
		{base(func(c *Config) { c.Lock = "nope" }), "Lock", `unknown lock "nope"`},
		{base(func(c *Config) { c.Nemesis.Names = []string{"meteor"} }), "Nemesis.Names", `unknown nemesis "meteor"`},
		{base(func(c *Config) { c.Nemesis.Persistence = "maybe" }), "Nemesis.Persistence", `unknown persistence "maybe"`},
		{base(func(c *Config) { c.Script = []nemesis.Step{{Nemesis: "meteor"}} }), "Script", `script step 1: unknown nemesis "meteor"`},
		{base(func(c *Config) { c.Workload.Hold = -time.Second }), "Workload.Hold", "Workload.Hold must not be negative, got -1s: give a duration"},
		{base(func(c *Config) { c.Nemesis.Jitter = -time.Second }), "Nemesis.Jitter", "Nemesis.Jitter must not be negative"},
		{base(func(c *Config) { c.Nemesis.ClockBump = -time.Minute }), "Nemesis.ClockBump", "Nemesis.ClockBump must be positive, got -1m0s"},
		{base(func(c *Config) { c.Workload.ClientPauseRate = math.NaN() }), "Workload.ClientPauseRate", "between 0 and 1, got NaN"},
		{base(func(c *Config) { c.Nemesis.DriftRate = math.Inf(1) }), "Nemesis.DriftRate", "Nemesis.DriftRate must be a positive number"},
		{base(func(c *Config) { c.Nemesis.Failpoints = []string{"x"} }), "Nemesis.Failpoints", "add Nemesis.Names=client-pause or client-crash"},
		{base(func(c *Config) { c.Lock, c.Workload.RenewBeforeWrite = "setnx", true }), "Workload.RenewBeforeWrite", "drop Workload.RenewBeforeWrite"},
		{base(func(c *Config) { c.Workload.Keys = -1 }), "Workload", "keys must be at least 1, got -1"},
		{base(func(c *Config) { c.ClientRetries = -1 }), "ClientRetries", "ClientRetries must not be negative"},
		{base(func(c *Config) { c.Nodes = 3 }), "Nodes", "uses exactly 1 node(s), got Nodes=3: use Nodes=1 or leave it out"},
		{base(func(c *Config) { c.Lock = "etcd"; c.Nodes = 7 }), "Nodes", "needs between 3 and 5 nodes, got Nodes=7: use Nodes=3 to 5"},
		{base(func(c *Config) { c.Lock = "token-wait"; c.Cluster.Topology = sut.Independent }), "Cluster.Topology", "add Cluster.Topology=replicated"},
		{base(func(c *Config) { c.Lock, c.Cluster.Topology = "etcd", sut.Replicated }), "Cluster.Topology", "a group of peers"},
		{base(func(c *Config) { c.Workload.Clients = MaxClients + 1 }), "Workload.Clients", "is more than the harness supports"},
		{base(func(c *Config) { c.Cluster.Topology = "ring" }), "Cluster", `unknown topology "ring"`},
		// issue 22
		{base(func(c *Config) { c.Workload.TTL = 1500 * time.Microsecond }), "Workload.TTL", "Workload.TTL must be a whole number of milliseconds (the systems count a lease in ms), got 1.5ms: use e.g. Workload.TTL=2ms"},
		{base(func(c *Config) { c.Workload.TTL = time.Nanosecond }), "Workload.TTL", "got 1ns: use e.g. Workload.TTL=1ms"},
		{base(func(c *Config) { c.Lock, c.Workload.TTL = "set-nx-ex", 1500*time.Millisecond }), "Lock", "set-nx-ex uses EX (whole seconds)"},
		{base(func(c *Config) { c.TimeLimit = math.MaxInt64 }), "TimeLimit", "is longer than the harness supports (24h0m0s): use TimeLimit=24h0m0s or less"},
		{base(func(c *Config) { c.Recovery = MaxRecovery + 1 }), "Recovery", "use Recovery=1h0m0s or less"},
		{base(func(c *Config) { c.Nemesis.Names = []string{"kill", ""} }), "Nemesis.Names", `Nemesis.Names has an empty name ("kill,"): name each nemesis (known: `},
		{base(func(c *Config) { c.Nemesis.Names, c.Given = nil, []string{"Nemesis.Names"} }), "Nemesis.Names", "Nemesis.Names is given but names no nemesis"},
		{base(func(c *Config) { c.Nemesis.Names, c.TimeLimit = []string{"stale-replica"}, 2*time.Second }), "Nemesis.Interval",
			"no fault can strike in the run: each waits Nemesis.Interval (5s) first, and TimeLimit is 2s: use TimeLimit=12.5s or more"},
	} {
		err := c.cfg.Validate()
		var ue *UsageError
		var fe *FieldError
		if !errors.As(err, &ue) || !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want a usage error of field %s saying %q", err, c.field, c.want)
		}
		if _, serr := os.Stat(c.cfg.Store); serr == nil {
			t.Errorf("validating %v created the store", err)
		}
	}
}

// The edges of the limits of issue 22 are accepted: a whole number of
// milliseconds, the longest phases, a fault that starts just before the
// end, and a script, which times its own steps.
func TestValidateAcceptsTheEdges(t *testing.T) {
	for _, c := range []Config{
		{Lock: "token", Workload: workloads.Config{TTL: time.Millisecond}},
		{Lock: "token", Workload: workloads.Config{TTL: 1500 * time.Millisecond}},
		{Lock: "set-nx-ex", Workload: workloads.Config{TTL: 2 * time.Second}},
		{Lock: "token", TimeLimit: MaxTimeLimit, Recovery: MaxRecovery},
		{Lock: "token", TimeLimit: 5*time.Second + 1, Nemesis: nemesis.Config{Names: []string{"kill"}}},
		{Lock: "token", TimeLimit: time.Second, Nemesis: nemesis.Config{Names: []string{"kill"}}, Script: []nemesis.Step{{Nemesis: "kill", Action: "start"}}},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// A plan is what the run uses, resolved once: the lock, its nodes, the
// system and the deployment request, the nemeses built.
func TestPlanResolvesOnce(t *testing.T) {
	p, err := NewPlan(Config{Lock: "redlock", Workload: workloads.Config{Clients: 3},
		Nemesis: nemesis.Config{Names: []string{"clock"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Lock.Name != "redlock" || p.Nodes != DefaultNodes || p.System.Name != "redis" || p.Backend == nil || p.Nemesis == nil {
		t.Errorf("plan %+v", p)
	}
	if p.Cluster.Nodes != DefaultNodes || p.Cluster.Clients != 3 || !p.Cluster.Faketime {
		t.Errorf("deployment request %+v, want %d nodes, 3 clients and libfaketime for the clock nemesis", p.Cluster, DefaultNodes)
	}
	if len(p.Require) != 1 || p.Require[0].Name != "the clock nemesis" || p.Config.Seed != 1 || p.Config.Test != "redlock" {
		t.Errorf("requirements %+v, config %+v", p.Require, p.Config)
	}
	etcd, err := NewPlan(Config{Lock: "etcd"})
	if err != nil || etcd.System.Name != "etcd" || etcd.Nodes != 3 {
		t.Errorf("etcd plan %+v, %v", etcd, err)
	}
}
