// Package vlan gives a cluster with spec.network its VLAN: an existing one it only looks up, or
// one it creates in the cluster's metro and deletes with the cluster. The VLAN it creates is
// described with the cluster's tag, which is how it is found again after a restart or a
// clusterctl move (status is not carried over). It owns the VLANReady condition.
package vlan

import (
	"context"
	"fmt"
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

// AttachedRetry is how often the deletion of a VLAN that ports still carry is tried again:
// the devices holding it are being deleted and let go of it within a minute or two.
const AttachedRetry = 10 * time.Second

// notFoundRetry is how often a VLAN named by id or VXLAN that does not exist is looked for again.
const notFoundRetry = time.Minute

// Service manages a cluster's VLAN.
type Service struct {
	scope *scope.ClusterScope
}

// NewService returns the VLAN service of a cluster.
func NewService(s *scope.ClusterScope) *Service { return &Service{scope: s} }

// Description is what a VLAN created for the cluster is described with.
func (s *Service) Description() string {
	return infrav1.ClusterTag(s.scope.Namespace(), s.scope.Cluster.Name)
}

// Reconcile finds or creates the VLAN and records it in status.network.
func (s *Service) Reconcile(ctx context.Context) (ctrl.Result, error) {
	pc := s.scope.PacketCluster
	if pc.Spec.Network == nil {
		s.set(metav1.ConditionTrue, infrav1.NotNeededReason, "The cluster has no VLAN")
		return ctrl.Result{}, nil
	}
	if conditions.IsTrue(pc, infrav1.VLANReadyCondition) && pc.Status.Network != nil && pc.Status.Network.VLANID != "" {
		return ctrl.Result{}, nil
	}
	vn, err := s.find(ctx)
	if err != nil {
		return apistatus.Record(pc, infrav1.VLANReadyCondition, err, apistatus.SlowRetry)
	}
	ref := pc.Spec.Network.VLAN
	if vn != nil && infrav1.DescribedForAnotherNamespace(vn.Description, pc.Namespace) {
		apistatus.Answered(pc)
		s.set(metav1.ConditionFalse, infrav1.VLANNotOwnedReason, fmt.Sprintf(
			"VLAN %d (%s) was made for a cluster of another namespace (%s); name a VLAN of your own, or none to get one", vn.VXLAN, vn.ID, vn.Description))
		return ctrl.Result{RequeueAfter: notFoundRetry}, nil
	}
	if vn == nil && (ref.ID != "" || ref.VXLAN != 0) {
		s.set(metav1.ConditionFalse, infrav1.VLANNotFoundReason, fmt.Sprintf("No VLAN %s in metro %s", describe(ref), pc.Spec.Metro))
		return ctrl.Result{RequeueAfter: notFoundRetry}, nil
	}
	if vn == nil {
		if vn, err = s.scope.Packet.CreateVLAN(ctx, pc.Spec.ProjectID, pc.Spec.Metro, s.Description()); err != nil {
			return apistatus.Record(pc, infrav1.VLANReadyCondition, err, apistatus.SlowRetry)
		}
		record.Eventf(pc, "VLANCreated", "Created VLAN %d (%s) in metro %s", vn.VXLAN, vn.ID, pc.Spec.Metro)
	}
	apistatus.Answered(pc)
	pc.Status.Network = &infrav1.ClusterNetworkStatus{VLANID: vn.ID, VXLAN: vn.VXLAN}
	s.set(metav1.ConditionTrue, infrav1.VLANReadyReason, fmt.Sprintf("VLAN %d (%s)", vn.VXLAN, vn.ID))
	return ctrl.Result{}, nil
}

// Delete deletes the VLAN the provider created; an existing VLAN the cluster only used stays.
// Packet refuses while a port still carries it, so this waits for the devices to let go.
func (s *Service) Delete(ctx context.Context) (ctrl.Result, error) {
	pc := s.scope.PacketCluster
	if pc.Spec.Network == nil || pc.Spec.Network.VLAN.ID != "" || pc.Spec.Network.VLAN.VXLAN != 0 {
		return ctrl.Result{}, nil
	}
	vn, err := s.find(ctx)
	if err != nil {
		return apistatus.Record(pc, infrav1.VLANReadyCondition, err, apistatus.SlowRetry)
	}
	if vn == nil {
		return ctrl.Result{}, nil
	}
	if err := s.scope.Packet.DeleteVLAN(ctx, vn.ID); err != nil {
		if packet.KindOf(err) == packet.KindInvalid {
			s.set(metav1.ConditionFalse, "Deleting", fmt.Sprintf("Waiting for the devices to let go of VLAN %d: %v", vn.VXLAN, err))
			return ctrl.Result{RequeueAfter: AttachedRetry}, nil
		}
		return apistatus.Record(pc, infrav1.VLANReadyCondition, err, apistatus.SlowRetry)
	}
	record.Eventf(pc, "VLANDeleted", "Deleted VLAN %d (%s)", vn.VXLAN, vn.ID)
	pc.Status.Network = nil
	return ctrl.Result{}, nil
}

// find looks the cluster's VLAN up: by id, by VXLAN in the metro, or by the description the
// provider gives the VLANs it creates. nil when there is none.
func (s *Service) find(ctx context.Context) (*packet.VLAN, error) {
	pc := s.scope.PacketCluster
	ref := pc.Spec.Network.VLAN
	if ref.ID != "" {
		vn, err := s.scope.Packet.GetVLAN(ctx, ref.ID)
		if packet.IsNotFound(err) {
			return nil, nil
		}
		return vn, err
	}
	vlans, err := s.scope.Packet.ListVLANs(ctx, pc.Spec.ProjectID, pc.Spec.Metro)
	if err != nil {
		return nil, err
	}
	for i, vn := range vlans {
		if (ref.VXLAN != 0 && vn.VXLAN == ref.VXLAN) || (ref.VXLAN == 0 && vn.Description == s.Description()) {
			return &vlans[i], nil
		}
	}
	return nil, nil
}

func describe(ref infrav1.VLANReference) string {
	if ref.ID != "" {
		return ref.ID
	}
	return fmt.Sprintf("with VXLAN %d", ref.VXLAN)
}

func (s *Service) set(status metav1.ConditionStatus, reason, message string) {
	conditions.Set(s.scope.PacketCluster, metav1.Condition{
		Type: infrav1.VLANReadyCondition, Status: status, Reason: reason, Message: message,
	})
}
