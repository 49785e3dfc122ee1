package lockharness_test

import (
	"testing"

	"github.com/lockharness/lockharness/sut/redis/redistest"
)

// TestMain makes -short skip the runnable examples, which start real Redis.
func TestMain(m *testing.M) { redistest.Main(m, "^ExampleRun$") }
