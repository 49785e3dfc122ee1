package scenarios

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/sut/mariadb/mariadbtest"
)

// TestMariaDBCatalogue soaks the MariaDB scenarios: with LOCKHARNESS_SOAK=N
// it runs each N times against real MariaDB servers (under stress-ng, the
// CPU-load soak), asserts every checker's verdict and the exposure, and
// that mysql-lock-wait-timeout's waiter was refused by the server's
// innodb_lock_wait_timeout (error 1205 after about a second, before its
// own 5s). With LOCKHARNESS_STORE=dir it keeps the runs there. Without a
// count it skips: TestCatalogue runs them once.
func TestMariaDBCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("the MariaDB scenarios run real MariaDB servers")
	}
	mariadbtest.Require(t)
	soakPart(t, part("mariadb"), map[string]func(*testing.T, string){"mysql-lock-wait-timeout": refusedByLockWaitTimeout})
}

// refusedByLockWaitTimeout checks the scenario's point: some acquire was
// refused with error 1205 after about innodb_lock_wait_timeout (1s), well
// before the 5s the client would have waited.
func refusedByLockWaitTimeout(t *testing.T, dir string) {
	t.Helper()
	res, err := history.ReadFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	invoked := map[history.Process]int64{}
	refused := 0
	for _, op := range res.Ops {
		if op.F != history.FAcquire {
			continue
		}
		if op.Type == history.Invoke {
			invoked[op.Process] = op.Time
			continue
		}
		waited := time.Duration(op.Time - invoked[op.Process])
		if op.Type == history.Fail && strings.Contains(op.Error, "1205") && waited >= 900*time.Millisecond && waited < 4*time.Second {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("no acquire was refused by innodb_lock_wait_timeout (error 1205 after about 1s; history in %s)", dir)
	}
	t.Logf("%d acquires refused by innodb_lock_wait_timeout", refused)
}
