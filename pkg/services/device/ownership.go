package device

import (
	"context"
	"fmt"
	"slices"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// notOwned says why a device recorded in spec.providerID is not this machine's to follow or
// delete, "" when it is (scope.MachineScope.DeviceNotOwned).
func (s *Service) notOwned(dev *packet.Device) string { return s.scope.DeviceNotOwned(dev) }

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
