package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestShardsElectTheirOwnLeaders: managers sharded with --watch-filter must not share a lease
// (only one shard would ever reconcile), and every name must be one the API server accepts for a
// Lease.
func TestShardsElectTheirOwnLeaders(t *testing.T) {
	if got := leaderElectionID(""); got != "controller-leader-election-capp" {
		t.Errorf("unsharded lease = %q; existing deployments must keep theirs", got)
	}
	seen := map[string]string{}
	for _, filter := range []string{"shard-a", "shard-b", "Team_A", "eu.west"} {
		id := leaderElectionID(filter)
		if errs := validation.IsDNS1123Subdomain(id); len(errs) > 0 {
			t.Errorf("lease for --watch-filter=%s is %q, not a valid name: %v", filter, id, errs)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("--watch-filter=%s and %s share the lease %q", filter, other, id)
		}
		seen[id] = filter
	}
}
