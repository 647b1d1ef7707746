package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// TestJanitorCommandListsThenDeletesOrphans runs `manager janitor` against envtest (through a
// kubeconfig) and the simulator: an elastic IP of a cluster that is gone is listed, then deleted
// with --delete; another tool's IP is neither.
func TestJanitorCommandListsThenDeletesOrphans(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests through `make test`")
	}
	ctx := context.Background()
	env, err := helpers.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "janitor", Groups: []string{"system:masters"}}, nil)
	must(t, err)
	kubeconfig, err := user.KubeConfig()
	must(t, err)
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kubeconfigPath, kubeconfig, 0o600))

	// The simulator's clock is in the past: to the command, which ages by the real clock,
	// everything is older than the grace period.
	sim, err := packetsim.New(packetsim.Options{Clock: packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	must(t, err)
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1/", APIKey: packetsim.DefaultToken})
	must(t, err)
	identity, err := scope.ManagementClusterIdentity(ctx, env.Client)
	must(t, err)
	orphan, err := c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: packetsim.DefaultProjectID, Metro: "sv",
		Tags: []string{infrav1.ClusterTag("default", "gone"), infrav1.ManagementClusterTag(identity)}})
	must(t, err)
	// Another management cluster's orphan is not this one's to report.
	elsewhere, err := c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: packetsim.DefaultProjectID, Metro: "sv",
		Tags: []string{infrav1.ClusterTag("default", "gone-elsewhere"), infrav1.ManagementClusterTag("another")}})
	must(t, err)
	other, err := c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: packetsim.DefaultProjectID, Metro: "sv", Tags: []string{"team:db"}})
	must(t, err)

	t.Setenv("PACKET_API_KEY", packetsim.DefaultToken)
	run := func(extra ...string) string {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--project", packetsim.DefaultProjectID, "--kubeconfig", kubeconfigPath,
			"--packet-api-url", srv.URL + "/metal/v1/", "--lbaas-url", srv.URL + "/lbaas/",
			"--token-exchange-url", srv.URL + "/iam/api-keys/exchange"}, extra...)
		if code := runJanitorCommand(args, &stdout, &stderr); code != 0 {
			t.Fatalf("janitor %v exited %d: %s", extra, code, stderr.String())
		}
		t.Logf("janitor %v:\n%s", extra, stdout.String())
		return stdout.String()
	}
	ips := func() map[string]bool {
		out := map[string]bool{}
		for _, ip := range sim.IPReservations(packetsim.DefaultProjectID) {
			out[ip.ID] = true
		}
		return out
	}

	out := run()
	if !strings.Contains(out, orphan.ID) || strings.Contains(out, other.ID) || strings.Contains(out, elsewhere.ID) || !strings.Contains(out, "orphaned") {
		t.Fatalf("the report does not list exactly the orphan %s:\n%s", orphan.ID, out)
	}
	if !ips()[orphan.ID] {
		t.Fatal("a report without --delete deleted the orphan")
	}
	out = run("--delete")
	if !strings.Contains(out, "deleted") {
		t.Fatalf("--delete does not say it deleted:\n%s", out)
	}
	if left := ips(); left[orphan.ID] || !left[other.ID] || !left[elsewhere.ID] {
		t.Fatalf("after --delete: orphan present %v, other tool's IP present %v, other management cluster's present %v",
			left[orphan.ID], left[other.ID], left[elsewhere.ID])
	}
}
