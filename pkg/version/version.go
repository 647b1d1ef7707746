// Package version holds the provider's build version, set at link time by the Makefile
// (-ldflags "-X sigs.k8s.io/cluster-api-provider-packet/pkg/version.version=...").
package version

import "runtime/debug"

// version is overwritten by the linker for release builds.
var version = ""

// Get returns the provider's version: the linker-set one, else the module version Go recorded,
// else "dev".
func Get() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
