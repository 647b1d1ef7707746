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
