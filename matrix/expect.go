package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lockharness/lockharness/inputfile"
	"github.com/lockharness/lockharness/scenarios"
)

// Expected verdicts of a rule.
const (
	// ExpectValid: the run must be valid. Unknown (nothing exercised,
	// checker timeout) does not meet it.
	ExpectValid = "valid"
	// ExpectInvalid: the faults must break the lock. Unknown does not
	// meet it either: a fault that lost its teeth must show.
	ExpectInvalid = "invalid"
	// ExpectFlaky: the verdict varies between runs; it never fails the
	// matrix but is reported with its reason and issue link.
	ExpectFlaky = "flaky"
	// ExpectCatalogued: a scenario cell without a rule is judged by the
	// scenario's own expected verdict per checker.
	ExpectCatalogued = "catalogued"
)

// Rule says what must hold of the cells it matches. Every pattern is a
// glob (path.Match: '*', '?', '[…]'); an empty pattern matches anything.
// Nemeses matches the nemesis set as one word, its nemeses joined by '+'
// in the order given ("partition+clock"), or "none".
type Rule struct {
	Lock     string `yaml:"lock,omitempty" json:"lock,omitempty"`
	Nemeses  string `yaml:"nemeses,omitempty" json:"nemeses,omitempty"`
	Seed     string `yaml:"seed,omitempty" json:"seed,omitempty"`
	Backend  string `yaml:"backend,omitempty" json:"backend,omitempty"`
	Scenario string `yaml:"scenario,omitempty" json:"scenario,omitempty"`
	Expect   string `yaml:"expect" json:"expect"`
	Reason   string `yaml:"reason,omitempty" json:"reason,omitempty"`
	Link     string `yaml:"link,omitempty" json:"link,omitempty"`
}

// Expectations is an expectations file. The first rule that matches a cell
// decides (as in a firewall or .gitignore read top-down): put specific
// rules before general ones.
type Expectations struct {
	// File is where the rules came from ("" when none was given: every
	// lock cell must then be valid).
	File  string `yaml:"-" json:"file,omitempty"`
	Rules []Rule `yaml:"rules" json:"rules,omitempty"`
}

// Known are the names an expectations file may name, from the registries
// the matrix runs with: a rule whose pattern matches none of them is a
// typo ("tokne"), and would otherwise leave every cell it meant to cover
// without an expectation, which reads as a lock regression.
type Known struct {
	Locks, Nemeses, Backends, Scenarios []string
}

// KnownNames are the names of the given lock and nemesis registries, the
// matrix's backends and the scenario catalogue.
func KnownNames(locks, nemeses interface{ Names() []string }) Known {
	k := Known{Locks: locks.Names(), Nemeses: nemeses.Names(), Backends: []string{DefaultBackend, DockerBackend}}
	for _, sc := range scenarios.Catalogue() {
		k.Scenarios = append(k.Scenarios, sc.Name)
	}
	return k
}

// ReadExpectations reads and checks an expectations file: its syntax
// (ParseExpectations), and every name in it against known. The file is
// read through inputfile: a regular file of at most MaxExpectationsSize.
func ReadExpectations(ctx context.Context, file string, known Known) (Expectations, error) {
	b, err := inputfile.Read(ctx, file, inputfile.Kind{Name: "expectations file", Max: MaxExpectationsSize, Flag: "--expect"})
	if err != nil {
		return Expectations{}, err
	}
	e, err := ParseExpectations(b)
	if err == nil {
		err = e.CheckNames(known)
	}
	if err != nil {
		return Expectations{}, fmt.Errorf("expectations %s: %w", file, err)
	}
	e.File = file
	return e, nil
}

// MaxExpectationsSize bounds an expectations file: the project's own, a
// rule per measured cell, is a few kilobytes.
const MaxExpectationsSize = 1 << 20

// ParseExpectations parses the YAML of an expectations file: unknown
// fields, bad globs and rules without an expectation are errors, as is a
// flaky rule without a reason and an issue link, a file of no rules (every
// cell would miss its expectation), and a second YAML document (which a
// decoder would silently ignore).
func ParseExpectations(b []byte) (Expectations, error) {
	var e Expectations
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil && !errors.Is(err, io.EOF) {
		return Expectations{}, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return Expectations{}, fmt.Errorf("more than one YAML document (a line of ---): put every rule under the one rules: list")
	}
	if len(e.Rules) == 0 {
		return Expectations{}, fmt.Errorf("no rules: an expectations file is a rules: list (see matrix/expectations.yaml); leave out --expect to expect every lock cell valid")
	}
	for i, r := range e.Rules {
		if err := r.check(); err != nil {
			return Expectations{}, fmt.Errorf("rule %d: %w", i+1, err)
		}
	}
	return e, nil
}

// check is a rule's own syntax: its expectation and its globs.
func (r Rule) check() error {
	switch r.Expect {
	case ExpectValid, ExpectInvalid:
	case ExpectFlaky:
		if r.Reason == "" || r.Link == "" {
			return fmt.Errorf("a flaky rule needs a reason and a link to the issue that tracks it")
		}
	case "":
		return fmt.Errorf("no expect (valid, invalid or flaky)")
	default:
		return fmt.Errorf("expect %q: use valid, invalid or flaky", r.Expect)
	}
	for _, p := range []string{r.Lock, r.Nemeses, r.Seed, r.Backend, r.Scenario} {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad pattern %q: %w", p, err)
		}
	}
	return nil
}

// CheckNames refuses a rule whose lock, backend or scenario pattern
// matches no known name, or whose nemeses pattern has a part (between
// '+') that matches no known nemesis (nor "none").
func (e Expectations) CheckNames(k Known) error {
	for i, r := range e.Rules {
		for _, c := range []struct {
			what, pattern string
			known         []string
		}{
			{"lock", r.Lock, k.Locks}, {"backend", r.Backend, k.Backends}, {"scenario", r.Scenario, k.Scenarios},
		} {
			if c.pattern != "" && !matchesAny(c.pattern, c.known) {
				return fmt.Errorf("rule %d: %s %q matches no known %s (known: %s)", i+1, c.what, c.pattern, c.what, strings.Join(c.known, ", "))
			}
		}
		if r.Nemeses == "" {
			continue
		}
		for _, part := range strings.Split(r.Nemeses, "+") {
			if !matchesAny(part, append([]string{"none"}, k.Nemeses...)) {
				return fmt.Errorf("rule %d: nemesis %q (in nemeses %q) matches no known nemesis (known: none, %s; join a set with '+')", i+1, part, r.Nemeses, strings.Join(k.Nemeses, ", "))
			}
		}
	}
	return nil
}

// matchesAny reports whether glob pattern matches one of names.
func matchesAny(pattern string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool {
		ok, _ := path.Match(pattern, n)
		return ok
	})
}

// Matches reports whether the rule applies to cell c. A rule naming a
// scenario matches only scenario cells, and a rule naming none matches
// only lock cells, so that a catch-all for locks never overrides the
// catalogue's own expectations.
func (r Rule) Matches(c Cell) bool {
	if (r.Scenario != "") != (c.Scenario != "") {
		return false
	}
	seed := strconv.FormatUint(c.Seed, 10)
	if c.Scenario != "" {
		seed = strconv.Itoa(c.Repeat)
	}
	for _, pv := range [][2]string{{r.Lock, c.Lock}, {r.Nemeses, c.NemesisSet()}, {r.Seed, seed}, {r.Backend, c.Backend}, {r.Scenario, c.Scenario}} {
		if pv[0] == "" {
			continue
		}
		if ok, _ := path.Match(pv[0], pv[1]); !ok {
			return false
		}
	}
	return true
}

// Expectation is what a cell is judged against.
type Expectation struct {
	Expect string `json:"expect"` // valid, invalid, flaky, catalogued, or "" (no rule matched)
	Reason string `json:"reason,omitempty"`
	Link   string `json:"link,omitempty"`
	// Rule is the 1-based index of the rule that matched (0: none).
	Rule int `json:"rule,omitempty"`
}

// For returns the expectation of cell c: the first matching rule; with no
// match, a scenario's own catalogue, a lock cell "valid" when no file was
// given, and otherwise nothing (a miss: the file must cover every cell).
func (e Expectations) For(c Cell) Expectation {
	for i, r := range e.Rules {
		if r.Matches(c) {
			return Expectation{Expect: r.Expect, Reason: r.Reason, Link: r.Link, Rule: i + 1}
		}
	}
	switch {
	case c.Scenario != "":
		return Expectation{Expect: ExpectCatalogued}
	case e.File == "" && len(e.Rules) == 0:
		return Expectation{Expect: ExpectValid}
	}
	return Expectation{}
}
