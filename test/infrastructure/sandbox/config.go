// Package sandbox runs a complete, local Cluster API management plane for this provider with no
// Packet account, no Docker and no kind: etcd and kube-apiserver, the Packet API simulator, the
// Cluster API core, kubeadm bootstrap and kubeadm control-plane managers and this provider's
// manager, each a child process on loopback with its own log file. Components are installed with
// the real `clusterctl init --infrastructure packet` from local file repositories; the installed
// Deployments stay unscheduled (there are no nodes) while the same managers run as local
// processes, and the installed webhook configurations and CRD conversion webhooks are pointed at
// those processes with a CA the sandbox generates.
//
// cmd/sandbox (`make sandbox`) wraps it for people, test/e2e for the end-to-end suite.
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Config says where the binaries and repositories are and where the sandbox keeps its state.
type Config struct {
	// StateDir holds everything the sandbox writes: pki, etcd data, the simulator state, the
	// kubeconfig, the clusterctl configuration, pid files and logs. Reused across restarts.
	StateDir string
	// RepoRoot is the root of this repository (templates are read from it).
	RepoRoot string

	// Binaries.
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	Packetsim             string
	Manager               string // this provider's manager
	CoreManager           string // sigs.k8s.io/cluster-api/core
	BootstrapManager      string // sigs.k8s.io/cluster-api/bootstrap/kubeadm
	ControlPlaneMgr       string // sigs.k8s.io/cluster-api/controlplane/kubeadm
	Clusterctl            string

	// CAPIRepository is the folder of the local clusterctl repository with Cluster API's
	// components (cluster-api/, bootstrap-kubeadm/, control-plane-kubeadm/).
	CAPIRepository string
	// CAPIVersion is Cluster API's version in that repository, e.g. v1.14.2.
	CAPIVersion string
	// ProviderComponents is this provider's infrastructure-components.yaml inside a clusterctl
	// repository laid out as {base}/infrastructure-packet/{version}/ (`make clusterctl-repo`).
	ProviderComponents string
	// CertManagerCRDs is the folder with cert-manager's CRDs (deploy/crds of its module).
	CertManagerCRDs string

	// PortBase offsets every port the sandbox binds (see Ports). Default 16400.
	PortBase int
	// SimTiming is the simulator's timing profile (default "sandbox": devices active in ~20s).
	SimTiming string
	// SimPublicIPv4 is the loopback prefix the simulator's elastic IPs come from (default
	// 127.64.0.0/16). Workload clusters answer on those addresses, so two sandboxes running at
	// once need different ones.
	SimPublicIPv4 string
	// ExternalSimulator, when set, is the base URL (http://127.0.0.1:<port>) of another sandbox's
	// simulator, which this sandbox's manager uses instead of starting one: two management
	// planes in front of one Packet project, as `clusterctl move` needs.
	ExternalSimulator string
	// SimBootScripts are the scripts of a device's user-data that the boot emulation runs
	// (packetsim --boot-run-scripts); none by default.
	SimBootScripts []string
	// SimFaults is an optional fault profile file for the simulator.
	SimFaults string
	// CAPIFeatureGates are Cluster API feature gates turned on in its core and KCP managers
	// besides those the sandbox always turns on, e.g. "MachineTaintPropagation=true".
	CAPIFeatureGates []string
	// ExtraManagerArgs are appended to this provider's manager command line.
	ExtraManagerArgs []string
	// ExtraManagerEnv is added to this provider's manager environment, e.g. the proxy the
	// previous provider's manager reaches the simulator through.
	ExtraManagerEnv []string
	// ExternalManager leaves this provider's manager to someone else (the Tilt loop rebuilds and
	// restarts it): the sandbox plans it, issues its certificate and points the webhooks at it as
	// usual, but only writes its command line to <StateDir>/bin/capp-controller-manager.
	ExternalManager bool
	// Log receives progress lines; nil means os.Stderr.
	Log func(format string, args ...any)
}

// Ports are the loopback ports the sandbox uses, derived from Config.PortBase.
type Ports struct {
	APIServer, Etcd, EtcdPeer, Packetsim, ControllerManager int
}

// DefaultPortBase is the PortBase of `make sandbox`.
const DefaultPortBase = 16400

// Ports are the ports a sandbox started with c listens on.
func (c *Config) Ports() Ports { return c.ports() }

func (c *Config) ports() Ports {
	b := c.PortBase
	return Ports{APIServer: b + 43, Etcd: b + 79, EtcdPeer: b + 80, Packetsim: b + 40, ControllerManager: b + 57}
}

// DefaultConfig is the layout the Makefile builds: binaries under <root>/bin, state in
// <root>/.sandbox. Every path can be overridden afterwards.
func DefaultConfig(root string) Config {
	bin := filepath.Join(root, "bin")
	k8s := filepath.Join(bin, "k8s", EnvOr("K8S_VERSION", "1.36.3"))
	capiVersion := EnvOr("CAPI_VERSION", "v1.14.2")
	capi := filepath.Join(bin, "capi", capiVersion)
	return Config{
		StateDir:              filepath.Join(root, ".sandbox"),
		RepoRoot:              root,
		Etcd:                  filepath.Join(k8s, "etcd"),
		KubeAPIServer:         filepath.Join(k8s, "kube-apiserver"),
		KubeControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		Packetsim:             filepath.Join(bin, "packetsim"),
		Manager:               filepath.Join(bin, "manager"),
		CoreManager:           filepath.Join(capi, "core-manager"),
		BootstrapManager:      filepath.Join(capi, "kubeadm-bootstrap-manager"),
		ControlPlaneMgr:       filepath.Join(capi, "kubeadm-control-plane-manager"),
		Clusterctl:            filepath.Join(bin, "tools", "clusterctl-"+capiVersion),
		CAPIRepository:        filepath.Join(capi, "repository"),
		CAPIVersion:           capiVersion,
		CertManagerCRDs:       firstMatch(filepath.Join(capi, "cert-manager-*-crds")),
		// `make clusterctl-repo` writes one version folder.
		ProviderComponents: firstMatch(filepath.Join(root, "out", "clusterctl-repo", "infrastructure-packet", "*", "infrastructure-components.yaml")),
		PortBase:           DefaultPortBase,
		SimTiming:          "sandbox",
	}
}

// firstMatch returns the last (highest sorting) match of a glob, or the pattern itself when
// nothing matches, so the error about the missing file names it.
func firstMatch(pattern string) string {
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		return pattern
	}
	return m[len(m)-1]
}

// EnvOr is the value of environment variable key, or fallback when it is unset or empty.
func EnvOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// check returns one clear error for the first missing binary or file, naming the make target
// that builds it.
func (c *Config) check() error {
	for _, f := range []struct{ path, what, target string }{
		{c.Etcd, "etcd", "make envtest-bins"},
		{c.KubeAPIServer, "kube-apiserver", "make envtest-bins"},
		{c.KubeControllerManager, "kube-controller-manager", "make kube-controller-manager"},
		{c.Packetsim, "the Packet API simulator", "make sandbox-bins"},
		{c.Manager, "the provider's manager", "make build"},
		{c.CoreManager, "the Cluster API core manager", "make capi-managers"},
		{c.BootstrapManager, "the kubeadm bootstrap manager", "make capi-managers"},
		{c.ControlPlaneMgr, "the kubeadm control-plane manager", "make capi-managers"},
		{c.Clusterctl, "clusterctl", "make clusterctl"},
		{c.CertManagerCRDs, "cert-manager's CRDs", "make capi-repository"},
		{filepath.Join(c.CAPIRepository, "cluster-api", c.CAPIVersion, "core-components.yaml"),
			"Cluster API's clusterctl repository", "make capi-repository"},
		{c.ProviderComponents, "the provider's clusterctl repository", "make clusterctl-repo"},
	} {
		if f.path == "" {
			return fmt.Errorf("no path configured for %s (built by `%s`)", f.what, f.target)
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("%s is missing at %s: run `%s` (or `make sandbox`, which builds everything)", f.what, f.path, f.target)
		}
	}
	if c.ProviderComponents != "" && !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(c.ProviderComponents))), "infrastructure-packet") {
		return fmt.Errorf("%s is not in a clusterctl repository ({base}/infrastructure-packet/{version}/infrastructure-components.yaml)", c.ProviderComponents)
	}
	return nil
}

// ProviderVersion is the provider version of the clusterctl repository (the folder name).
func (c *Config) ProviderVersion() string {
	return filepath.Base(filepath.Dir(c.ProviderComponents))
}
