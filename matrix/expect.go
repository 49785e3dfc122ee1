package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"

	"gopkg.in/yaml.v3"
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

// ReadExpectations reads and checks an expectations file.
func ReadExpectations(file string) (Expectations, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Expectations{}, fmt.Errorf("expectations: %w", err)
	}
	e, err := ParseExpectations(b)
	if err != nil {
		return Expectations{}, fmt.Errorf("expectations %s: %w", file, err)
	}
	e.File = file
	return e, nil
}

// ParseExpectations parses the YAML of an expectations file: unknown
// fields, bad globs and rules without an expectation are errors, as is a
// flaky rule without a reason and an issue link.
func ParseExpectations(b []byte) (Expectations, error) {
	var e Expectations
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil && !errors.Is(err, io.EOF) {
		return Expectations{}, err
	}
	for i, r := range e.Rules {
		where := fmt.Sprintf("rule %d", i+1)
		switch r.Expect {
		case ExpectValid, ExpectInvalid:
		case ExpectFlaky:
			if r.Reason == "" || r.Link == "" {
				return Expectations{}, fmt.Errorf("%s: a flaky rule needs a reason and a link to the issue that tracks it", where)
			}
		case "":
			return Expectations{}, fmt.Errorf("%s: no expect (valid, invalid or flaky)", where)
		default:
			return Expectations{}, fmt.Errorf("%s: expect %q: use valid, invalid or flaky", where, r.Expect)
		}
		for _, p := range []string{r.Lock, r.Nemeses, r.Seed, r.Backend, r.Scenario} {
			if _, err := path.Match(p, ""); err != nil {
				return Expectations{}, fmt.Errorf("%s: bad pattern %q: %w", where, p, err)
			}
		}
	}
	return e, nil
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
