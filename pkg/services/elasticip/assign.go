package elasticip

// AssignService gives the cluster's elastic IP to the first control-plane device that is
// active, in CPEM clusters. Afterwards the Cloud Provider for Equinix Metal, running in the
// workload cluster, moves the address between control planes; the provider never touches an
// assignment again. It owns a PacketMachine's ElasticIPAssigned condition.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// Reasons of the ElasticIPAssigned condition besides the shared ones.
const (
	// AssignedElsewhereReason: another device holds the address, which is what CPEM expects.
	AssignedElsewhereReason = "AssignedToAnotherDevice"
)

type AssignService struct {
	scope *scope.MachineScope
	// Retry is how soon a missing reservation is looked for again.
	Retry time.Duration
}

// NewAssignService returns the elastic IP assignment service of a machine.
func NewAssignService(s *scope.MachineScope) *AssignService {
	return &AssignService{scope: s, Retry: 20 * time.Second}
}

// Needed reports whether the machine's device should get the cluster's elastic IP: CPEM control
// planes of clusters whose endpoint is an elastic IP the provider reserved.
func (s *AssignService) Needed() bool {
	pc := s.scope.PacketCluster
	if !s.scope.IsControlPlane() || pc.Spec.VIPManager != infrav1.CPEMVIPManager {
		return false
	}
	c := conditions.Get(pc, infrav1.ControlPlaneEndpointReadyCondition)
	return c == nil || c.Reason != infrav1.UserSuppliedEndpointReason
}

// Reconcile assigns the address to dev (an active device) unless it is assigned already, to
// this device or any other. The decision is taken once: a True condition is never revisited.
//
// Assignments show on the reservation and on the device with some lag, so both are checked,
// and a 422 "already been taken" — what Packet answers to a second assignment, including one
// racing with another control plane — counts as done: the address is never assigned twice.
func (s *AssignService) Reconcile(ctx context.Context, dev *packet.Device) (ctrl.Result, error) {
	pm := s.scope.PacketMachine
	if !s.Needed() {
		s.set(metav1.ConditionTrue, infrav1.NotNeededReason, "Only control planes of CPEM clusters get the elastic IP from the provider")
		return ctrl.Result{}, nil
	}
	if conditions.IsTrue(pm, infrav1.ElasticIPAssignedCondition) {
		return ctrl.Result{}, nil
	}
	address := s.scope.PacketCluster.Spec.ControlPlaneEndpoint.Host
	if address == "" {
		s.set(metav1.ConditionFalse, infrav1.WaitingForIPReservationReason, "The cluster has no control-plane endpoint yet")
		return ctrl.Result{RequeueAfter: s.Retry}, nil
	}
	if hasAddress(dev, address) {
		s.assigned(dev.ID, address)
		return ctrl.Result{}, nil
	}
	ip, err := s.reservation(ctx, address)
	if err != nil {
		return apistatus.Record(pm, infrav1.ElasticIPAssignedCondition, err, apistatus.SlowRetry)
	}
	if ip == nil {
		s.set(metav1.ConditionFalse, infrav1.WaitingForIPReservationReason,
			fmt.Sprintf("No elastic IP reservation of the cluster holds %s", address))
		return ctrl.Result{RequeueAfter: s.Retry}, nil
	}
	switch {
	case slices.Contains(ip.AssignedDeviceIDs, dev.ID):
		s.assigned(dev.ID, address)
		return ctrl.Result{}, nil
	case len(ip.AssignedDeviceIDs) > 0:
		s.set(metav1.ConditionTrue, AssignedElsewhereReason, fmt.Sprintf("%s is assigned to device %s", address, ip.AssignedDeviceIDs[0]))
		return ctrl.Result{}, nil
	}

	err = s.scope.Packet.AssignIP(ctx, dev.ID, address)
	var apiErr *packet.Error
	if packet.IsAlreadyTaken(err) && errors.As(err, &apiErr) {
		// Assigned already: by us in a reconcile whose answer was lost, or to another control
		// plane. Either way the address has its one device.
		apistatus.Answered(pm)
		s.set(metav1.ConditionTrue, AssignedElsewhereReason, fmt.Sprintf("%s is already assigned (%s)", address, apiErr.Message()))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return apistatus.Record(pm, infrav1.ElasticIPAssignedCondition, err, apistatus.SlowRetry)
	}
	record.Eventf(pm, "ElasticIPAssigned", "Assigned elastic IP %s to device %s", address, dev.ID)
	s.assigned(dev.ID, address)
	return ctrl.Result{}, nil
}

// reservation finds the cluster's reservation holding address, by the tags the cluster
// controller gives it (or the previous provider gave it).
func (s *AssignService) reservation(ctx context.Context, address string) (*packet.IPReservation, error) {
	cluster := s.scope.Cluster
	tags := []string{infrav1.ControlPlaneEndpointTag(cluster.Namespace, cluster.Name)}
	if s.scope.AdoptLegacy {
		tags = append(tags, infrav1.LegacyClusterTag(cluster.Name))
	}
	for _, tag := range tags {
		ips, err := s.scope.Packet.FindIPReservationsByTags(ctx, s.scope.ProjectID(), tag)
		if err != nil {
			return nil, err
		}
		for i := range ips {
			if ips[i].Address == address {
				return &ips[i], nil
			}
		}
	}
	return nil, nil
}

func (s *AssignService) assigned(deviceID, address string) {
	apistatus.Answered(s.scope.PacketMachine)
	s.set(metav1.ConditionTrue, infrav1.ElasticIPAssignedReason, fmt.Sprintf("%s is assigned to device %s", address, deviceID))
}

func (s *AssignService) set(status metav1.ConditionStatus, reason, message string) {
	conditions.Set(s.scope.PacketMachine, metav1.Condition{
		Type: infrav1.ElasticIPAssignedCondition, Status: status, Reason: reason, Message: message,
	})
}

func hasAddress(dev *packet.Device, address string) bool {
	for _, a := range dev.Addresses {
		if a.Address == address {
			return true
		}
	}
	return false
}
