package loadbalancer

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// OriginService makes one control-plane machine's device an origin of its cluster's load
// balancer. The origin is named after the PacketMachine, which the cluster's Service uses to
// tell live origins from those of control planes that are gone.
type OriginService struct {
	scope *scope.MachineScope
	// Retry is how soon a machine waiting for the cluster's pool or its address looks again.
	Retry time.Duration
}

// NewOriginService returns the origin service of a machine.
func NewOriginService(s *scope.MachineScope) *OriginService {
	return &OriginService{scope: s, Retry: 20 * time.Second}
}

// Needed reports whether the machine is a control plane of an EMLB cluster.
func (s *OriginService) Needed() bool {
	return s.scope.IsControlPlane() && s.scope.PacketCluster.Spec.VIPManager == infrav1.EMLBVIPManager
}

// Reconcile registers dev (an active device) as an active origin on the API servers' port,
// replacing an origin of this machine that points elsewhere. Once True the condition is not
// revisited: a device keeps its public address for life.
func (s *OriginService) Reconcile(ctx context.Context, dev *packet.Device) (ctrl.Result, error) {
	pm := s.scope.PacketMachine
	if !s.Needed() {
		s.set(metav1.ConditionTrue, infrav1.NotNeededReason, "Only control planes of EMLB clusters are load-balancer origins")
		return ctrl.Result{}, nil
	}
	if conditions.IsTrue(pm, infrav1.LoadBalancerOriginReadyCondition) {
		return ctrl.Result{}, nil
	}
	target := publicIPv4(dev)
	if target == "" {
		s.set(metav1.ConditionFalse, infrav1.WaitingForLoadBalancerReason,
			fmt.Sprintf("Device %s has no public IPv4 address, which load-balancer origins need", dev.ID))
		return ctrl.Result{RequeueAfter: s.Retry}, nil
	}
	pool, err := s.pool(ctx)
	if err != nil {
		return s.failed(err)
	}
	if pool == nil {
		apistatus.Answered(pm)
		s.set(metav1.ConditionFalse, infrav1.WaitingForLoadBalancerReason, "The cluster's load-balancer pool does not exist yet")
		return ctrl.Result{RequeueAfter: s.Retry}, nil
	}
	port := BindPort(s.scope.Cluster)
	if adopted, err := s.adoptPrevious(ctx, pool, target, port); err != nil {
		return s.failed(err)
	} else if adopted {
		return ctrl.Result{}, nil
	}
	for _, o := range pool.Origins {
		if o.Name != pm.Name {
			continue
		}
		if o.Target == target && o.Port == port && o.Active {
			s.registered(pool.ID, target, port)
			return ctrl.Result{}, nil
		}
		if err := s.scope.Packet.DeleteLoadBalancerOrigin(ctx, o.ID); err != nil {
			return s.failed(err)
		}
	}
	id, err := s.scope.Packet.CreateLoadBalancerOrigin(ctx, pool.ID, packet.LoadBalancerOrigin{
		Name: pm.Name, Target: target, Port: port, Active: true})
	if err != nil {
		return s.failed(err)
	}
	record.Eventf(pm, "LoadBalancerOriginAdded", "Device %s (%s:%d) is origin %s of the cluster's load balancer", dev.ID, target, port, id)
	s.registered(pool.ID, target, port)
	return ctrl.Result{}, nil
}

// adoptPrevious names as this machine's the origin the previous provider made for its device
// (the same address and port, its own name), so that a takeover creates no origin.
func (s *OriginService) adoptPrevious(ctx context.Context, pool *packet.LoadBalancerPool, target string, port int) (bool, error) {
	pm := s.scope.PacketMachine
	for _, o := range pool.Origins {
		if o.Name != PreviousOriginName(s.scope.PacketCluster.Name) || o.Target != target || o.Port != port || !o.Active {
			continue
		}
		if err := s.scope.Packet.RenameLoadBalancerOrigin(ctx, o.ID, pm.Name); err != nil {
			return false, err
		}
		record.Eventf(pm, "LoadBalancerOriginAdopted", "Adopted origin %s (%s:%d) of the previous provider", o.ID, target, port)
		s.registered(pool.ID, target, port)
		return true, nil
	}
	return false, nil
}

// Delete removes the machine's origins, before its device goes: the load balancer must stop
// sending traffic to a server that is shutting down.
func (s *OriginService) Delete(ctx context.Context) (ctrl.Result, error) {
	if c := conditions.Get(s.scope.PacketMachine, infrav1.LoadBalancerOriginReadyCondition); !s.Needed() ||
		c != nil && c.Reason == clusterv1.DeletingReason {
		return ctrl.Result{}, nil
	}
	pool, err := s.pool(ctx)
	if err != nil {
		return s.failed(err)
	}
	if pool == nil {
		return ctrl.Result{}, nil
	}
	for _, o := range pool.Origins {
		if o.Name != s.scope.PacketMachine.Name {
			continue
		}
		if err := s.scope.Packet.DeleteLoadBalancerOrigin(ctx, o.ID); err != nil {
			return s.failed(err)
		}
		record.Eventf(s.scope.PacketMachine, "LoadBalancerOriginRemoved", "Removed origin %s (%s:%d) from the cluster's load balancer", o.ID, o.Target, o.Port)
	}
	// Recorded so that the looks at the device being deleted cost no more LBaaS calls.
	s.set(metav1.ConditionFalse, clusterv1.DeletingReason, "Removed from the cluster's load balancer")
	return ctrl.Result{}, nil
}

// pool returns the cluster's pool, nil while there is none. While a lost create answer has
// left two, it waits (nil) for the cluster's Service, which knows which one its port forwards
// to, to delete the other: an origin put in that one would go with it.
func (s *OriginService) pool(ctx context.Context) (*packet.LoadBalancerPool, error) {
	pools, err := findPools(ctx, s.scope.Packet, s.scope.ProjectID(), Name(s.scope.Cluster))
	if err != nil || len(pools) != 1 {
		return nil, err
	}
	return &pools[0], nil
}

func (s *OriginService) registered(poolID, target string, port int) {
	apistatus.Answered(s.scope.PacketMachine)
	s.set(metav1.ConditionTrue, infrav1.LoadBalancerOriginAddedReason, fmt.Sprintf("%s:%d is an active origin in pool %s", target, port, poolID))
}

func (s *OriginService) failed(err error) (ctrl.Result, error) {
	return apistatus.Record(s.scope.PacketMachine, infrav1.LoadBalancerOriginReadyCondition, err, apistatus.SlowRetry)
}

func (s *OriginService) set(status metav1.ConditionStatus, reason, message string) {
	conditions.Set(s.scope.PacketMachine, metav1.Condition{
		Type: infrav1.LoadBalancerOriginReadyCondition, Status: status, Reason: reason, Message: message,
	})
}

// publicIPv4 is the device's public management IPv4 address, "" when it has none.
func publicIPv4(dev *packet.Device) string {
	for _, a := range dev.Addresses {
		if a.Public && a.AddressFamily == 4 && a.Management {
			return a.Address
		}
	}
	return ""
}
