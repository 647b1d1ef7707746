// Package endpoint owns a PacketCluster's ControlPlaneEndpointReady condition. The endpoint is
// served by one backend, chosen by spec.vipManager: the elastic IP (CPEM, KUBE_VIP; package
// elasticip) or the load balancer (EMLB; package loadbalancer). Backends make
// spec.controlPlaneEndpoint point at their address and say how far they got; this package turns
// that, or the Packet error that stopped them, into the condition and the requeue.
package endpoint

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// State is how far a backend got: ControlPlaneEndpointReady's next status, reason and message,
// and when to look again.
type State struct {
	Ready        bool
	Reason       string
	Message      string
	RequeueAfter time.Duration
}

// Backend serves the control-plane endpoint of one cluster.
type Backend interface {
	// Ensure makes spec.controlPlaneEndpoint point at the backend's address, creating what is
	// missing. A nil State leaves the condition as it is (nothing was looked at).
	Ensure(ctx context.Context) (*State, error)
	// Release deletes what the backend created, unless the reclaim policy keeps it.
	Release(ctx context.Context) error
}

// Service reconciles the control-plane endpoint through its backend.
type Service struct {
	scope   *scope.ClusterScope
	backend Backend
}

// NewService returns the endpoint service of a cluster served by backend.
func NewService(s *scope.ClusterScope, backend Backend) *Service {
	return &Service{scope: s, backend: backend}
}

// Reconcile ensures the endpoint and records the outcome.
func (s *Service) Reconcile(ctx context.Context) (ctrl.Result, error) {
	state, err := s.backend.Ensure(ctx)
	if err != nil {
		return apistatus.Record(s.scope.PacketCluster, infrav1.ControlPlaneEndpointReadyCondition, err, apistatus.SlowRetry)
	}
	if state == nil {
		return ctrl.Result{}, nil
	}
	status := metav1.ConditionFalse
	if state.Ready {
		status = metav1.ConditionTrue
	}
	s.set(status, state.Reason, state.Message)
	return ctrl.Result{RequeueAfter: state.RequeueAfter}, nil
}

// WaitForMachines says that the cluster's resources are kept until its n machines have deleted
// their devices (a control plane may hold the elastic IP).
func (s *Service) WaitForMachines(n int) {
	s.set(metav1.ConditionFalse, clusterv1.DeletingReason,
		fmt.Sprintf("Waiting for %d PacketMachines to delete their devices before releasing the cluster's resources", n))
}

// Delete releases what the backend created.
func (s *Service) Delete(ctx context.Context) (ctrl.Result, error) {
	pc := s.scope.PacketCluster
	s.set(metav1.ConditionFalse, clusterv1.DeletingReason, fmt.Sprintf("Deleting (reclaim policy %s)", pc.Spec.ElasticIPReclaimPolicy))
	if err := s.backend.Release(ctx); err != nil {
		return apistatus.Record(pc, infrav1.ControlPlaneEndpointReadyCondition, err, apistatus.SlowRetry)
	}
	return ctrl.Result{}, nil
}

func (s *Service) set(status metav1.ConditionStatus, reason, message string) {
	conditions.Set(s.scope.PacketCluster, metav1.Condition{
		Type: infrav1.ControlPlaneEndpointReadyCondition, Status: status, Reason: reason, Message: message,
	})
}
