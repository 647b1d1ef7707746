package scope

import (
	"fmt"
	"slices"
	"strings"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// DeviceNotOwned says why a device recorded in spec.providerID is not this machine's to follow,
// delete, reboot or reinstall, "" when it is. Both the device service and remediation ask it. A
// providerID can be written by anyone who may edit the PacketMachine, and Packet answers
// GET /devices/{id} for every project the key can see: without this check a namespace could point
// a machine at another team's server, then delete it (or have the cluster's elastic IP assigned
// to it) by deleting the machine.
//
// A device is the machine's when it is in the cluster's project and carries the cluster's tag:
//   - capp:cluster:<namespace>/<name>, this provider's;
//   - the pair capp:cluster-id:<name> and capp:namespace:<namespace>, the previous provider's
//     v0.9.0's (infrav1.PreviousClusterTags). It names the namespace as ours does, and is as
//     hard to forge: nothing puts capp: tags on a device but the providers themselves (users'
//     tags may not use the prefix here, and v0.9.0 dropped users' tags altogether), so who could
//     tag another namespace's device so holds a key to the project and could forge ours too.
//     It needs no opt-in;
//   - where the operator lets the namespace adopt the previous provider's objects, its older
//     cluster-id tag, which names no namespace (infrav1.LegacyClusterTag).
//
// The machine tag is not required: a clusterctl move gives the PacketMachine a new UID, and its
// recorded device must still be followed (v0.9.0's capp:machine-uid: holds the Machine's name).
func (s *MachineScope) DeviceNotOwned(dev *packet.Device) string {
	if dev.ProjectID != "" && !strings.EqualFold(dev.ProjectID, s.ProjectID()) {
		return fmt.Sprintf("it is in project %s, not the cluster's project %s", dev.ProjectID, s.ProjectID())
	}
	clusterTag, legacy := infrav1.ClusterTag(s.Cluster.Namespace, s.Cluster.Name), infrav1.LegacyClusterTag(s.Cluster.Name)
	switch {
	case slices.Contains(dev.Tags, clusterTag), s.AdoptLegacy && slices.Contains(dev.Tags, legacy):
		return ""
	case containsAll(dev.Tags, infrav1.PreviousClusterTags(s.Cluster.Namespace, s.Cluster.Name)):
		return ""
	case slices.Contains(dev.Tags, legacy):
		return fmt.Sprintf("it carries only the previous provider's tag %s, which any namespace's cluster of that name "+
			"could claim; the operator lets this namespace take over the previous provider's objects with the manager's "+
			"--legacy-adoption-namespaces", legacy)
	}
	return fmt.Sprintf("it does not carry the cluster's tag %s", clusterTag)
}

func containsAll(tags, want []string) bool {
	for _, w := range want {
		if !slices.Contains(tags, w) {
			return false
		}
	}
	return true
}
