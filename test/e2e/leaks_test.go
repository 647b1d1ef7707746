package e2e

import (
	"strings"
	"testing"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// TestLeakCheckFindsOneLeakOfEachKind runs without a sandbox (it is not part of the Ginkgo
// suite, which skips itself without PACKET_E2E): the leak check must be able to fail.
func TestLeakCheckFindsOneLeakOfEachKind(t *testing.T) {
	const ns = "e2e-quick-start-x1"
	mine, other := infrav1.ClusterTag(ns, "c1"), infrav1.ClusterTag(ns+"-other", "c1")
	st := simState{
		devices: []Device{
			{ID: "d-mine", Hostname: "mine", Tags: []string{mine}},
			{ID: "d-other", Hostname: "other", Tags: []string{other}},
		},
		ips: []IP{
			{ID: "ip-mine", Tags: []string{infrav1.ControlPlaneEndpointTag(ns, "c1")}},
			{ID: "ip-other", Tags: []string{infrav1.ControlPlaneEndpointTag(ns+"-other", "c1")}},
			{ID: "ip-legacy-name-only", Tags: []string{infrav1.LegacyClusterTag("c1")}},
		},
		sessions: []BGPSession{{ID: "bgp-orphan"}, {ID: "bgp-live"}},
		keys:     []SSHKey{{ID: "key-mine", Label: infrav1.SSHKeyLabel(ns, "c1")}, {ID: "key-other", Label: infrav1.SSHKeyLabel(ns+"-other", "c1")}},
		vlans:    []VLAN{{ID: "vlan-mine", Description: mine}, {ID: "vlan-other", Description: other}, {ID: "vlan-by-hand", Description: "lab"}},
		loadBalancers: []LoadBalancer{{ID: "lb-mine", Name: infrav1.ControlPlaneEndpointTag(ns, "c1")},
			{ID: "lb-other", Name: infrav1.ControlPlaneEndpointTag(ns+"-other", "c1")}, {ID: "lb-by-hand", Name: "c1-capp-vip"}},
		pools: []LoadBalancerPool{{ID: "pool-mine", Name: infrav1.ControlPlaneEndpointTag(ns, "c1")},
			{ID: "pool-other", Name: infrav1.ControlPlaneEndpointTag(ns+"-other", "c1")}},
	}
	st.sessions[0].Device.Href = "/metal/v1/devices/d-gone"
	st.sessions[1].Device.Href = "/metal/v1/devices/d-other"

	got := strings.Join(leakedIn(st, ns), "\n")
	for _, want := range []string{"device d-mine", "IP reservation ip-mine", "BGP session bgp-orphan", "SSH key key-mine", "VLAN vlan-mine",
		"load balancer lb-mine", "load-balancer pool pool-mine"} {
		if !strings.Contains(got, want) {
			t.Errorf("leak check misses %q; it found:\n%s", want, got)
		}
	}
	for _, notWant := range []string{"d-other", "ip-other", "ip-legacy", "bgp-live", "key-other", "vlan-other", "vlan-by-hand",
		"lb-other", "lb-by-hand", "pool-other"} {
		if strings.Contains(got, notWant) {
			t.Errorf("leak check blames %q, which is not the namespace's; it found:\n%s", notWant, got)
		}
	}
	if leakedIn(simState{}, ns) != nil {
		t.Error("an empty simulator has leaks")
	}
	// "" is every namespace: the capi suite's check after each of Cluster API's specs.
	all := strings.Join(leakedIn(st, ""), "\n")
	for _, want := range []string{"device d-mine", "device d-other", "VLAN vlan-other", "load balancer lb-other"} {
		if !strings.Contains(all, want) {
			t.Errorf("the every-namespace check misses %q; it found:\n%s", want, all)
		}
	}
	if strings.Contains(all, "vlan-by-hand") || strings.Contains(all, "ip-legacy-name-only") {
		t.Errorf("the every-namespace check blames objects that are no cluster's:\n%s", all)
	}
}
