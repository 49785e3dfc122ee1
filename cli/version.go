package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version overrides the module version of the build info when set at
// build time (a packager's tarball, built outside a checkout), with
// -ldflags "-X github.com/lockharness/lockharness/cli.version=v1.2.3".
var version = ""

// buildVersion is what a binary knows about where it came from: the module
// version `go install …@v1.2.3` stamps ("(devel)" for a build from a
// checkout), and the VCS revision and dirty flag a build inside a git
// checkout stamps. A bug report quotes this line, so it must say which
// commit the harness was built from, and whether edits sat on top of it.
type buildVersion struct {
	Module, Version, Revision, Time, GoVersion string
	Modified                                   bool
}

// readBuildVersion reads the build info of this binary (a test binary has
// one too, with no VCS settings).
func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/lockharness/lockharness", Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		v.GoVersion = bi.GoVersion
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = version
	}
	return v
}

// String is the version line: "harness v1.2.3 (github.com/…, go1.26.8)",
// or from a checkout "harness (devel) (github.com/…, revision 64e5569…
// of 2026-11-27T12:00:00Z, dirty, go1.26.8)".
func (v buildVersion) String() string {
	parts := []string{v.Module}
	if v.Revision != "" {
		rev := "revision " + v.Revision
		if v.Time != "" {
			rev += " of " + v.Time
		}
		parts = append(parts, rev)
		if v.Modified {
			parts = append(parts, "dirty")
		}
	}
	if v.GoVersion != "" {
		parts = append(parts, v.GoVersion)
	}
	return fmt.Sprintf("harness %s (%s)", v.Version, strings.Join(parts, ", "))
}

// versionLine is the line `harness version` and `harness --version` print.
func versionLine() string { return readBuildVersion().String() }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the module version and the VCS revision this harness was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return nil
		},
	}
}
