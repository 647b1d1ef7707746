// Package bgp manages the BGP that kube-vip announces a KUBE_VIP cluster's control-plane elastic
// IP with: the project's BGP configuration (Service, owning a PacketCluster's BGPReady) and each
// control-plane device's session (SessionService, owning a PacketMachine's BGPSessionReady).
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

// DefaultLocalASN is the private ASN devices announce from when neither the PacketCluster nor
// the manager's --bgp-local-asn says otherwise.
const DefaultLocalASN = 65000

// Service enables the project-level BGP configuration.
type Service struct {
	scope      *scope.ClusterScope
	defaultASN int64
}

// NewService returns the BGP service; defaultASN applies when spec.bgp.localASN is unset.
func NewService(s *scope.ClusterScope, defaultASN int64) *Service {
	if defaultASN == 0 {
		defaultASN = DefaultLocalASN
	}
	return &Service{scope: s, defaultASN: defaultASN}
}

// Reconcile enables local BGP on the project once. A project that already has BGP (enabled by
// another cluster or by hand) is used as it is.
func (s *Service) Reconcile(ctx context.Context) (ctrl.Result, error) {
	pc := s.scope.PacketCluster
	if conditions.IsTrue(pc, infrav1.BGPReadyCondition) {
		return ctrl.Result{}, nil
	}
	cfg, err := s.scope.Packet.GetBGPConfig(ctx, pc.Spec.ProjectID)
	if err != nil {
		return apistatus.Record(pc, infrav1.BGPReadyCondition, err, apistatus.SlowRetry)
	}
	if cfg == nil {
		asn := s.defaultASN
		if pc.Spec.BGP != nil && pc.Spec.BGP.LocalASN != 0 {
			asn = pc.Spec.BGP.LocalASN
		}
		req := packet.BGPConfigRequest{DeploymentType: "local", ASN: int(asn), MD5: s.scope.Credentials.BGPPassword,
			UseCase: "kubernetes-load-balancer"}
		if err := s.scope.Packet.EnableBGP(ctx, pc.Spec.ProjectID, req); err != nil {
			return apistatus.Record(pc, infrav1.BGPReadyCondition, err, apistatus.SlowRetry)
		}
		record.Eventf(pc, "BGPEnabled", "Enabled local BGP with ASN %d on project %s", asn, pc.Spec.ProjectID)
	}
	apistatus.Answered(pc)
	conditions.Set(pc, metav1.Condition{Type: infrav1.BGPReadyCondition, Status: metav1.ConditionTrue,
		Reason: "BGPEnabled", Message: fmt.Sprintf("Project %s has BGP", pc.Spec.ProjectID)})
	return ctrl.Result{}, nil
}
