package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// ProviderLabel is the label clusterctl puts on every object of a provider's components.
const ProviderLabel = "cluster.x-k8s.io/provider"

// certManagerTestNamespace is the namespace clusterctl creates and deletes to check that
// cert-manager's API works.
const certManagerTestNamespace = "cert-manager-test"

// Scheme has client-go's kinds, CRDs, and Cluster API's and the provider's kinds.
func Scheme() *kruntime.Scheme {
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

// install puts the components into the empty (or reused) kube-apiserver the way a user does:
// cert-manager's CRDs, then `clusterctl init --infrastructure packet`, then the webhook wiring.
func (s *Sandbox) install(ctx context.Context) error {
	// A sandbox restarted on its state may find clusterctl's check namespace of the last run
	// still being deleted; creating it again would fail.
	if err := s.WaitNamespaceDeleted(ctx, certManagerTestNamespace, time.Minute); err != nil {
		return err
	}
	s.cfg.Log("Installing cert-manager's CRDs from %s", s.cfg.CertManagerCRDs)
	if err := s.applyDir(ctx, s.cfg.CertManagerCRDs); err != nil {
		return fmt.Errorf("installing cert-manager's CRDs: %w", err)
	}
	if err := s.writeClusterctlConfig(); err != nil {
		return err
	}
	if err := s.clusterctlInit(ctx); err != nil {
		return err
	}
	if err := s.wireWebhooks(ctx); err != nil {
		return err
	}
	return s.publishClusterInfo(ctx)
}

// publishClusterInfo writes kube-public/cluster-info as kubeadm does on the clusters people use as
// management clusters: the API server's address and CA, readable by anyone. Cluster API's KCP
// remediation spec reads the address there and hands it to its workload cluster's machines.
func (s *Sandbox) publishClusterInfo(ctx context.Context) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://127.0.0.1:%d", s.ports.APIServer),
		CertificateAuthorityData: s.pki.caPEM}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cluster-info", "namespace": metav1.NamespacePublic},
		"data":     map[string]any{"kubeconfig": string(data)}}}
	return s.Apply(ctx, cm)
}

// applyDir server-side applies every YAML document in the files of dir and waits for the CRDs
// among them to be established.
func (s *Sandbox) applyDir(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	var crds []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		objs, err := DecodeYAML(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			if err := s.Apply(ctx, o); err != nil {
				return err
			}
			if o.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, o.GetName())
			}
		}
	}
	for _, name := range crds {
		if err := s.waitEstablished(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// DecodeYAML splits a multi-document YAML stream into objects (empty documents are skipped).
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	objs, err := utilyaml.ToUnstructured(data)
	if err != nil {
		// Cluster API's message quotes the whole document, which may be a Secret: keep which
		// document it was, and the parser's reason, without it.
		msg, _, _ := strings.Cut(err.Error(), ": \"")
		return nil, errors.New(msg)
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for i := range objs {
		if len(objs[i].Object) > 0 {
			out = append(out, &objs[i])
		}
	}
	return out, nil
}

// Apply server-side applies one object as field manager "sandbox".
func (s *Sandbox) Apply(ctx context.Context, o *unstructured.Unstructured) error {
	o = o.DeepCopy()
	o.SetResourceVersion("")
	o.SetManagedFields(nil)
	//nolint:staticcheck // client.Apply with an unstructured object is the simplest SSA call here
	if err := s.Client.Patch(ctx, o, client.Apply, client.FieldOwner("sandbox"), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

func (s *Sandbox) waitEstablished(ctx context.Context, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		// A failed read is retried like a CRD that is not established yet.
		return s.Client.Get(ctx, client.ObjectKey{Name: name}, crd) == nil && established(crd), nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("CRD %s is not established after 30s", name)
	}
	return err
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// Variables are the clusterctl variables for clusters on the simulator: the seeded
// project, a metro and plans it has capacity for, and an SSH key.
func Variables() map[string]string {
	return map[string]string{
		"PACKET_API_KEY":         SimToken,
		"PROJECT_ID":             SimProjectID,
		"METRO":                  "sv",
		"CONTROLPLANE_NODE_TYPE": "c3.small.x86",
		"WORKER_NODE_TYPE":       "c3.small.x86",
		"NODE_OS":                "ubuntu_24_04",
		"SSH_KEY":                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRY sandbox@example.com",
		"KUBERNETES_VERSION":     "v1.36.3",
		"CLUSTER_TOPOLOGY":       "true",
		// The crs-cni flavours' ClusterResourceSet data. There is no workload cluster to apply a
		// CNI to, so a placeholder keeps the flavours renderable.
		"CNI_RESOURCES": `{"cni.yaml": "# placeholder: the sandbox has no workload cluster to apply a CNI to"}`,
	}
}

// writeClusterctlConfig points clusterctl at the local repositories: Cluster API's core and
// kubeadm providers (rendered by `make capi-repository`) and this provider's (`make
// clusterctl-repo`), with the simulator's variables.
func (s *Sandbox) writeClusterctlConfig() error {
	repo, v := s.cfg.CAPIRepository, s.cfg.CAPIVersion
	type provider struct {
		Name string `json:"name"`
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	cfg := map[string]any{
		"providers": []provider{
			{"cluster-api", "CoreProvider", "file://" + filepath.Join(repo, "cluster-api", v, "core-components.yaml")},
			{"kubeadm", "BootstrapProvider", "file://" + filepath.Join(repo, "bootstrap-kubeadm", v, "bootstrap-components.yaml")},
			{"kubeadm", "ControlPlaneProvider", "file://" + filepath.Join(repo, "control-plane-kubeadm", v, "control-plane-components.yaml")},
			{"packet", "InfrastructureProvider", "file://" + s.cfg.ProviderComponents},
		},
		"overridesFolder": filepath.Join(s.cfg.StateDir, "clusterctl", "overrides"),
	}
	for k, val := range Variables() {
		cfg[k] = val
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	header := "# Written by the sandbox on every start: clusterctl reads only local file repositories.\n"
	return writeFile(s.ClusterctlConfig, append([]byte(header), data...), 0o644)
}

// Clusterctl runs clusterctl with the sandbox's configuration and environment and returns what
// it wrote to stdout; the error includes what it wrote to stderr.
func (s *Sandbox) Clusterctl(ctx context.Context, args ...string) ([]byte, error) {
	stdout, stderr, err := s.clusterctl(ctx, args...)
	if err != nil {
		return stdout, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(stderr)))
	}
	return stdout, nil
}

func (s *Sandbox) clusterctl(ctx context.Context, args ...string) (stdout, stderr []byte, err error) {
	args = append(args, "--config", s.ClusterctlConfig)
	cmd := exec.CommandContext(ctx, s.cfg.Clusterctl, args...)
	cmd.Env = append(os.Environ(), s.ClusterctlEnv...)
	cmd.Dir = s.cfg.RepoRoot
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), errb.Bytes(), fmt.Errorf("clusterctl %s: %w", strings.Join(args, " "), err)
	}
	return out.Bytes(), errb.Bytes(), nil
}

func (s *Sandbox) clusterctlInit(ctx context.Context) error {
	s.cfg.Log("Running clusterctl init --infrastructure packet (local repositories in %s)", filepath.Dir(s.ClusterctlConfig))
	logFile := filepath.Join(s.cfg.StateDir, "logs", "clusterctl-init.log")
	stdout, stderr, err := s.clusterctl(ctx, "init", "--infrastructure", "packet", "--kubeconfig", s.Kubeconfig, "-v", "2")
	_ = os.WriteFile(logFile, append(stderr, stdout...), 0o644)
	if err != nil {
		msg := fmt.Sprintf("%v; last lines of %s:", err, logFile)
		for _, l := range Tail(logFile, 15) {
			msg += "\n    " + l
		}
		return errors.New(msg)
	}
	return nil
}

// wireWebhooks points every webhook configuration and CRD conversion webhook clusterctl
// installed at the loopback port of the local manager of the same provider, with the sandbox CA.
func (s *Sandbox) wireWebhooks(ctx context.Context) error {
	mutating, err := s.wireMutatingWebhooks(ctx)
	if err != nil {
		return err
	}
	validating, err := s.wireValidatingWebhooks(ctx)
	if err != nil {
		return err
	}
	conversions, err := s.wireConversionWebhooks(ctx)
	if err != nil {
		return err
	}
	s.cfg.Log("Pointed %d webhook configurations and %d CRD conversion webhooks at the local managers",
		mutating+validating, conversions)
	return nil
}

// webhookTarget is the local manager of the provider an object clusterctl installed is
// labelled with; what names the object in the error if the sandbox runs no such provider.
func (s *Sandbox) webhookTarget(labels map[string]string, what string) (*Component, error) {
	for _, c := range s.Components {
		if c.Provider != "" && c.Provider == labels[ProviderLabel] {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s has no %s label of a provider the sandbox runs", what, ProviderLabel)
}

// wireMutatingWebhooks updates the providers' mutating webhook configurations and says how many.
func (s *Sandbox) wireMutatingWebhooks(ctx context.Context) (int, error) {
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := s.Client.List(ctx, list, client.HasLabels{ProviderLabel}); err != nil {
		return 0, err
	}
	for i := range list.Items {
		w := &list.Items[i]
		c, err := s.webhookTarget(w.Labels, "MutatingWebhookConfiguration "+w.Name)
		if err != nil {
			return 0, err
		}
		for j := range w.Webhooks {
			pointAt(&w.Webhooks[j].ClientConfig, c.webhookPort, s.pki.caPEM)
		}
		if err := s.Client.Update(ctx, w); err != nil {
			return 0, err
		}
	}
	return len(list.Items), nil
}

// wireValidatingWebhooks updates the providers' validating webhook configurations and says how many.
func (s *Sandbox) wireValidatingWebhooks(ctx context.Context) (int, error) {
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := s.Client.List(ctx, list, client.HasLabels{ProviderLabel}); err != nil {
		return 0, err
	}
	for i := range list.Items {
		w := &list.Items[i]
		c, err := s.webhookTarget(w.Labels, "ValidatingWebhookConfiguration "+w.Name)
		if err != nil {
			return 0, err
		}
		for j := range w.Webhooks {
			pointAt(&w.Webhooks[j].ClientConfig, c.webhookPort, s.pki.caPEM)
		}
		if err := s.Client.Update(ctx, w); err != nil {
			return 0, err
		}
	}
	return len(list.Items), nil
}

// wireConversionWebhooks updates the providers' CRDs that convert with a webhook and says how many.
func (s *Sandbox) wireConversionWebhooks(ctx context.Context) (int, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := s.Client.List(ctx, crds, client.HasLabels{ProviderLabel}); err != nil {
		return 0, err
	}
	conversions := 0
	for i := range crds.Items {
		crd := &crds.Items[i]
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		c, err := s.webhookTarget(crd.Labels, "CustomResourceDefinition "+crd.Name)
		if err != nil {
			return 0, err
		}
		pointConversionAt(conv.Webhook.ClientConfig, c.webhookPort, s.pki.caPEM)
		if err := s.Client.Update(ctx, crd); err != nil {
			return 0, err
		}
		conversions++
	}
	return conversions, nil
}

// pointConversionAt sends a CRD's conversion requests to the loopback port, keeping their path
// (/convert unless the CRD names another).
func pointConversionAt(cc *apiextensionsv1.WebhookClientConfig, port int, ca []byte) {
	path := "/convert"
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	} else if cc.URL != nil {
		if u, err := url.Parse(*cc.URL); err == nil {
			path = u.Path
		}
	}
	u := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
	cc.Service, cc.URL, cc.CABundle = nil, &u, ca
}

func pointAt(cc *admissionregistrationv1.WebhookClientConfig, port int, ca []byte) {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	} else if cc.URL != nil {
		if u, err := url.Parse(*cc.URL); err == nil {
			path = u.Path
		}
	}
	u := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
	cc.Service, cc.URL, cc.CABundle = nil, &u, ca
}

// WaitNamespaceDeleted waits until the namespace is gone, or is not being deleted: the
// namespace controller of kube-controller-manager empties a deleted namespace and then removes it.
func (s *Sandbox) WaitNamespaceDeleted(ctx context.Context, name string, timeout time.Duration) error {
	var ns *corev1.Namespace
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ns = &corev1.Namespace{}
		lastErr = s.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
		return apierrors.IsNotFound(lastErr) || (lastErr == nil && ns.DeletionTimestamp == nil), nil
	})
	switch {
	case !wait.Interrupted(err) || ctx.Err() != nil:
		return err
	case lastErr == nil:
		return fmt.Errorf("namespace %s is still being deleted after %s: %s", name, timeout, namespaceConditions(ns))
	default:
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, lastErr)
	}
}

// namespaceConditions says what the namespace controller reports it is waiting for.
func namespaceConditions(ns *corev1.Namespace) string {
	var out []string
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	if len(out) == 0 {
		return "no condition reported (is kube-controller-manager running?)"
	}
	return strings.Join(out, "; ")
}

// tlsDial checks that addr serves TLS with a certificate the sandbox CA signed for 127.0.0.1.
func tlsDial(ctx context.Context, addr string, p *pki) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second},
		Config: &tls.Config{RootCAs: p.certPool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
