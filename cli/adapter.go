package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockharness/lockharness/locks/adapter"
)

// newAdapterCmd is `harness adapter`: tools for lock-client adapters
// (docs/protocol.md).
func newAdapterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adapter",
		Short: "tools for lock-client adapters in any language (docs/protocol.md)",
	}
	cmd.AddCommand(newAdapterCheckCmd())
	return cmd
}

func newAdapterCheckCmd() *cobra.Command {
	var logs string
	cmd := &cobra.Command{
		Use:   "check 'CMD ARGS' | SHIPPED-NAME",
		Short: "run an adapter through the protocol against real servers, without faults, and say what is wrong",
		Long: `check starts the system the adapter names in its hello (a redis-server, an etcd
member, or a ZooKeeper ensemble of three) and two clients of the adapter (the command
line, split as a shell splits words but run without a shell, or the name of a shipped
adapter such as redis-py or kazoo), and checks that it speaks the lock-client protocol:
hello and init answered, a free key granted with a lease that has validity and stored
in the servers init named, a held key refused with fail, release, "not held" for a
lease that is gone, renew, expiry (for ZooKeeper's session leases: held past the
validity while the holder lives, handed on when a killed holder's session expires), a
blocking acquire, close. Bad JSON, missing or duplicate ids, an answer to nothing and
no answer are named with the line the adapter sent. The adapters' logs are kept.

Exit codes: 0 every check passed, 1 some failed, 2 nothing could be tested (the
adapter did not start or answer init, or its servers could not start).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := logs
			if dir == "" {
				d, err := os.MkdirTemp("", "harness-adapter-check-")
				if err != nil {
					return &codeError{exitError, err}
				}
				dir = d
			} else if err := os.MkdirAll(dir, 0o755); err != nil {
				return &codeError{exitError, err}
			}
			rep := adapter.CheckCommand(cmd.Context(), args[0], dir)
			rep.Write(cmd.OutOrStdout())
			if _, err := os.Stat(filepath.Join(dir, "adapters")); err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "adapter logs: %s\n", filepath.Join(dir, "adapters"))
			} else if logs == "" {
				_ = os.Remove(dir) // nothing started: no logs to keep
			}
			switch {
			case rep.Fatal != nil:
				return &codeError{exitError, nil}
			case !rep.OK():
				return &codeError{exitInvalid, nil}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&logs, "logs", "", "directory to keep the adapters' logs in (default: a new temporary directory)")
	return cmd
}
