package device

import (
	"fmt"
	"slices"
	"strings"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// notOwned says why a device recorded in spec.providerID is not this machine's to follow or
// delete, "" when it is. A providerID can be written by anyone who may edit the PacketMachine,
// and Packet answers GET /devices/{id} for every project the key can see: without this check a
// namespace could point a machine at another team's server, then delete it (or have the
// cluster's elastic IP assigned to it) by deleting the machine.
//
// A device is the machine's when it is in the cluster's project and carries the cluster's tag
// (capp:cluster:<namespace>/<name>, or the previous provider's cluster-id tag for devices it
// created). The machine-UID tag is not required: a clusterctl move gives the PacketMachine a new
// UID, and its recorded device must still be followed.
func (s *Service) notOwned(dev *packet.Device) string { return NotOwned(s.scope, dev) }

// NotOwned is the ownership check for anything else that acts on a machine's recorded device
// (remediation reboots and reinstalls it): "" when the device is the machine's cluster's.
func NotOwned(sc *scope.MachineScope, dev *packet.Device) string {
	if dev.ProjectID != "" && !strings.EqualFold(dev.ProjectID, sc.ProjectID()) {
		return fmt.Sprintf("it is in project %s, not the cluster's project %s", dev.ProjectID, sc.ProjectID())
	}
	clusterTag := infrav1.ClusterTag(sc.Cluster.Namespace, sc.Cluster.Name)
	if !slices.Contains(dev.Tags, clusterTag) && !slices.Contains(dev.Tags, infrav1.LegacyClusterTag(sc.Cluster.Name)) {
		return fmt.Sprintf("it does not carry the cluster's tag %s", clusterTag)
	}
	return ""
}
