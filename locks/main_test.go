package locks_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain makes -short skip this package's runnable examples too: they
// start real redis-server processes, and an Example cannot skip itself.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		if err := flag.Set("test.skip", "^Example_customLock$"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
