package nemesis

import "github.com/lockharness/lockharness/history"

// FaultKinds says, for every kind of fault the nemeses put in force (the
// history.Value.Fault of their events), what it is called and how a report
// draws it, and which nemesis functions meant it in histories recorded
// before events said so themselves. A run writes them into its record, so
// that its report knows them without this package.
func FaultKinds() []history.FaultKind {
	return []history.FaultKind{
		{Name: "partition", Colour: "#ffbe00", StartedBy: []string{"start-partition"}, EndedBy: []string{"stop-partition"}},
		{Name: "latency", Colour: "#1f77b4", StartedBy: []string{"start-latency"}, EndedBy: []string{"stop-latency"}},
		{Name: "delay", Colour: "#1f77b4"},
		{Name: "clock", Colour: "#9467bd", StartedBy: []string{"bump-clock", "drift-clock", "strobe-clock"}, EndedBy: []string{"reset-clock"}},
		{Name: "pause", Label: "node pause", Colour: "#6e6e6e", StartedBy: []string{"pause-node", "pause"}, EndedBy: []string{"resume-node", "resume"}},
		{Name: "kill", Label: "node down", Colour: "#8c564b", StartedBy: []string{"kill"}, EndedBy: []string{"restart"}},
		{Name: "replication cut", StartedBy: []string{"cut-replication"}, EndedBy: []string{"promote"}},
		{Name: "promote", Colour: "#17becf", StartedBy: []string{"promote"}, EndedBy: []string{"demote"}, Marks: []string{"await-promotion"}},
		{Name: "failover", Colour: "#17becf"},
		{Name: "master paused", StartedBy: []string{"pause-master"}, EndedBy: []string{"heal-master"}},
		{Name: "master isolated", StartedBy: []string{"isolate-master"}, EndedBy: []string{"heal-master"}},
		{Name: "lost replies"},
		{Name: "memory pressure"},
		{Name: "stale replica"},
		{Name: "pause-client", Label: "client pause"},
		{Name: "renewer stall"},
		{Name: "crash-client", Instant: true},
		{Name: "kill-connection", Instant: true},
	}
}
