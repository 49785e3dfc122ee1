// Package registry is the one shape of the harness's registries. The locks
// (package locks), the faults (package nemesis), the scenarios (package
// scenarios) and the systems under test (package sut) are each a Registry
// of their own entries by name, behind a typed API of their package that
// says what an entry must carry; each package's Builtin returns a new one
// holding what the harness ships, and a user adds their own with Register.
//
// A registry refuses an empty name, a nil entry and a name already taken,
// and answers a name nothing is registered under with an *UnknownError,
// the one unknown-name error of the harness, which lists the known names.
// It is safe for concurrent use. There is no package-level registry: a
// registry is a value its owner builds and passes on.
package registry

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// What Register refuses, wrapped in its error (test them with errors.Is).
var (
	// ErrNoName: an entry was registered under the empty name.
	ErrNoName = errors.New("empty name")
	// ErrNil: the entry was nil (a nil pointer, func, map, … or interface).
	ErrNil = errors.New("nil entry")
	// ErrDuplicate: another entry is registered under that name.
	ErrDuplicate = errors.New("name already registered")
)

// Registry holds entries of type T by name.
//
// Names and All list the entries sorted by name, so that a list reads the
// same whoever registered first; a registry made with InOrder lists them
// in the order they were registered instead, for a builder whose order
// means something (the systems under test, Redis, the default, first).
type Registry[T any] struct {
	kind    string
	knownAs string
	inOrder bool

	mu     sync.RWMutex
	byName map[string]T
	order  []string // registration order
}

// Option tunes a registry made with New.
type Option func(*options)

type options struct {
	knownAs string
	inOrder bool
}

// KnownAs sets the words that introduce the known names in the message
// of an unknown-name error: "known locks" gives `unknown lock "x" (known
// locks: …)`. By default they are "known".
func KnownAs(words string) Option { return func(o *options) { o.knownAs = words } }

// InOrder makes Names and All list the entries in the order they were
// registered, not sorted by name.
func InOrder() Option { return func(o *options) { o.inOrder = true } }

// New returns an empty registry of entries of kind: the word its errors
// name one entry by ("lock", "nemesis", "system").
func New[T any](kind string, opts ...Option) *Registry[T] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Registry[T]{kind: kind, knownAs: o.knownAs, inOrder: o.inOrder, byName: map[string]T{}}
}

// Kind is the word the registry's errors name one entry by.
func (r *Registry[T]) Kind() string { return r.kind }

// Register adds v under name. It refuses an empty name (ErrNoName), a nil
// v (ErrNil) and a name already registered (ErrDuplicate), with an error
// that names the kind and the name: `register lock "x": name already
// registered`.
func (r *Registry[T]) Register(name string, v T) error {
	switch {
	case name == "":
		return fmt.Errorf("register %s: %w", r.kind, ErrNoName)
	case isNil(v):
		return fmt.Errorf("register %s %q: %w", r.kind, name, ErrNil)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("register %s %q: %w", r.kind, name, ErrDuplicate)
	}
	r.byName[name] = v
	r.order = append(r.order, name)
	return nil
}

// Lookup returns the entry registered under name, or an *UnknownError
// listing the known names (as Names lists them).
func (r *Registry[T]) Lookup(name string) (T, error) {
	r.mu.RLock()
	v, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		return v, r.Unknown(name)
	}
	return v, nil
}

// Unknown is the error Lookup returns for name: an *UnknownError of this
// registry's kind listing its known names.
func (r *Registry[T]) Unknown(name string) *UnknownError {
	return &UnknownError{Kind: r.kind, Name: name, Known: r.Names(), KnownAs: r.knownAs}
}

// Names lists the registered names, sorted (or, made InOrder, in the
// order they were registered).
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := slices.Clone(r.order)
	if !r.inOrder {
		slices.Sort(names)
	}
	return names
}

// All lists the registered entries in the order of Names.
func (r *Registry[T]) All() []T {
	names := r.Names()
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]T, 0, len(names))
	for _, n := range names {
		out = append(out, r.byName[n])
	}
	return out
}

// Len is how many entries are registered.
func (r *Registry[T]) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.order)
}

// UnknownError is the error of a lookup of a name nothing is registered
// under, for every registry of the harness: a lock, a nemesis, a scenario,
// a system under test or one of its backends. Match it with errors.As;
// Kind says which registry answered.
type UnknownError struct {
	// Kind is what was looked up: "lock", "nemesis", "scenario",
	// "system", "backend of redis".
	Kind string
	// Name is the name asked for.
	Name string
	// Known are the names that are registered.
	Known []string
	// KnownAs introduces Known in the message ("known locks"); empty
	// means "known".
	KnownAs string
}

// Error reads `unknown lock "x" (known locks: a, b)` or `unknown nemesis
// "x" (known: a, b)`.
func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown %s %q (%s: %s)", e.Kind, e.Name, cmp.Or(e.KnownAs, "known"), strings.Join(e.Known, ", "))
}

// isNil reports whether v is nil: a nil interface, or a nil pointer, func,
// map, channel or slice.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
