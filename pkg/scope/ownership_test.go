package scope_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

func TestThePreviousProvidersNameOnlyTagOwnsADeviceOnlyWhereAdoptionIsAllowed(t *testing.T) {
	sc := &scope.MachineScope{Cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "c1"}},
		PacketCluster: &infrav1.PacketCluster{Spec: infrav1.PacketClusterSpec{ProjectID: "p"}}}
	legacy := &packet.Device{ProjectID: "p", Tags: []string{infrav1.LegacyClusterTag("c1")}}
	if why := sc.DeviceNotOwned(legacy); !strings.Contains(why, "--legacy-adoption-namespaces") {
		t.Fatalf("a device tagged by name only is a same-named cluster's of any namespace; got %q", why)
	}
	sc.AdoptLegacy = true
	if why := sc.DeviceNotOwned(legacy); why != "" {
		t.Fatalf("where the operator allows adoption, the previous provider's device is the cluster's; got %q", why)
	}
	own := &packet.Device{ProjectID: "p", Tags: []string{infrav1.ClusterTag("team-b", "c1")}}
	if why := sc.DeviceNotOwned(own); why != "" {
		t.Fatalf("the cluster's own tag: %q", why)
	}
}

func TestThePreviousProvidersNamespacedTagPairOwnsADeviceWithoutOptIn(t *testing.T) {
	sc := &scope.MachineScope{Cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "c1"}},
		PacketCluster: &infrav1.PacketCluster{Spec: infrav1.PacketClusterSpec{ProjectID: "p"}}}
	// As v0.9.0 tags a worker of team-b/c1.
	v090 := []string{"capp:cluster-id:c1", "capp:machine-uid:c1-md-0-abcde", "capp:namespace:team-b", "kubernetes.io/role:node"}
	if why := sc.DeviceNotOwned(&packet.Device{ProjectID: "p", Tags: v090}); why != "" {
		t.Fatalf("v0.9.0's device of the cluster: %q", why)
	}
	for name, tags := range map[string][]string{
		"another namespace's": {"capp:cluster-id:c1", "capp:namespace:team-a"},
		"the name only":       {"capp:cluster-id:c1"},
		"the namespace only":  {"capp:namespace:team-b"},
		"another cluster's":   {"capp:cluster-id:c2", "capp:namespace:team-b"},
	} {
		if why := sc.DeviceNotOwned(&packet.Device{ProjectID: "p", Tags: tags}); why == "" {
			t.Errorf("%s tags %v own the device", name, tags)
		}
	}
	if why := sc.DeviceNotOwned(&packet.Device{ProjectID: "other", Tags: v090}); !strings.Contains(why, "project") {
		t.Fatalf("a device of another project: %q", why)
	}
}
