package scenarios

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/lockharness/lockharness/locks"
	lockrun "github.com/lockharness/lockharness/run"
)

// WriteMarkdown writes the page of the manual that lists the scenarios
// (docs/scenarios.md for the whole catalogue): one table row per scenario,
// in the order given, with its lock, the system it runs on, the verdicts it
// expects, what happens in one line and where the argument comes from. Each
// row carries an anchor named after its scenario, so other pages can link to
// docs/scenarios.md#NAME. The page is generated, never edited by hand: the
// test TestScenarioDoc says when it is out of date and rewrites it with
// -update.
func WriteMarkdown(w io.Writer, list []Scenario) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Scenarios\n\n")
	fmt.Fprintf(bw, "<!-- Generated from the catalogue's files (scenarios/catalogue/); do not edit. Regenerate with:\n")
	fmt.Fprintf(bw, "     go test ./scenarios -run TestScenarioDoc -update -->\n\n")
	fmt.Fprintf(bw, "The catalogue holds %d scenarios. Each is a scripted fault schedule on real servers, run\n", len(list))
	fmt.Fprintf(bw, "exactly like `harness run` (same locks, nemeses and checkers), with the verdict each checker\n")
	fmt.Fprintf(bw, "must give. `harness scenario run NAME` runs one and prints what happened and why in plain\n")
	fmt.Fprintf(bw, "words; `harness scenario run --all` runs them all and exits 0 only if every verdict is as\n")
	fmt.Fprintf(bw, "expected. \"Expected\" names the checkers that must find a violation (\"valid\": none may).\n")
	fmt.Fprintf(bw, "[teaching.md](teaching.md) walks through the ones that stage Kleppmann's and antirez's\n")
	fmt.Fprintf(bw, "arguments. Each scenario is a schedule file under `scenarios/catalogue/`, with its explanation\n")
	fmt.Fprintf(bw, "and sources; a file of your own in that format runs with `harness scenario run FILE`\n")
	fmt.Fprintf(bw, "([schedules.md](schedules.md)).\n\n")
	fmt.Fprintf(bw, "| scenario | lock | system | expected | what happens | source |\n")
	fmt.Fprintf(bw, "|---|---|---|---|---|---|\n")
	for _, s := range list {
		system, err := s.system()
		if err != nil {
			return err
		}
		source := cell(s.Source)
		if source == "" {
			source = "–"
		}
		fmt.Fprintf(bw, "| <a id=\"%s\"></a>`%s` | `%s` | %s | %s | %s | %s |\n",
			s.Name, s.Name, s.Lock, cell(system), cell(s.Expect.String()), cell(s.Summary), source)
	}
	return bw.Flush()
}

// system describes where the scenario's lock runs, as the run resolves it:
// the lock's system and, for Redis, the topology and its size.
func (s Scenario) system() (string, error) {
	info, err := s.ownRegistry().Lookup(s.Lock)
	if err != nil {
		return "", fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	nodes := s.Run.Nodes
	if nodes == 0 {
		nodes = info.MinNodes
		if info.MaxNodes == 0 {
			nodes = max(nodes, lockrun.DefaultNodes)
		}
	}
	switch info.SystemName() {
	case locks.SystemEtcd:
		return plural(nodes, "etcd, %d member"), nil
	case locks.SystemZooKeeper:
		return plural(nodes, "ZooKeeper, %d server"), nil
	case locks.SystemMariaDB:
		return plural(nodes, "MariaDB, %d server"), nil
	case locks.SystemRedis:
	default:
		return info.SystemName(), nil
	}
	c := s.Run.Cluster.WithDefaults()
	switch c.Topology {
	case "cluster":
		return fmt.Sprintf("Redis Cluster, %d masters with %s each", c.Masters, plural(c.Replicas, "%d replica")), nil
	case "replicated":
		if c.Failover == "sentinel" {
			return fmt.Sprintf("Redis, a master and %s, %s", plural(c.Replicas, "%d replica"), plural(c.Sentinels, "%d Sentinel")), nil
		}
		return fmt.Sprintf("Redis, a master and %s, %s failover", plural(c.Replicas, "%d replica"), c.Failover), nil
	}
	if nodes == 1 {
		return "Redis, 1 node", nil
	}
	return fmt.Sprintf("Redis, %d independent masters", nodes), nil
}

// plural formats n into format, adding an s for any n but 1.
func plural(n int, format string) string {
	s := fmt.Sprintf(format, n)
	if n != 1 {
		s += "s"
	}
	return s
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
