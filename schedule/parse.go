package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxSize is the largest schedule file Parse reads: the catalogue's
// largest is a few kilobytes, and a replayed random run of minutes a few
// hundred.
const MaxSize = 1 << 20

// Error is one problem of a schedule: where it is (Path, the field by its
// YAML keys, "steps[2].nemesis"; Line, its line in the file when it was
// parsed from one), what is wrong and how to put it right.
type Error struct {
	Line    int
	Path    string
	Problem string
	Fix     string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString(" (" + e.Fix + ")")
	}
	return b.String()
}

// Errors are every problem Validate found, in the order of the file.
type Errors []*Error

func (es Errors) Error() string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return strings.Join(out, "; ")
}

// Parse reads one schedule from r (at most MaxSize bytes, one YAML
// document, no field it does not know) and validates it against env.
// Every error names its line. Text fields are normalised (see Write), so
// Parse(Write(s)) gives s back.
func Parse(r io.Reader, env Env) (Schedule, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return Schedule{}, fmt.Errorf("read schedule: %w", err)
	}
	if len(data) > MaxSize {
		return Schedule{}, &Error{Problem: fmt.Sprintf("the file is larger than %d bytes", MaxSize), Fix: "a schedule is a few kilobytes: give a schedule file, not a history or a log"}
	}
	s, lines, err := decode(data)
	if err != nil {
		return Schedule{}, err
	}
	if err := s.Validate(env); err != nil {
		var es Errors
		if errors.As(err, &es) {
			for _, e := range es {
				e.Line = lines.of(e.Path)
			}
		}
		return Schedule{}, err
	}
	return s, nil
}

// decode is the one document of data, strictly, and the line of each of
// its fields.
func decode(data []byte) (Schedule, lineMap, error) {
	var s Schedule
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return s, nil, &Error{Line: 1, Problem: "the file is empty", Fix: "a schedule names at least its lock: \"lock: token\""}
		}
		return s, nil, yamlError(err)
	}
	var rest yaml.Node
	if err := dec.Decode(&rest); !errors.Is(err, io.EOF) {
		line := rest.Line
		if err != nil {
			return s, nil, yamlError(err)
		}
		return s, nil, &Error{Line: line, Problem: "a second YAML document", Fix: "a schedule file holds one document: remove the \"---\" and what follows, or split it into files"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return s, nil, yamlError(err)
	}
	lines := lineMap{}
	lines.walk(&root, "")
	return s.normal(), lines, nil
}

// lineMap is the line of each field by its path.
type lineMap map[string]int

func (m lineMap) walk(n *yaml.Node, path string) {
	if n == nil {
		return
	}
	if _, ok := m[path]; !ok {
		m[path] = n.Line
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			m.walk(c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := k
			if path != "" {
				p = path + "." + k
			}
			m[p] = n.Content[i].Line
			m.walk(n.Content[i+1], p)
			m[p] = n.Content[i].Line
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			m.walk(c, path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// of is the line of path, or of the nearest field above it that has one.
func (m lineMap) of(path string) int {
	for path != "" {
		if l, ok := m[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return m[""]
}

var (
	yamlLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	blankLine    = regexp.MustCompile(`\n[ \t]*\n`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type schedule\.(\w+)$`)
)

// yamlError rewrites the YAML library's error as the schedule's: the
// first problem, its line, and for an unknown field the known ones.
func yamlError(err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	es := make(Errors, 0, len(msgs))
	for _, msg := range msgs {
		e := &Error{Problem: strings.TrimPrefix(msg, "yaml: ")}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Problem = m[2]
		}
		if m := unknownField.FindStringSubmatch(e.Problem); m != nil {
			e.Problem = fmt.Sprintf("unknown field %q in %s", m[1], typeNames[m[2]])
			e.Fix = "known: " + strings.Join(knownFields(m[2]), ", ")
		} else if strings.Contains(e.Problem, "time.Duration") {
			e.Fix = "write a duration with its unit: 1s, 200ms, 1m30s"
		}
		es = append(es, e)
	}
	return es
}

// typeNames say in words what each type of the file is.
var typeNames = map[string]string{
	"Schedule": "the schedule", "Deployment": "deployment", "Workload": "workload", "Nemesis": "nemesis",
	"Step": "a step", "Await": "an await", "Requirement": "an exposure", "Kind": "a kind",
}

// knownFields are the YAML keys of the named type, sorted.
func knownFields(typ string) []string {
	types := map[string]reflect.Type{
		"Schedule": reflect.TypeFor[Schedule](), "Deployment": reflect.TypeFor[Deployment](), "Workload": reflect.TypeFor[Workload](),
		"Nemesis": reflect.TypeFor[Nemesis](), "Step": reflect.TypeFor[Step](), "Await": reflect.TypeFor[Await](),
		"Requirement": reflect.TypeFor[Requirement](), "Kind": reflect.TypeFor[Kind](),
	}
	t, ok := types[typ]
	if !ok {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// normal is s with its text normalised and empty lists and maps left out,
// as Write writes them.
func (s Schedule) normal() Schedule {
	s.Summary = oneLine(s.Summary)
	s.Explanation = paragraphs(s.Explanation)
	s.Sources = nilIfEmpty(s.Sources)
	s.Nemesis.Names = nilIfEmpty(s.Nemesis.Names)
	s.Nemesis.PartitionPatterns = nilIfEmpty(s.Nemesis.PartitionPatterns)
	s.Nemesis.Failpoints = nilIfEmpty(s.Nemesis.Failpoints)
	if len(s.Expect) == 0 {
		s.Expect = nil
	}
	if len(s.Steps) == 0 {
		s.Steps = nil
	}
	for i := range s.Steps {
		s.Steps[i] = s.Steps[i].normal()
	}
	if len(s.Exposure) == 0 {
		s.Exposure = nil
	}
	for i := range s.Exposure {
		s.Exposure[i].Faults = nilIfEmpty(s.Exposure[i].Faults)
	}
	if len(s.Kinds) == 0 {
		s.Kinds = nil
	}
	for i, k := range s.Kinds {
		k.Has, k.Lacks = nilIfEmpty(k.Has), nilIfEmpty(k.Lacks)
		if len(k.Expect) == 0 {
			k.Expect = nil
		}
		s.Kinds[i] = k
	}
	return s
}

func (s Step) normal() Step {
	s.Targets = nilIfEmpty(s.Targets)
	if len(s.Params) == 0 {
		s.Params = nil
	}
	if s.Await != nil {
		s.Await.Granted = nilIfEmpty(s.Await.Granted)
	}
	return s
}

func nilIfEmpty(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	return xs
}

// oneLine is s with its runs of white space made one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// paragraphs is s as paragraphs separated by one blank line, each on one
// line.
func paragraphs(s string) string {
	var out []string
	for _, p := range blankLine.Split(s, -1) {
		if p = oneLine(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// Line is the line of the field at path ("workload.ttl", "steps[1].at")
// in the schedule file data, or of the nearest field above it; 0 when data
// is no YAML. A caller that finds a problem Validate cannot (the run's own
// validation) names its line so.
func Line(data []byte, path string) int {
	var root yaml.Node
	if len(data) > MaxSize || yaml.Unmarshal(data, &root) != nil {
		return 0
	}
	lines := lineMap{}
	lines.walk(&root, "")
	return lines.of(path)
}
