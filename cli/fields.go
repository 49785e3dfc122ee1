package cli

import lockrun "github.com/lockharness/lockharness/run"

// fieldFlags names the fields of a run's configuration (lockrun.Config) as
// the command line's messages name them: by the flag that sets the field
// (`harness run`'s, whose names `harness matrix` shares), or, for a field
// no flag sets (a scenario sets it), by the words the messages have
// always used.
var fieldFlags = map[string]string{
	"Lock":                      "--lock",
	"Nodes":                     "--nodes",
	"Workload.Clients":          "--clients",
	"Workload.Keys":             "--keys",
	"Workload.TTL":              "--ttl",
	"Workload.ClientPause":      "--client-pause",
	"Workload.ClientPauseRate":  "--client-pause-rate",
	"Workload.Hold":             "--hold",
	"Workload.AcquireTimeout":   "--acquire-timeout",
	"Workload.RenewBeforeWrite": "--renew-before-write",
	"TimeLimit":                 "--time-limit",
	"Recovery":                  "--recovery",
	"CheckTimeout":              "--check-timeout",
	"ClientRetries":             "--client-retries",
	"Seed":                      "--seed",
	"Store":                     "--store",
	"AllowVacuous":              "--allow-vacuous",
	"Nemesis.Names":             "--nemesis",
	"Nemesis.Interval":          "--nemesis-interval",
	"Nemesis.RestartDelay":      "--restart-delay",
	"Nemesis.PartitionPatterns": "--partition-patterns",
	"Nemesis.ClockModes":        "--clock-modes",
	"Nemesis.ClockBump":         "--clock-bump",
	"Nemesis.Latency":           "--latency",
	"Nemesis.ClientPause":       "--nemesis-client-pause",
	"Nemesis.Failpoints":        "--failpoints",
	"Cluster.Topology":          "--topology",
	"Cluster.Replicas":          "--replicas",
	"Cluster.Masters":           "--masters",
	"Cluster.Failover":          "--failover",
	"Cluster.BasePort":          "--base-port",
	"Cluster.Persistence":       "--persistence",

	"Nemesis.Jitter":         "jitter",
	"Nemesis.StrobePeriod":   "strobe period",
	"Nemesis.PauseDuration":  "pause duration",
	"Nemesis.FailoverWindow": "failover window",
	"Nemesis.HealTimeout":    "heal timeout",
	"Nemesis.DriftRate":      "clock drift rate",
	"ClientTimeout":          "client timeout",
	// A schedule file sets these, by the keys it writes them with.
	"EndEarly.Run":      "end_early.run",
	"EndEarly.Grants":   "end_early.grants",
	"EndEarly.Recovery": "end_early.recovery",
}

// flagText is err's message with the fields of a run's configuration
// named as the command line names them (fieldFlags).
func flagText(err error) string {
	return lockrun.Text(err, func(field string) string { return fieldFlags[field] })
}
