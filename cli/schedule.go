package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockharness/lockharness/locks"
	lockrun "github.com/lockharness/lockharness/run"
	"github.com/lockharness/lockharness/scenarios"
	"github.com/lockharness/lockharness/schedule"
)

// scheduleFlags are the flags of `harness run` that still apply with
// --schedule: where the run goes and how it is shown, not what it tests
// (the file says that).
var scheduleFlags = map[string]bool{
	"schedule": true, "store": true, "json": true, "seed": true, "allow-vacuous": true, "check-timeout": true,
	"backend": true, "target": true, "lock-cmd": true,
}

// readSchedule parses the schedule file at path (schedule.Parse: bounded,
// every error with its line) against the locks of this invocation; it
// returns the file's bytes too, to name the line of a problem found later.
func readSchedule(path string, env schedule.Env) (schedule.Schedule, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return schedule.Schedule{}, nil, fmt.Errorf("schedule %s: %w (give the path of a schedule file, such as a run's schedule.yaml)", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return schedule.Schedule{}, nil, fmt.Errorf("schedule %s is a directory (give its schedule.yaml)", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, schedule.MaxSize+1))
	if err != nil {
		return schedule.Schedule{}, nil, fmt.Errorf("schedule %s: %w", path, err)
	}
	s, err := schedule.Parse(bytes.NewReader(data), env)
	if err != nil {
		return s, nil, fmt.Errorf("schedule %s: %w", path, err)
	}
	return s, data, nil
}

// scheduleConfig is the configuration of `harness run --schedule FILE`:
// the file's, with the flags that say where and how the run goes. A flag
// that would change what the file says is refused, naming it.
func (rf *runFlags) scheduleConfig(cmd *cobra.Command, a *app, path string) (lockrun.Config, error) {
	var other []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !scheduleFlags[f.Name] {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return lockrun.Config{}, fmt.Errorf("%s with --schedule: the schedule file says what to run (leave %s out, or edit the file)", strings.Join(other, ", "), strings.Join(other, ", "))
	}
	reg, _, err := a.invocationLocks(rf.lockCmd)
	if err != nil {
		return lockrun.Config{}, err
	}
	env := schedule.Env{Locks: reg}
	s, data, err := readSchedule(path, env)
	if err != nil {
		return lockrun.Config{}, err
	}
	cfg, err := lockrun.FromSchedule(s, env)
	if err != nil {
		return cfg, err
	}
	cfg.Store, cfg.AllowVacuous, cfg.CheckTimeout = rf.cfg.Store, rf.cfg.AllowVacuous, rf.cfg.CheckTimeout
	if cmd.Flags().Changed("seed") {
		cfg.Seed = rf.cfg.Seed
	}
	backend, err := rf.backend.resolve()
	if err != nil {
		return cfg, err
	}
	cfg.Backend = backend
	cfg.Command = a.command()
	if cfg.Seed == 0 {
		cfg.Seed = drawSeed()
		cfg.Command += fmt.Sprintf(" --seed %d", cfg.Seed)
	}
	if _, err := lockrun.NewPlan(cfg); err != nil {
		where := ""
		var fe *lockrun.FieldError
		if errors.As(err, &fe) {
			if line := schedule.Line(data, scheduleKey(fe.Field)); line > 0 {
				where = fmt.Sprintf("line %d: ", line)
			}
		}
		return cfg, fmt.Errorf("schedule %s: %s%s", path, where, lockrun.Text(err, scheduleKey))
	}
	return cfg, nil
}

// scheduleKey names a field of a run's configuration by its key in a
// schedule file ("Workload.TTL": "workload.ttl", "Cluster.Replicas":
// "deployment.replicas").
func scheduleKey(field string) string {
	parts := strings.Split(field, ".")
	for i, p := range parts {
		switch p {
		case "Cluster":
			parts[i] = "deployment"
		case "Script":
			parts[i] = "steps"
		default:
			parts[i] = snake(p)
		}
	}
	return strings.Join(parts, ".")
}

// snake is a Go field name in snake case: TimeLimit time_limit, TTL ttl.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// isScheduleFile reports whether a `scenario run` argument is the path of
// a scenario file rather than a catalogue name: a catalogue name has no
// slash and no .yaml or .yml ending.
func isScheduleFile(arg string) bool {
	return strings.ContainsRune(arg, os.PathSeparator) || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml")
}

// readScenario reads a scenario file for `harness scenario run FILE`,
// whose lock is looked up in reg.
func readScenario(path string, reg *locks.Registry) (scenarios.Scenario, error) {
	env := schedule.Env{Locks: reg}
	s, _, err := readSchedule(path, env)
	if err != nil {
		return scenarios.Scenario{}, err
	}
	sc, err := scenarios.FromSchedule(s, env)
	if err != nil {
		return sc, fmt.Errorf("scenario %s: %w", path, err)
	}
	sc.Run.Command = lockrun.CommandLine("harness", "scenario", "run", path)
	return sc, nil
}
