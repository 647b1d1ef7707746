package bgp

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// SessionService gives each control-plane device of a KUBE_VIP cluster the BGP session kube-vip
// announces the control-plane elastic IP over; workers get none. It owns a PacketMachine's
// BGPSessionReady condition.
type SessionService struct {
	scope *scope.MachineScope
}

// NewSessionService returns the BGP session service of a machine.
func NewSessionService(s *scope.MachineScope) *SessionService { return &SessionService{scope: s} }

// Needed reports whether the machine's device needs a BGP session.
func (s *SessionService) Needed() bool {
	return s.scope.IsControlPlane() && s.scope.PacketCluster.Spec.VIPManager == infrav1.KubeVIPVIPManager
}

// Reconcile creates the session once. The client treats Packet's "already has session" as
// success, so a session created by a reconcile whose answer was lost is not an error.
func (s *SessionService) Reconcile(ctx context.Context, dev *packet.Device) (ctrl.Result, error) {
	pm := s.scope.PacketMachine
	if !s.Needed() {
		s.set(metav1.ConditionTrue, infrav1.NotNeededReason, "Only control planes of KUBE_VIP clusters have a BGP session")
		return ctrl.Result{}, nil
	}
	if conditions.IsTrue(pm, infrav1.BGPSessionReadyCondition) {
		return ctrl.Result{}, nil
	}
	if err := s.scope.Packet.EnsureBGPSession(ctx, dev.ID); err != nil {
		return apistatus.Record(pm, infrav1.BGPSessionReadyCondition, err, apistatus.SlowRetry)
	}
	apistatus.Answered(pm)
	record.Eventf(pm, "BGPSessionCreated", "Device %s has an IPv4 BGP session", dev.ID)
	s.set(metav1.ConditionTrue, infrav1.BGPSessionCreatedReason, fmt.Sprintf("Device %s has an IPv4 BGP session", dev.ID))
	return ctrl.Result{}, nil
}

func (s *SessionService) set(status metav1.ConditionStatus, reason, message string) {
	conditions.Set(s.scope.PacketMachine, metav1.Condition{
		Type: infrav1.BGPSessionReadyCondition, Status: status, Reason: reason, Message: message,
	})
}
