package history

// FaultKind says what one kind of fault is called and how a report draws
// it. A kind is what a nemesis event names in Value.Fault ("partition",
// "clock", "kill", …). A run writes the kinds of faults it knows into its
// record, so that its report knows them without knowing the nemeses.
type FaultKind struct {
	// Name is the kind, as events name it.
	Name string `json:"name"`
	// Label is what a sentence about the fault's size calls it ("node
	// pause" for "pause"); empty, its name.
	Label string `json:"label,omitempty"`
	// Colour is its shade on the plots, "#rrggbb"; empty, the report's
	// colour for faults it has no colour for.
	Colour string `json:"colour,omitempty"`
	// Instant is true for a fault that happens at an instant (a crash, a
	// killed connection): it is drawn as a band until the event that ends
	// it or the final heal, but that band is no length of its own.
	Instant bool `json:"instant,omitempty"`
	// StartedBy, EndedBy and Marks say what the nemesis's events meant in
	// a history recorded before events said it themselves (Value.Fault,
	// Ends, Mark): the fs that put a fault of this kind in force, the fs
	// that end one, and the fs of its nemesis that only mark a moment.
	StartedBy []string `json:"started_by,omitempty"`
	EndedBy   []string `json:"ended_by,omitempty"`
	Marks     []string `json:"marks,omitempty"`
}

// ServerExitKind is how a report draws a server's unplanned exit
// (FServerExit): an instant, shown until the heal that restarts it.
var ServerExitKind = FaultKind{Name: FaultExit, Label: "unplanned server exit", Colour: "#d62728", Instant: true, StartedBy: []string{FServerExit}}

// ServerExit is the event that records node's unplanned exit, how it
// ended (see FServerExit); the recorder stamps its time.
func ServerExit(node, how string) Op {
	return Op{Process: Nemesis, Type: OK, F: FServerExit, Value: &Value{Targets: []string{node}, Fault: FaultExit,
		Detail: node + " exited unexpectedly (" + how + "), not by the harness"}}
}
