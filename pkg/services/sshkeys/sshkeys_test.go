package sshkeys_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/sshkeys"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const pubKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRY team@example.com"

// staleList answers its first ListProjectSSHKeys as if the project had no keys yet: what a
// machine sees when another machine registers the same key between its list and its create.
type staleList struct {
	packet.Client
	calls int
}

func (s *staleList) ListProjectSSHKeys(ctx context.Context, projectID string) ([]packet.SSHKey, error) {
	s.calls++
	if s.calls == 1 {
		return nil, nil
	}
	return s.Client.ListProjectSSHKeys(ctx, projectID)
}

func TestAKeyRegisteredMeanwhileIsUsedNotRefused(t *testing.T) {
	ctx := context.Background()
	sim, err := packetsim.New(packetsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1", APIKey: packetsim.DefaultToken, QPS: 100, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	project := packetsim.DefaultProjectID
	first, err := sshkeys.Resolve(ctx, c, project, "capp:cluster:ns/a", []string{pubKey})
	if err != nil || len(first) != 1 {
		t.Fatalf("first machine: %v, %v", first, err)
	}

	stale := &staleList{Client: c}
	second, err := sshkeys.Resolve(ctx, stale, project, "capp:cluster:ns/a", []string{pubKey})
	if err != nil {
		t.Fatalf("second machine, whose list missed the key: %v", err)
	}
	if len(second) != 1 || second[0] != first[0] {
		t.Fatalf("second machine got keys %v, want the first's %v", second, first)
	}
	if stale.calls != 2 {
		t.Fatalf("listed %d times, want 2 (the stale list, then again after Packet's 422)", stale.calls)
	}
}
