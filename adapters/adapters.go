// Package adapters holds the lock-client adapters shipped with the harness,
// one folder each: its program and a manifest.json saying what it is
// (name, language, library, system), which interpreters may run it, and
// how to install its library. They are embedded so that a run writes the
// exact adapter it used into its directory (package locks/adapter). A new
// adapter is a folder here and its name on the embed line below.
package adapters

import "embed"

// FS holds every shipped adapter, one top-level folder each.
//
//go:embed curator etcd3 kazoo minimal redispy
var FS embed.FS
