package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cluster-api/util/flags"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

// TestMetricsAreScrapedWithAServiceAccountToken starts a manager the way main does (secure
// diagnostics, Cluster API's flags), authenticated as a ServiceAccount bound to the generated
// config/rbac manager-role and nothing else, and scrapes /metrics as Prometheus would. The
// secure endpoint reviews the scraper's token and its access, which the manager may only do
// with the TokenReview and SubjectAccessReview permissions in its role; the scraper is bound to
// the shipped config/rbac metrics-reader role.
func TestMetricsAreScrapedWithAServiceAccountToken(t *testing.T) {
	ctx, env := startEnvtest(t)
	c := env.Client

	role := &rbacv1.ClusterRole{}
	data, err := os.ReadFile("config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, role); err != nil {
		t.Fatal(err)
	}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capp-system"}}))
	must(t, c.Create(ctx, role))
	managerCfg := serviceAccountConfig(ctx, t, env.Config, c, "manager", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name})

	reader := &rbacv1.ClusterRole{}
	data, err = os.ReadFile("config/rbac/metrics_reader_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, reader); err != nil {
		t.Fatal(err)
	}
	must(t, c.Create(ctx, reader))
	scraperCfg := serviceAccountConfig(ctx, t, env.Config, c, "prometheus", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name})

	addr := freeAddr(t)
	_, metricsOpts, err := flags.GetManagerOptions(flags.ManagerOptions{DiagnosticsAddress: addr})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(managerCfg, ctrl.Options{Scheme: env.Scheme, Metrics: *metricsOpts, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	scrape := func(token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the endpoint's certificate is self-signed
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(30 * time.Second)
	for scrape(scraperCfg.BearerToken) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := scrape(scraperCfg.BearerToken); got != http.StatusOK {
		t.Fatalf("a scrape with the metrics reader's token got %d, want 200", got)
	}
	if got := scrape(""); got != http.StatusUnauthorized {
		t.Fatalf("a scrape without a token got %d, want 401", got)
	}
	if got := scrape(managerCfg.BearerToken); got != http.StatusForbidden {
		t.Fatalf("a scrape by a ServiceAccount without /metrics access got %d, want 403", got)
	}
}

// serviceAccountConfig creates a ServiceAccount in capp-system bound to role and returns a
// config that authenticates with a token of it.
func serviceAccountConfig(ctx context.Context, t *testing.T, admin *rest.Config, c client.Client, name string, role rbacv1.RoleRef) *rest.Config {
	t.Helper()
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "capp-system"}}))
	must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: role,
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "capp-system"}}}))
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("capp-system").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tok.Status.Token
	return cfg
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startEnvtest starts a kube-apiserver and etcd with the project's CRDs for one test; they stop
// when it ends.
func startEnvtest(t *testing.T) (context.Context, *helpers.TestEnvironment) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env, err := helpers.Start(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Stop()
		cancel()
	})
	return ctx, env
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("setting up: %w", err))
	}
}
