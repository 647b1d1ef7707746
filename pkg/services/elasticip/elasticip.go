// Package elasticip manages the elastic IP behind a CPEM or KUBE_VIP cluster's control-plane
// endpoint: Service reserves, reuses and releases it for the cluster (the endpoint backend of
// package endpoint, which owns ControlPlaneEndpointReady), AssignService gives it to the first
// control-plane device (owning a PacketMachine's ElasticIPAssigned).
package elasticip

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/endpoint"
)

// ReserveStartedAnnotation holds when a reservation was asked for whose address is not the
// endpoint yet. A reservation that committed at Packet but whose answer was lost (a timeout, a
// 5xx, a manager killed) may show in lists late; while the annotation is recent, an empty lookup
// does not mean "none", and nothing is reserved again.
const ReserveStartedAnnotation = "packetcluster.infrastructure.cluster.x-k8s.io/ip-reserve-started"

// Service reserves the control-plane elastic IP of one cluster: the endpoint backend of CPEM and
// KUBE_VIP clusters.
type Service struct {
	scope *scope.ClusterScope
	// PendingRetry is how often a reservation awaiting approval is checked.
	PendingRetry time.Duration
	// ConfirmWindow is how long a reservation whose answer was lost may take to show in
	// Packet's lists before another is asked for.
	ConfirmWindow time.Duration
	// Now is the clock of ReserveStartedAnnotation.
	Now func() time.Time
}

// NewService returns the elastic IP service for a cluster.
func NewService(s *scope.ClusterScope) *Service {
	return &Service{scope: s, PendingRetry: 30 * time.Second, ConfirmWindow: 2 * time.Minute, Now: time.Now}
}

// Ensure makes spec.controlPlaneEndpoint point at the cluster's elastic IP, reserving one the
// first time. A host the user set is kept and nothing is reserved for it.
func (s *Service) Ensure(ctx context.Context) (*endpoint.State, error) {
	pc := s.scope.PacketCluster
	ep := &pc.Spec.ControlPlaneEndpoint
	if ep.Host != "" && ep.Port == 0 {
		ep.Port = infrav1.DefaultAPIServerPort
	}
	if ep.Host != "" && s.endpointIsOurs() {
		return nil, nil
	}

	ip, err := s.find(ctx)
	if err == nil && ip == nil && ep.Host != "" {
		ip, err = s.adoptLegacy(ctx, ep.Host)
	}
	if err == nil && ip != nil {
		err = s.claim(ctx, ip)
	}
	if err != nil {
		return nil, err
	}
	if ep.Host != "" && (ip == nil || ip.Address != ep.Host) {
		return &endpoint.State{Ready: true, Reason: infrav1.UserSuppliedEndpointReason}, nil
	}
	if ip == nil {
		if wait := s.reserveInFlight(); wait > 0 {
			apistatus.Answered(pc)
			return &endpoint.State{Reason: infrav1.WaitingForIPReservationReason, RequeueAfter: min(wait, s.PendingRetry), Message: fmt.Sprintf(
				"An elastic IP reservation got no answer; it may exist anyway: waiting up to %s for it to show in Packet's lists before reserving another", wait.Round(time.Second))}, nil
		}
		if ip, err = s.reserve(ctx); err != nil {
			return nil, err
		}
		record.Eventf(pc, "ElasticIPReserved", "Reserved elastic IP %s for the control-plane endpoint", displayAddress(ip))
	}
	apistatus.Answered(pc)
	delete(pc.Annotations, ReserveStartedAnnotation)
	switch ip.State {
	case packet.IPReservationStatePending:
		return &endpoint.State{Reason: infrav1.WaitingForIPReservationReason, RequeueAfter: s.PendingRetry,
			Message: fmt.Sprintf("Elastic IP reservation %s is waiting for approval by Packet", ip.ID)}, nil
	case packet.IPReservationStateDenied:
		return &endpoint.State{Reason: infrav1.QuotaExceededReason, RequeueAfter: apistatus.SlowRetry,
			Message: fmt.Sprintf("Packet denied elastic IP reservation %s; release it and raise the project's quota", ip.ID)}, nil
	}
	ep.Host = ip.Address
	if ep.Port == 0 {
		ep.Port = infrav1.DefaultAPIServerPort
	}
	return &endpoint.State{Ready: true, Reason: infrav1.ElasticIPReservedReason,
		Message: fmt.Sprintf("Elastic IP %s (reservation %s)", ip.Address, ip.ID)}, nil
}

// Release releases the elastic IP unless the reclaim policy keeps it.
func (s *Service) Release(ctx context.Context) error {
	pc := s.scope.PacketCluster
	if pc.Spec.VIPManager == infrav1.EMLBVIPManager {
		return nil
	}
	if pc.Spec.ElasticIPReclaimPolicy == infrav1.ElasticIPReclaimRetain {
		return s.disown(ctx)
	}
	// Every reservation tagged for the endpoint is this provider's: the one in use and any
	// duplicate a lost answer left behind.
	ips, err := s.findAll(ctx)
	if err != nil {
		return err
	}
	for i := range ips {
		if err := s.scope.Packet.ReleaseIP(ctx, ips[i].ID); err != nil && !packet.IsNotFound(err) {
			return err
		}
		record.Eventf(pc, "ElasticIPReleased", "Released elastic IP %s", displayAddress(&ips[i]))
	}
	return nil
}

// endpointIsOurs reports whether an earlier reconcile already set the endpoint from our
// reservation, so no API call is needed.
func (s *Service) endpointIsOurs() bool {
	c := conditions.Get(s.scope.PacketCluster, infrav1.ControlPlaneEndpointReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue &&
		(c.Reason == infrav1.ElasticIPReservedReason || c.Reason == infrav1.UserSuppliedEndpointReason)
}

// find returns the cluster's reservation, tagged by this provider with the cluster's namespace
// and name, or nil. Should there be more than one (a reservation committed whose answer was
// lost), the endpoint's own is kept, else the oldest, and the user told; Delete releases all.
func (s *Service) find(ctx context.Context) (*packet.IPReservation, error) {
	ips, err := s.findAll(ctx)
	if err != nil || len(ips) == 0 {
		return nil, err
	}
	host := s.scope.PacketCluster.Spec.ControlPlaneEndpoint.Host
	slices.SortStableFunc(ips, func(a, b packet.IPReservation) int {
		if am, bm := a.Address == host, b.Address == host; am != bm {
			if am {
				return -1
			}
			return 1
		}
		return a.CreatedAt.Compare(b.CreatedAt)
	})
	if len(ips) > 1 {
		ids := make([]string, 0, len(ips))
		for _, ip := range ips {
			ids = append(ids, ip.ID)
		}
		record.Warnf(s.scope.PacketCluster, "DuplicateIPReservations",
			"Packet has %d elastic IP reservations tagged for this cluster's endpoint (%v); using %s. The others are released with the cluster", len(ips), ids, ips[0].ID)
	}
	return &ips[0], nil
}

func (s *Service) findAll(ctx context.Context) ([]packet.IPReservation, error) {
	pc := s.scope.PacketCluster
	return s.scope.Packet.FindIPReservationsByTags(ctx, pc.Spec.ProjectID,
		infrav1.ControlPlaneEndpointTag(pc.Namespace, s.scope.Cluster.Name))
}

// reserveInFlight returns how much longer a reservation whose answer was lost may take to show.
func (s *Service) reserveInFlight() time.Duration {
	v, ok := s.scope.PacketCluster.Annotations[ReserveStartedAnnotation]
	if !ok {
		return 0
	}
	started, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0
	}
	return max(0, started.Add(s.ConfirmWindow).Sub(s.Now()))
}

// adoptLegacy takes over the previous Packet provider's reservation of a migrated cluster: one
// tagged with the cluster's name only, and only if the cluster's endpoint already is its address
// and the operator lets the namespace adopt the previous provider's objects. Its tag has no
// namespace and the address is public, so otherwise a cluster of the same name in another
// namespace would take (and on deletion release) someone else's address. The adopted reservation
// gets this provider's tags, keeping the old one, which the workload cluster's CPEM may look it
// up by; from then on find sees it.
func (s *Service) adoptLegacy(ctx context.Context, address string) (*packet.IPReservation, error) {
	pc := s.scope.PacketCluster
	ips, err := s.scope.Packet.FindIPReservationsByTags(ctx, pc.Spec.ProjectID, infrav1.LegacyClusterTag(s.scope.Cluster.Name))
	if err != nil {
		return nil, err
	}
	for i := range ips {
		ip := &ips[i]
		if ip.Address != address {
			continue
		}
		if !s.scope.AdoptLegacy {
			record.Warnf(pc, "LegacyElasticIPNotAdopted", "Elastic IP %s (reservation %s) is the previous Packet provider's; "+
				"its tag names no namespace, so it is adopted only where the operator allows it (--legacy-adoption-namespaces)", address, ip.ID)
			return nil, nil
		}
		tags := append(append([]string{}, ip.Tags...),
			infrav1.ControlPlaneEndpointTag(pc.Namespace, s.scope.Cluster.Name), infrav1.ClusterTag(pc.Namespace, s.scope.Cluster.Name))
		if err := s.scope.Packet.TagIPReservation(ctx, ip.ID, tags); err != nil {
			return nil, err
		}
		ip.Tags = tags
		record.Eventf(pc, "ElasticIPAdopted", "Adopted elastic IP %s of the previous Packet provider (reservation %s)", address, ip.ID)
		return ip, nil
	}
	return nil, nil
}

func (s *Service) reserve(ctx context.Context) (*packet.IPReservation, error) {
	pc := s.scope.PacketCluster
	req := packet.ReserveIPRequest{
		ProjectID: pc.Spec.ProjectID,
		Tags: infrav1.WithManagementCluster([]string{
			infrav1.ControlPlaneEndpointTag(pc.Namespace, s.scope.Cluster.Name),
			infrav1.ClusterTag(pc.Namespace, s.scope.Cluster.Name),
		}, s.scope.ManagementCluster),
		FailOnApprovalRequired: true,
	}
	if pc.Spec.Metro != "" {
		req.Metro = pc.Spec.Metro
	} else {
		req.Facility = pc.Spec.Facility
	}
	// Written before the request, so that a lost answer is never followed by a second
	// reservation (see ReserveStartedAnnotation).
	if pc.Annotations == nil {
		pc.Annotations = map[string]string{}
	}
	pc.Annotations[ReserveStartedAnnotation] = s.Now().UTC().Format(time.RFC3339Nano)
	if err := s.scope.PatchNow(ctx); err != nil {
		return nil, err
	}
	ip, err := s.scope.Packet.ReserveIP(ctx, req)
	if err != nil && packet.Refused(err) {
		delete(pc.Annotations, ReserveStartedAnnotation) // nothing was reserved
	}
	return ip, err
}

func displayAddress(ip *packet.IPReservation) string {
	if ip.Address == "" {
		return "(pending) " + ip.ID
	}
	return ip.Address
}
