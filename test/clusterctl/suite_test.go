// Package clusterctl_test checks the provider's clusterctl artifacts with the real clusterctl
// v1.14.2 (built by the Makefile from the sigs.k8s.io/cluster-api module): `make clusterctl-repo`
// writes a local repository, clusterctl reads it offline, and everything it renders is
// server-side applied (dry run) to a kube-apiserver with Cluster API's CRDs, the provider's CRDs
// and the provider's webhooks.
package clusterctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/webhooks"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

// version is the provider version the test repository is written for (release series 0.1 of
// metadata.yaml).
const version = "v0.1.99"

var (
	ctx        context.Context
	cancel     context.CancelFunc
	testEnv    *helpers.TestEnvironment
	k8s        client.Client
	warnings   = &warningRecorder{}
	workDir    string
	clusterctl string
	configPath string
	kubeconfig string
)

func TestClusterctl(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "clusterctl artifacts with clusterctl v1.14.2 on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	workDir, err = os.MkdirTemp("", "capp-clusterctl-")
	Expect(err).NotTo(HaveOccurred())

	// The Makefile builds clusterctl (once) and writes the release and the repository.
	root := helpers.RepoRoot()
	out, err := runCmd(root, nil, "make", "-s", "--no-print-directory", "clusterctl", "clusterctl-repo",
		"RELEASE_TAG="+version,
		"RELEASE_DIR="+filepath.Join(workDir, "release"),
		"CLUSTERCTL_REPO_DIR="+filepath.Join(workDir, "repo"))
	Expect(err).NotTo(HaveOccurred(), out)
	clusterctl = filepath.Join(root, "bin", "tools", "clusterctl-v1.14.2")
	configPath = filepath.Join(workDir, "repo", "clusterctl.yaml")

	testEnv, err = helpers.StartWithOptions(ctx, helpers.Options{WebhookConfigPaths: []string{"config/webhook"}})
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("kube-apiserver", testEnv.ServerVersion)
	_, err = testEnv.StartWebhookServer(ctx, webhooks.SetupWithManager)
	Expect(err).NotTo(HaveOccurred())

	cfg := rest.CopyConfig(testEnv.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: testEnv.Scheme})
	Expect(err).NotTo(HaveOccurred())
	k8s = client.WithFieldValidation(c, metav1.FieldValidationStrict)

	// cert-manager's Issuer and Certificate CRDs, from the cert-manager module (the version
	// clusterctl v1.14.2 installs), so that the components' Issuer and Certificate are checked
	// against cert-manager's real schema.
	for _, crd := range certManagerCRDs() {
		Expect(testEnv.Client.Create(ctx, crd)).To(Succeed())
	}
	Eventually(func(g Gomega) {
		for _, name := range []string{"issuers.cert-manager.io", "certificates.cert-manager.io"} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			g.Expect(established).To(BeTrue(), name)
		}
	}).Should(Succeed())

	// clusterctl needs the management cluster for `generate cluster` with a ClusterClass.
	user, err := testEnv.AddUser(envtest.User{Name: "clusterctl", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if workDir != "" {
		_ = os.RemoveAll(workDir)
	}
})

// certManagerVersion is the cert-manager clusterctl v1.14.2 installs by default.
const certManagerVersion = "v1.21.1"

// certManagerCRDs reads the Issuer and Certificate CRDs from the cert-manager module, downloaded
// through the Go module proxy into the module cache.
func certManagerCRDs() []*unstructured.Unstructured {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/cert-manager/cert-manager@"+certManagerVersion)
	cmd.Dir = os.TempDir() // outside this module: do not touch its go.mod
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "downloading cert-manager %s: %s", certManagerVersion, out)
	var mod struct{ Dir string }
	Expect(json.Unmarshal(out, &mod)).To(Succeed())
	var crds []*unstructured.Unstructured
	for _, name := range []string{"cert-manager.io_issuers.yaml", "cert-manager.io_certificates.yaml"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "deploy", "crds", name))
		Expect(err).NotTo(HaveOccurred())
		crds = append(crds, decode(data)...)
	}
	return crds
}

// runClusterctl runs clusterctl offline: a private HOME and XDG config folder, no version check,
// and only the variables given (never the caller's environment).
func runClusterctl(vars map[string]string, args ...string) (string, error) {
	home := filepath.Join(workDir, "home")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return runCmd(workDir, env, clusterctl, append(args, "--config", configPath)...)
}

func runCmd(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(context.Background(), name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// decode splits a multi-document YAML stream into objects.
func decode(data []byte) []*unstructured.Unstructured {
	GinkgoHelper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := d.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// dryRunApply creates the Namespaces for real and server-side applies every other object with
// dryRun=All and strict field validation, returning one error per rejected object.
func dryRunApply(objs []*unstructured.Unstructured) []error {
	var errs []error
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			if err := k8s.Create(ctx, u.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("Namespace %s: %w", u.GetName(), err))
			}
			continue
		}
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.DryRunAll,
			client.ForceOwnership, client.FieldOwner("clusterctl-test")); err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err))
		}
	}
	return errs
}

func ensureNamespace(name string) {
	GinkgoHelper()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// warningRecorder keeps the warnings the API server returns.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}
