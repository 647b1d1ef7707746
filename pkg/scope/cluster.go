package scope

import (
	"context"
	"errors"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// ClusterConditions are the PacketCluster conditions Ready summarises, in order.
var ClusterConditions = []string{
	infrav1.PacketAPIAvailableCondition,
	infrav1.ControlPlaneEndpointReadyCondition,
	infrav1.BGPReadyCondition,
	infrav1.VLANReadyCondition,
}

// ClusterScopeParams are what a ClusterScope is built from.
type ClusterScopeParams struct {
	Client        client.Client
	Cluster       *clusterv1.Cluster
	PacketCluster *infrav1.PacketCluster
	// Packet is the client for the cluster's credentials; nil when they could not be read.
	Packet      packet.Client
	Credentials credentials.Keys
	// ManagementCluster is the identity of this management cluster (ManagementClusterIdentity),
	// put on the IP reservations the cluster keeps; "" puts none on.
	ManagementCluster string
	// AdoptLegacy lets the cluster take over the previous provider's objects, whose tags name
	// the cluster but not its namespace (infrav1.LegacyClusterTag); the operator allows it per
	// namespace (--legacy-adoption-namespaces), since any namespace may name a cluster alike.
	AdoptLegacy bool
}

// ClusterScope is one reconcile of a PacketCluster.
type ClusterScope struct {
	client.Client
	Cluster       *clusterv1.Cluster
	PacketCluster *infrav1.PacketCluster
	Packet        packet.Client
	Credentials   credentials.Keys
	// ManagementCluster and AdoptLegacy are ClusterScopeParams'.
	ManagementCluster string
	AdoptLegacy       bool

	patchHelper *patch.Helper
}

// NewClusterScope validates params and starts tracking changes to the PacketCluster.
func NewClusterScope(p ClusterScopeParams) (*ClusterScope, error) {
	if p.Client == nil || p.Cluster == nil || p.PacketCluster == nil {
		return nil, errors.New("cluster scope needs a client, a Cluster and a PacketCluster")
	}
	helper, err := patch.NewHelper(p.PacketCluster, p.Client)
	if err != nil {
		return nil, err
	}
	return &ClusterScope{Client: p.Client, Cluster: p.Cluster, PacketCluster: p.PacketCluster,
		Packet: p.Packet, Credentials: p.Credentials, ManagementCluster: p.ManagementCluster, AdoptLegacy: p.AdoptLegacy,
		patchHelper: helper}, nil
}

// Name and Namespace are the PacketCluster's.
func (s *ClusterScope) Name() string      { return s.PacketCluster.Name }
func (s *ClusterScope) Namespace() string { return s.PacketCluster.Namespace }

// ProjectID is the Packet project of the cluster.
func (s *ClusterScope) ProjectID() string { return s.PacketCluster.Spec.ProjectID }

// PatchNow writes the PacketCluster immediately, e.g. to record the intent to reserve an
// elastic IP before the request is sent, and tracks later changes from there.
func (s *ClusterScope) PatchNow(ctx context.Context) error {
	if err := s.patchHelper.Patch(ctx, s.PacketCluster, patch.WithOwnedConditions{Conditions: ClusterConditions}); err != nil {
		return err
	}
	helper, err := patch.NewHelper(s.PacketCluster, s.Client)
	if err != nil {
		return err
	}
	s.patchHelper = helper
	return nil
}

// Close summarises the conditions into Ready and patches the PacketCluster.
func (s *ClusterScope) Close(ctx context.Context) error {
	if err := setReadySummary(s.PacketCluster, ClusterConditions); err != nil {
		return err
	}
	return s.patchHelper.Patch(ctx, s.PacketCluster, patch.WithOwnedConditions{Conditions: append([]string{
		clusterv1.PausedCondition, clusterv1.ReadyCondition,
	}, ClusterConditions...)})
}
