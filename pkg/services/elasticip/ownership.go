package elasticip

import (
	"context"
	"slices"
	"strings"

	"sigs.k8s.io/cluster-api/util/record"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// disown takes this management cluster's tag off the reservations a Retain policy keeps, so
// that no janitor takes them for orphans; the cluster tags stay, for a cluster of the same
// namespace and name to find the address again.
func (s *Service) disown(ctx context.Context) error {
	ips, err := s.findAll(ctx)
	if err != nil {
		return err
	}
	for i := range ips {
		if !hasManagementClusterTag(ips[i].Tags) {
			continue
		}
		if err := s.scope.Packet.TagIPReservation(ctx, ips[i].ID, infrav1.WithManagementCluster(ips[i].Tags, "")); err != nil && !packet.IsNotFound(err) {
			return err
		}
		record.Eventf(s.scope.PacketCluster, "ElasticIPRetained", "Kept elastic IP %s (reclaim policy Retain)", displayAddress(&ips[i]))
	}
	return nil
}

func hasManagementClusterTag(tags []string) bool {
	return slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, infrav1.ManagementClusterTagPrefix) })
}

// claim puts this management cluster's tag on the cluster's reservation when it lacks it (one
// retained by an earlier cluster, made before the tag existed, or of a cluster moved here), so
// that only this management cluster's janitor ever takes it for its own.
func (s *Service) claim(ctx context.Context, ip *packet.IPReservation) error {
	id := s.scope.ManagementCluster
	if id == "" || slices.Contains(ip.Tags, infrav1.ManagementClusterTag(id)) {
		return nil
	}
	tags := infrav1.WithManagementCluster(ip.Tags, id)
	if err := s.scope.Packet.TagIPReservation(ctx, ip.ID, tags); err != nil {
		return err
	}
	ip.Tags = tags
	return nil
}
