package e2e

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/tlsproxy"
)

// migration is set when the suite runs for `make test-e2e-migration`: its sandbox starts with the
// previous provider's v0.9.0 manager and components instead of this provider's, and the migration
// spec hands that provider's clusters over. Nil in every other run.
var migration *migrationRun

// migrationRun is what the handover needs besides the sandbox.
type migrationRun struct {
	// repository is a clusterctl repository holding both releases (make migration-repo).
	repository, previousVersion, releaseTag string
	// proxy carries v0.9.0's HTTPS to its hard-coded Packet hosts to the simulator.
	proxy *tlsproxy.Proxy
}

// componentsOf is the infrastructure-components.yaml of one release in the repository.
func (m *migrationRun) componentsOf(version string) string {
	return filepath.Join(m.repository, "infrastructure-packet", version, "infrastructure-components.yaml")
}

// startMigrationRun returns the sandbox tweak that starts v0.9.0 in place of this provider, or
// nil when PREVIOUS_CAPP_MANAGER is not set. v0.9.0 has no API URL setting: it reaches the
// simulator (at portBase's Packetsim port) through a TLS-terminating proxy named in HTTPS_PROXY,
// trusting its CA through SSL_CERT_FILE, and it knows none of this provider's flags.
func startMigrationRun(portBase int) (func(*sandbox.Config), error) {
	manager := os.Getenv("PREVIOUS_CAPP_MANAGER")
	if manager == "" {
		return nil, nil
	}
	m := &migrationRun{repository: os.Getenv("MIGRATION_REPOSITORY"),
		previousVersion: sandbox.EnvOr("PREVIOUS_CAPP_VERSION", "v0.9.0"), releaseTag: os.Getenv("RELEASE_TAG")}
	if m.repository == "" || m.releaseTag == "" {
		return nil, fmt.Errorf("PREVIOUS_CAPP_MANAGER needs MIGRATION_REPOSITORY and RELEASE_TAG (make test-e2e-migration sets them)")
	}
	ports := (&sandbox.Config{PortBase: portBase}).Ports()
	proxy, err := tlsproxy.Start(tlsproxy.Config{Upstream: fmt.Sprintf("http://127.0.0.1:%d", ports.Packetsim)})
	if err != nil {
		return nil, err
	}
	m.proxy = proxy
	caFile := filepath.Join(artifacts, "previous-provider-ca.pem")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return nil, err
	}
	if err := proxy.WriteCAFile(caFile); err != nil {
		return nil, err
	}
	migration = m
	return func(cfg *sandbox.Config) {
		cfg.Manager = manager
		cfg.ExtraManagerArgs = []string{"--sync-period=1m"}
		cfg.ExtraManagerEnv = proxy.Env(caFile)
		cfg.ProviderComponents = m.componentsOf(m.previousVersion)
	}, nil
}
