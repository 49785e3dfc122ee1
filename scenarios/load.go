package scenarios

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/schedule"
)

// files is the catalogue as data: one schedule file per scenario under
// catalogue/PART/, PART and file named "N-name" so that the order of
// the catalogue (the literature first, then the issue trackers', then each
// system's) is the order of the names. A scenario's file holds its
// configuration, script, expectation, exposure, the kinds of lock it
// applies to, its explanation and its sources.
//
//go:embed catalogue
var files embed.FS

// partDirs are the catalogue's parts by name, in order.
var partDirs = []struct{ name, dir string }{
	{"one", "1-literature"}, {"two", "2-issues"}, {"cluster", "3-cluster"},
	{"consensus", "4-etcd"}, {"zookeeper", "5-zookeeper"}, {"mariadb", "6-mariadb"},
}

// Catalogue returns every scenario, read from the embedded files in the
// catalogue's order. It returns new values each time: callers may change
// them. A file that does not parse is a programming error, caught by the
// catalogue's tests.
func Catalogue() []Scenario {
	var all []Scenario
	for _, p := range partDirs {
		all = append(all, part(p.name)...)
	}
	return all
}

// part is the named part of the catalogue.
func part(name string) []Scenario {
	i := slices.IndexFunc(partDirs, func(p struct{ name, dir string }) bool { return p.name == name })
	if i < 0 {
		panic("no part " + name + " of the catalogue")
	}
	dir := path.Join("catalogue", partDirs[i].dir)
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		panic(err)
	}
	var out []Scenario
	for _, e := range entries {
		f, err := files.Open(path.Join(dir, e.Name()))
		if err != nil {
			panic(err)
		}
		s, err := Read(f)
		_ = f.Close()
		if err != nil {
			panic(fmt.Sprintf("catalogue file %s: %v", path.Join(dir, e.Name()), err))
		}
		out = append(out, s)
	}
	return out
}

// Read reads one scenario from a schedule file (schedule.Parse): the
// catalogue's files, or a user's own scenario. Every error names its line.
func Read(r io.Reader) (Scenario, error) {
	sch, err := schedule.Parse(r, schedule.Env{})
	if err != nil {
		return Scenario{}, err
	}
	return FromSchedule(sch, schedule.Env{})
}

// FromSchedule is the scenario of a parsed schedule: its run, and the
// expectation, exposure, kinds, explanation and sources beside it. A
// scenario needs a name and an expectation of every checker. Its lock is
// looked up in env's locks (nil: the built-in ones).
func FromSchedule(sch schedule.Schedule, env schedule.Env) (Scenario, error) {
	cfg, err := lockrun.FromSchedule(sch, env)
	if err != nil {
		return Scenario{}, err
	}
	if sch.Name == "" {
		return Scenario{}, &schedule.Error{Path: "name", Problem: "a scenario without a name", Fix: "give it one: \"name: my-scenario\""}
	}
	for _, n := range checkerNames {
		if sch.Expect[n] == "" {
			return Scenario{}, &schedule.Error{Path: "expect", Problem: "no expected verdict of " + n, Fix: "a scenario expects a verdict of each checker: " + strings.Join(checkerNames[:], ", ")}
		}
	}
	s := Scenario{Name: sch.Name, Lock: sch.Lock, Summary: sch.Summary, Source: strings.Join(sch.Sources, "; "),
		Explanation: sch.Explanation, Expect: expectOf(sch.Expect), Run: cfg}
	for _, r := range sch.Exposure {
		s.Exposure = append(s.Exposure, r.CheckerRequirement())
	}
	for i, k := range sch.Kinds {
		kind, err := kindOfSchedule(k)
		if err != nil {
			return Scenario{}, &schedule.Error{Path: fmt.Sprintf("kinds[%d]", i), Problem: err.Error(), Fix: "known properties: " + joinProps(properties, ", ")}
		}
		s.Kinds = append(s.Kinds, kind)
	}
	// The labels RunConfig gives the run are the scenario's own.
	s.Run.Lock, s.Run.Scenario, s.Run.Explanation, s.Run.Expected, s.Run.Require = "", "", "", nil, nil
	if sch.Registry == "" {
		s.Run.Registry = env.Locks // nil: the built-in locks
	}
	return s, nil
}

func expectOf(m map[string]string) Expect {
	return Expect{LockPromise: checker.Verdict(m[checker.LockPromise]), Resource: checker.Verdict(m[checker.Resource]), Liveness: checker.Verdict(m[checker.Liveness])}
}

func kindOfSchedule(k schedule.Kind) (Kind, error) {
	out := Kind{System: k.System, Expect: expectOf(k.Expect)}
	for _, names := range []struct {
		in  []string
		out *[]Property
	}{{k.Has, &out.Has}, {k.Lacks, &out.Lacks}} {
		for _, n := range names.in {
			if !slices.Contains(properties, Property(n)) {
				return Kind{}, fmt.Errorf("unknown property %q", n)
			}
			*names.out = append(*names.out, Property(n))
		}
	}
	return out, nil
}

// Schedule is the scenario as a schedule file (the inverse of
// FromSchedule).
func (s Scenario) Schedule() schedule.Schedule {
	sch := lockrun.ScheduleOf(s.Run)
	sch.Name, sch.Lock, sch.Summary, sch.Explanation = s.Name, s.Lock, s.Summary, s.Explanation
	if s.Source != "" {
		sch.Sources = strings.Split(s.Source, "; ")
	}
	sch.Expect = s.Expect.Map()
	sch.Exposure = nil
	for _, r := range s.Exposure {
		sch.Exposure = append(sch.Exposure, schedule.RequirementOf(r))
	}
	for _, k := range s.Kinds {
		sk := schedule.Kind{System: k.System, Expect: k.Expect.Map()}
		for _, p := range k.Has {
			sk.Has = append(sk.Has, string(p))
		}
		for _, p := range k.Lacks {
			sk.Lacks = append(sk.Lacks, string(p))
		}
		sch.Kinds = append(sch.Kinds, sk)
	}
	return sch
}
