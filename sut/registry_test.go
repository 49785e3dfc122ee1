package sut_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/registry"
	"github.com/lockharness/lockharness/sut"
)

func noBackend(context.Context, sut.Config) (sut.Deployment, error) {
	return nil, errors.New("starts nothing")
}

// A registry refuses a second system of one name, a system without a
// name or a local backend, and answers an unknown name with an
// *UnknownError listing the known ones in the order they were registered.
func TestRegistry(t *testing.T) {
	r := sut.NewRegistry()
	for _, name := range []string{"redis", "etcd"} {
		if err := r.Register(sut.System{Name: name, Local: noBackend}); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	for _, s := range []sut.System{
		{Name: "etcd", Local: noBackend},
		{Name: "", Local: noBackend},
		{Name: "zookeeper"},
	} {
		if err := r.Register(s); err == nil {
			t.Errorf("registered %+v", s)
		}
	}
	if err := r.Register(sut.System{Name: "etcd", Local: noBackend}); !errors.Is(err, registry.ErrDuplicate) || !strings.Contains(err.Error(), `"etcd": name already registered`) {
		t.Errorf("a duplicate: %v", err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"redis", "etcd"}) {
		t.Errorf("names %v, want redis, etcd", got)
	}
	if s, err := r.Lookup("etcd"); err != nil || s.Name != "etcd" || s.Local == nil {
		t.Errorf("lookup etcd: %+v, %v", s, err)
	}
	_, err := r.Lookup("consul")
	var ue *sut.UnknownError
	if !errors.As(err, &ue) || ue.Name != "consul" || ue.Kind != "system" || err.Error() != `unknown system "consul" (known: redis, etcd)` {
		t.Errorf("lookup consul: %v", err)
	}
}

// A system's other backends are made from the user's argument; an unknown
// one is an *UnknownError listing them.
func TestSystemBackend(t *testing.T) {
	var got string
	s := sut.System{Name: "redis", Local: noBackend, Backends: map[string]sut.BackendFactory{
		"docker": func(arg string) (sut.Backend, error) { got = arg; return noBackend, nil },
		"target": func(string) (sut.Backend, error) { return nil, errors.New("no such file") },
	}}
	if b, err := s.Backend("docker", "redis:7"); err != nil || b == nil || got != "redis:7" {
		t.Errorf("docker: %v, %v, made from %q", b, err, got)
	}
	if _, err := s.Backend("target", "x.yml"); err == nil || err.Error() != "no such file" {
		t.Errorf("target: %v", err)
	}
	_, err := s.Backend("k8s", "")
	var ue *sut.UnknownError
	var rue *registry.UnknownError // the registries' one unknown-name error
	if !errors.As(err, &ue) || !errors.As(err, &rue) || ue.Kind != "backend of redis" || err.Error() != `unknown backend of redis "k8s" (known: docker, target)` {
		t.Errorf("k8s: %v", err)
	}
}

// Check runs the system's own judgement first, then the generic one.
func TestSystemCheck(t *testing.T) {
	own := errors.New("only this system refuses it")
	s := sut.System{Name: "x", Local: noBackend, Validate: func(c sut.Config) error {
		if c.Masters == 7 {
			return own
		}
		return nil
	}}
	if err := s.Check(sut.Config{Topology: sut.RedisCluster, Masters: 7}.WithDefaults()); !errors.Is(err, own) {
		t.Errorf("the system's judgement first: %v", err)
	}
	if err := s.Check(sut.Config{Clients: -1}.WithDefaults()); err == nil || !strings.Contains(err.Error(), "clients must be at least 1") {
		t.Errorf("then the generic one: %v", err)
	}
	if err := s.Check(sut.Config{}.WithDefaults()); err != nil {
		t.Errorf("the default config: %v", err)
	}
}
