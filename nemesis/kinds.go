package nemesis

import "github.com/lockharness/lockharness/history"

// FaultKinds says, for every kind of fault the built-in nemeses put in
// force (the history.Value.Fault of their events), what it is called and
// how a report draws it, and which nemesis functions meant it in histories
// recorded before events said so themselves: Builtin().FaultKinds(), the
// collection of each fault's Info.Kinds. A run writes them into its
// record, so that its report knows them without this package; a run with
// faults of its own writes its registry's (Registry.FaultKinds).
func FaultKinds() []history.FaultKind { return Builtin().FaultKinds() }

// faultKind is how a fault's file declares how a report draws the kinds
// of fault it puts in force (Info.Kinds).
type faultKind = history.FaultKind
