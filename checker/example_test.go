package checker_test

import (
	"context"
	"fmt"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Two clients are told they hold lock-0 at once: the lock broke its promise.
func ExampleCheck() {
	sec := int64(1e9)
	ops := []history.Op{
		{Index: 0, Time: 3 * sec, Process: 2, Type: history.Invoke, F: history.FAcquire, Key: "lock-0"},
		{Index: 1, Time: 3*sec + 100e6, Process: 2, Type: history.OK, F: history.FAcquire, Key: "lock-0",
			Value: &history.Value{Token: "a", Deadline: 3*sec + 970e6}},
		{Index: 2, Time: 3*sec + 400e6, Process: 4, Type: history.Invoke, F: history.FAcquire, Key: "lock-0"},
		{Index: 3, Time: 3*sec + 410e6, Process: 4, Type: history.OK, F: history.FAcquire, Key: "lock-0",
			Value: &history.Value{Token: "b", Deadline: 5 * sec}},
	}
	res, err := checker.Check(context.Background(), history.Events(ops), checker.Config{})
	if err != nil {
		panic(err) // events in memory are never an error
	}
	fmt.Println(res.Verdict, res.NonLinearizableKeys)
	for _, v := range res.Violations {
		fmt.Println(v.Kind, v.Processes)
	}
	// Output:
	// invalid [lock-0]
	// overlap [2 4]
}
