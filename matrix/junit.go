package matrix

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// JUnit XML in the de-facto schema Jenkins and most CI systems read (the
// Jenkins xunit plugin's junit-10.xsd), with one widespread extension:
// <properties> inside a <testcase>, as pytest's record_property and
// GitLab write it, to carry the cell's lock, nemeses, seed, backend and
// reproduce command. Each cell is one testcase; a missed expectation is a
// <failure> whose message is the headline violation, a cell that could not
// run an <error>, a flaky or not-run cell <skipped>.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties *junitPropList  `xml:"properties,omitempty"`
	Cases      []junitTestCase `xml:"testcase"`
}

type junitPropList struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name       string         `xml:"name,attr"`
	Classname  string         `xml:"classname,attr"`
	Time       string         `xml:"time,attr"`
	Properties *junitPropList `xml:"properties,omitempty"`
	Failure    *junitResult   `xml:"failure,omitempty"`
	Error      *junitResult   `xml:"error,omitempty"`
	Skipped    *junitResult   `xml:"skipped,omitempty"`
	SystemOut  string         `xml:"system-out,omitempty"`
}

type junitResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

// WriteJUnit writes the matrix as JUnit XML.
func WriteJUnit(w io.Writer, m Matrix) error {
	suite := junitSuite{Name: "lockharness matrix " + m.Spec.Name}
	suite.Properties = &junitPropList{Props: []junitProp{
		{"shard", m.Shard}, {"expectations", m.Spec.Expect.File},
		{"backends", strings.Join(m.Spec.BackendList(), ",")}, {"image", m.Spec.Image},
		{"time-limit", m.Spec.Run.TimeLimit.String()}, {"recovery", recoveryProp(m.Spec.Run.Recovery)},
		{"nemesis-interval", m.Spec.Run.NemesisInterval.String()}, {"hold", m.Spec.Run.Hold.String()}, {"nemesis-client-pause", m.Spec.Run.ClientPause.String()},
		{"partition-patterns", strings.Join(m.Spec.Run.PartitionPatterns, ",")}, {"clock-modes", strings.Join(m.Spec.Run.ClockModes, ",")},
	}}
	var total float64
	for _, c := range m.Cells {
		suite.add(c)
		total += c.Seconds
	}
	suite.Time = seconds(total)
	doc := junitSuites{Name: "lockharness", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// add adds cell c as a test case, and counts it: a missed expectation is a
// failure, a cell that could not run an error, a flaky or unrun one is
// skipped; the detail says how to reproduce it and where its report is.
func (s *junitSuite) add(c CellResult) {
	tc := junitTestCase{Name: c.ID(), Classname: "matrix." + c.Lock, Time: seconds(c.Seconds)}
	if c.Scenario != "" {
		tc.Classname = "matrix.scenario." + c.Scenario
	}
	tc.Properties = &junitPropList{Props: cellProps(c)}
	detail := fmt.Sprintf("%s\nreproduce: %s", c.Explain, c.Command)
	if c.Dir != "" {
		detail += "\nreport: " + c.Dir + "/index.html"
	}
	switch c.Outcome {
	case Missed:
		msg := c.Headline
		if msg == "" {
			msg = c.Explain
		}
		tc.Failure = &junitResult{Message: msg, Type: "expected-" + orDash(c.Expect), Text: detail}
		s.Failures++
	case Error:
		tc.Error = &junitResult{Message: c.Error, Type: "error", Text: detail}
		s.Errors++
	case Flaky:
		tc.Skipped = &junitResult{Message: fmt.Sprintf("flaky: %s (%s); got %s", c.Reason, c.Link, orDash(string(c.Verdict))), Type: "flaky", Text: detail}
		s.Skipped++
	case NotRun:
		tc.Skipped = &junitResult{Message: "not run", Type: "not-run", Text: detail}
		s.Skipped++
	default:
		if c.Headline != "" {
			tc.SystemOut = c.Explain + ": " + c.Headline
		}
	}
	s.Tests++
	s.Cases = append(s.Cases, tc)
}

// cellProps are a cell's properties: what it ran, on which backend, how
// to run it again, its verdict and what was expected, its report.
func cellProps(c CellResult) []junitProp {
	props := []junitProp{{"lock", c.Lock}, {"nemeses", c.NemesisSet()}}
	if c.Scenario != "" {
		props = append(props, junitProp{"scenario", c.Scenario}, junitProp{"repeat", strconv.Itoa(c.Repeat)})
	} else {
		props = append(props, junitProp{"seed", strconv.FormatUint(c.Seed, 10)})
	}
	props = append(props, junitProp{"backend", c.Backend}, junitProp{"reproduce", c.Command},
		junitProp{"verdict", orDash(string(c.Verdict))}, junitProp{"expect", orDash(c.Expect)})
	if c.Dir != "" {
		props = append(props, junitProp{"report", c.Dir + "/index.html"})
	}
	return props
}

// mdEscape keeps a cell of a markdown table in its cell.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// recoveryProp is the matrix's recovery as a property: the one given, or
// "derived" when each cell derives its own (RunParams.Recovery).
func recoveryProp(d time.Duration) string {
	if d == 0 {
		return "derived"
	}
	return d.String()
}
