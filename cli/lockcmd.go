package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockharness/lockharness/locks"
	lockrun "github.com/lockharness/lockharness/run"
)

// errNoAdapters is --lock-cmd's error in a build whose main gave no
// Options.LockCommand.
var errNoAdapters = errors.New("--lock-cmd: this build of harness has no adapter support; use a lock of `harness locks`, or a build of harness with adapters")

// addLockCmdFlag defines --lock-cmd on a command that runs locks.
func addLockCmdFlag(f *pflag.FlagSet, cmdline *string) {
	f.StringVar(cmdline, "lock-cmd", "", "'CMD ARGS': run the lock of this adapter process (the lock-client protocol), named after what it says it is; --lock defaults to it")
}

// invocationLocks is the registry of one command: the main's locks and,
// with --lock-cmd, the lock of that adapter command, added under the name
// its info gives; name is that name ("" without --lock-cmd). The main's
// registry is copied, never changed: a main that calls Main twice sees
// its own registry each time.
func (a *app) invocationLocks(cmdline string) (reg *locks.Registry, name string, err error) {
	base := a.opts.registry()
	if strings.TrimSpace(cmdline) == "" {
		if cmdline != "" {
			return nil, "", errors.New("--lock-cmd is empty: give the adapter's command line, e.g. --lock-cmd 'python3 my_adapter.py'")
		}
		return base, "", nil
	}
	if a.opts.LockCommand == nil {
		return nil, "", errNoAdapters
	}
	info, err := a.opts.LockCommand(cmdline)
	if err != nil {
		return nil, "", fmt.Errorf("--lock-cmd %s: %w", lockrun.CommandLine(cmdline), err)
	}
	reg = locks.NewRegistry()
	for _, l := range base.All() {
		if err := reg.Register(l); err != nil {
			return nil, "", fmt.Errorf("copy the registry: %w", err)
		}
	}
	if err := reg.Register(info); err != nil {
		return nil, "", fmt.Errorf("--lock-cmd %s: %w (an adapter names its lock; give it a name no other lock has)", lockrun.CommandLine(cmdline), err)
	}
	return reg, info.Name, nil
}
