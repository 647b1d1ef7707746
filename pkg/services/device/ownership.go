package device

import (
	"context"
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
// (capp:cluster:<namespace>/<name>, or, where the operator lets the namespace adopt the previous
// provider's objects, that provider's cluster-id tag, which names no namespace). The machine-UID tag is not required: a clusterctl move gives the PacketMachine a new
// UID, and its recorded device must still be followed.
func (s *Service) notOwned(dev *packet.Device) string { return NotOwned(s.scope, dev) }

// NotOwned is the ownership check for anything else that acts on a machine's recorded device
// (remediation reboots and reinstalls it): "" when the device is the machine's cluster's.
func NotOwned(sc *scope.MachineScope, dev *packet.Device) string {
	if dev.ProjectID != "" && !strings.EqualFold(dev.ProjectID, sc.ProjectID()) {
		return fmt.Sprintf("it is in project %s, not the cluster's project %s", dev.ProjectID, sc.ProjectID())
	}
	clusterTag, legacy := infrav1.ClusterTag(sc.Cluster.Namespace, sc.Cluster.Name), infrav1.LegacyClusterTag(sc.Cluster.Name)
	switch {
	case slices.Contains(dev.Tags, clusterTag), sc.AdoptLegacy && slices.Contains(dev.Tags, legacy):
		return ""
	case slices.Contains(dev.Tags, legacy):
		return fmt.Sprintf("it carries only the previous provider's tag %s, which any namespace's cluster of that name "+
			"could claim; the operator lets this namespace take over the previous provider's objects with the manager's "+
			"--legacy-adoption-namespaces", legacy)
	}
	return fmt.Sprintf("it does not carry the cluster's tag %s", clusterTag)
}

// claim puts this management cluster's tag on the machine's device when it lacks it: a device
// made before the tag existed, or one of a cluster moved here by clusterctl, whose tag still
// names the management cluster it came from. That one's janitor then no longer takes it for
// its own orphan (docs/janitor.md).
func (s *Service) claim(ctx context.Context, dev *packet.Device) error {
	id := s.scope.ManagementCluster
	if id == "" || slices.Contains(dev.Tags, infrav1.ManagementClusterTag(id)) {
		return nil
	}
	tags := infrav1.WithManagementCluster(dev.Tags, id)
	if err := s.scope.Packet.TagDevice(ctx, dev.ID, tags); err != nil {
		return fmt.Errorf("tagging device %s as this management cluster's: %w", dev.ID, err)
	}
	dev.Tags = tags
	return nil
}
