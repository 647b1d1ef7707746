// Package capi runs Cluster API's own e2e specs (sigs.k8s.io/cluster-api/test/e2e, imported, not
// copied) against this provider on the sandbox: the real Cluster API controllers, this provider,
// the Packet API simulator and the workload-cluster emulation. See docs/e2e.md.
package capi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api-provider-packet/test/e2e"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// portBase and publicIPv4 keep this suite's sandbox apart from the other e2e suite's two (17400
// and 18400, 127.65.0.0/16 and 127.67.0.0/16), which CI runs at the same time, and from a
// `make sandbox` (16400, 127.64.0.0/16).
const (
	portBase   = 17600
	publicIPv4 = "127.66.0.0/16"
)

var (
	ctx = context.Background()

	sb                    *sandbox.Sandbox
	sim                   *e2e.SimClient
	e2eConfig             *clusterctl.E2EConfig
	clusterctlConfigPath  string
	bootstrapClusterProxy framework.ClusterProxy
	artifactFolder        string
)

func TestCAPIE2E(t *testing.T) {
	if os.Getenv("PACKET_E2E") == "" {
		t.Skip("Cluster API's e2e specs run through `make test-e2e`, which builds the sandbox's binaries and sets PACKET_E2E")
	}
	RegisterFailHandler(Fail)
	e2e.ReportFailuresLast(t)
	RunSpecs(t, "Cluster API's e2e specs on the sandbox")
}

var _ = BeforeSuite(func() {
	root := repoRoot()
	artifactFolder = filepath.Join(envOr("E2E_ARTIFACTS", filepath.Join(root, "_artifacts")), "capi")
	Expect(os.MkdirAll(artifactFolder, 0o755)).To(Succeed())
	// The specs run clusterctl in this process: no version check against GitHub.
	Expect(os.Setenv("CLUSTERCTL_DISABLE_VERSIONCHECK", "true")).To(Succeed())

	var err error
	e2eConfig, err = loadE2EConfig(filepath.Join(root, "test", "e2e", "config", "packet.yaml"))
	Expect(err).NotTo(HaveOccurred())

	start := time.Now()
	sb, err = e2e.StartSandbox(ctx, root, filepath.Join(artifactFolder, "sandbox"), portBase, publicIPv4,
		func(format string, args ...any) { fmt.Fprintf(GinkgoWriter, format+"\n", args...) },
		func(cfg *sandbox.Config) {
			cfg.ProviderComponents, err = withTestFlavours(cfg.ProviderComponents, filepath.Join(root, "templates", "test"),
				filepath.Join(artifactFolder, "repository"))
			Expect(err).NotTo(HaveOccurred())
			// The KCP remediation spec's control planes hold their bootstrap in this script.
			cfg.SimBootScripts = []string{"/wait-signal.sh"}
			// The rollout spec's Machines carry taints, an alpha field of Cluster API's.
			cfg.CAPIFeatureGates = []string{"MachineTaintPropagation=true"}
		})
	Expect(err).NotTo(HaveOccurred(), "component logs are in %s", filepath.Join(artifactFolder, "sandbox"))
	fmt.Fprintf(GinkgoWriter, "Sandbox ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	sim = e2e.SimClientFor(sb)
	clusterctlConfigPath = sb.ClusterctlConfig

	bootstrapClusterProxy = framework.NewClusterProxy("sandbox", sb.Kubeconfig, proxyScheme(),
		framework.WithMachineLogCollector(deviceLogCollector{sim: sim}))
})

var _ = AfterSuite(func() {
	if bootstrapClusterProxy != nil {
		bootstrapClusterProxy.Dispose(ctx)
	}
	if sb != nil {
		specErr := e2e.ExpectSpecConformance(ctx, sim, GinkgoWriter)
		sb.Stop()
		Expect(specErr).NotTo(HaveOccurred(), "every Packet API answer of the suite meets the published spec")
	}
})

// loadE2EConfig reads the suite's E2E config on top of the sandbox's clusterctl variables.
// Cluster API's LoadE2EConfig is not used: it validates the providers and images a kind-based
// suite installs, and the sandbox has already installed everything.
func loadE2EConfig(path string) (*clusterctl.E2EConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg := &clusterctl.E2EConfig{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	vars := sandbox.Variables()
	for k, v := range cfg.Variables {
		vars[k] = v
	}
	cfg.Variables = vars
	cfg.ManagementClusterName = "sandbox"
	return cfg, nil
}

// withTestFlavours copies the provider's clusterctl repository version (the folder of
// components) into repo, adds the test-only cluster templates of testTemplates (the flavours
// Cluster API's specs ask for by name, e.g. md-remediation), and returns the copy's components.
func withTestFlavours(components, testTemplates, repo string) (string, error) {
	version := filepath.Base(filepath.Dir(components))
	dst := filepath.Join(repo, "infrastructure-packet", version)
	if err := os.RemoveAll(repo); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	released, err := filepath.Glob(filepath.Join(filepath.Dir(components), "*.yaml"))
	if err != nil {
		return "", err
	}
	tests, err := filepath.Glob(filepath.Join(testTemplates, "cluster-template-*.yaml"))
	if err != nil {
		return "", err
	}
	for _, f := range append(released, tests...) {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dst, filepath.Base(components)), nil
}

// expectNoLeaks checks, after a spec deleted its clusters, that the simulated project holds no
// device, IP, BGP session, SSH key, VLAN or load balancer of any cluster.
func expectNoLeaks() {
	Expect(sim.CheckLeaks(ctx, "")).To(Succeed())
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
