// Package helpers starts the test environment the provider's integration tests share: a real
// etcd and kube-apiserver (built by `make envtest-bins`, found through KUBEBUILDER_ASSETS) with
// Cluster API's CRDs, read from the sigs.k8s.io/cluster-api module, and the provider's own.
package helpers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// TestEnvironment is a running etcd + kube-apiserver with every CRD the provider works with.
type TestEnvironment struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *kruntime.Scheme
	// ServerVersion is what the kube-apiserver reports, e.g. "v1.36.3".
	ServerVersion string
	// EtcdVersion is the first line of `etcd --version`.
	EtcdVersion string
}

// NewScheme returns a scheme with client-go's, Cluster API's and the provider's kinds.
func NewScheme() *kruntime.Scheme {
	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterv1.AddToScheme,
		bootstrapv1.AddToScheme, controlplanev1.AddToScheme, infrav1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // only a programming error can get here
		}
	}
	return s
}

// Options change what StartWithOptions installs.
type Options struct {
	// WebhookConfigPaths are files or folders (for example config/webhook, relative to the
	// repository root) with Mutating/ValidatingWebhookConfigurations. envtest installs them
	// pointed at a local webhook server with a generated certificate; serve them from a manager
	// built with WebhookServerOptions.
	WebhookConfigPaths []string
}

// Start starts etcd and kube-apiserver and installs the CRDs. Stop it with (*TestEnvironment).Stop.
func Start(ctx context.Context) (*TestEnvironment, error) {
	return StartWithOptions(ctx, Options{})
}

// WebhookServerOptions are the webhook server options for a manager that serves the webhooks
// installed through Options.WebhookConfigPaths: envtest's host, port and certificate folder.
func (te *TestEnvironment) WebhookServerOptions() webhook.Options {
	o := te.WebhookInstallOptions
	return webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir}
}

// StartWithOptions is Start with Options.
func StartWithOptions(ctx context.Context, opts Options) (*TestEnvironment, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests through `make test`, " +
			"which builds kube-apiserver and etcd and points KUBEBUILDER_ASSETS at them")
	}
	crdPaths, err := CRDDirectories()
	if err != nil {
		return nil, err
	}
	s := NewScheme()
	env := &envtest.Environment{
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// envtest's 20s default is too short for a kube-apiserver built with -race neighbours
		// on two busy cores (CI runs every test package at once).
		ControlPlaneStartTimeout: time.Minute,
	}
	for _, p := range opts.WebhookConfigPaths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(RepoRoot(), p)
		}
		env.WebhookInstallOptions.Paths = append(env.WebhookInstallOptions.Paths, p)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest with the binaries in %s: %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	te := &TestEnvironment{Environment: env, Config: cfg, Scheme: s}
	if te.Client, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	te.ServerVersion = info.GitVersion
	out, err := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd"), "--version").Output()
	if err == nil {
		te.EtcdVersion = strings.SplitN(string(out), "\n", 2)[0]
	}
	return te, nil
}

// CRDDirectories lists the CRD folders installed in the test environment: Cluster API core,
// kubeadm bootstrap and kubeadm control plane from the sigs.k8s.io/cluster-api module, and the
// provider's config/crd/bases.
func CRDDirectories() ([]string, error) {
	capiDir, err := ModuleDir("sigs.k8s.io/cluster-api")
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(capiDir, "core", "config", "crd", "bases"),
		filepath.Join(capiDir, "bootstrap", "kubeadm", "config", "crd", "bases"),
		filepath.Join(capiDir, "controlplane", "kubeadm", "config", "crd", "bases"),
		filepath.Join(RepoRoot(), "config", "crd", "bases"),
	}, nil
}

// ModuleDir returns where the Go module cache holds the version of module that go.mod requires.
func ModuleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s with `go list -m`: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded: run `go mod download`", module)
	}
	return dir, nil
}

// RepoRoot is the root of this repository, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
