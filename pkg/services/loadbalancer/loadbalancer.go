// Package loadbalancer fronts an EMLB cluster's control planes with an Equinix Metal Load
// Balancer: one load balancer per cluster, one listener port on the endpoint's port, one TCP
// pool, and one origin per control-plane machine. Every object is found again by name (the
// cluster's endpoint tag, the PacketMachine's name), never by an ID kept in status, so a lost
// create answer, a killed manager or a clusterctl move finds what exists instead of making more.
//
// Service is the endpoint backend of EMLB clusters (package endpoint owns the PacketCluster's
// ControlPlaneEndpointReady); OriginService owns a PacketMachine's LoadBalancerOriginReady.
package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/endpoint"
)

// portName names the listener port; a load balancer has one port per number, so the name only
// tells people what it is for.
const portName = "kube-apiserver"

// Name is the name of the cluster's load balancer and of its pool: the cluster's endpoint tag,
// which holds its namespace and name.
func Name(cluster *clusterv1.Cluster) string {
	return infrav1.ControlPlaneEndpointTag(cluster.Namespace, cluster.Name)
}

// BindPort is the port the cluster's API servers listen on, which origins point at: Cluster
// API's clusterNetwork.apiServerPort, which kubeadm binds to, else kubeadm's 6443.
func BindPort(cluster *clusterv1.Cluster) int {
	if p := cluster.Spec.ClusterNetwork.APIServerPort; p != 0 {
		return int(p)
	}
	return int(infrav1.DefaultAPIServerPort)
}

// Service manages the load balancer of one EMLB cluster.
type Service struct {
	scope *scope.ClusterScope
}

// NewService returns the load-balancer service of a cluster.
func NewService(s *scope.ClusterScope) *Service { return &Service{scope: s} }

// Ensure makes spec.controlPlaneEndpoint the load balancer's address and port, creating what
// is missing, and removes the origins of control planes that are gone.
func (s *Service) Ensure(ctx context.Context) (*endpoint.State, error) {
	pc := s.scope.PacketCluster
	if s.ready() {
		return nil, s.removeStaleOrigins(ctx)
	}
	locationID, ok := catalog.LoadBalancerLocation(strings.ToLower(pc.Spec.Metro))
	if !ok {
		return &endpoint.State{Reason: infrav1.LoadBalancerUnavailableReason, RequeueAfter: apistatus.SlowRetry, Message: fmt.Sprintf(
			"Metro %q has no Equinix Metal Load Balancers; metros with them: %v", pc.Spec.Metro, catalog.LoadBalancerMetros())}, nil
	}
	lb, err := s.find(ctx)
	if err != nil {
		return nil, err
	}
	if lb == nil {
		if host := pc.Spec.ControlPlaneEndpoint.Host; host != "" {
			apistatus.Answered(pc)
			return &endpoint.State{Reason: infrav1.WaitingForLoadBalancerReason, RequeueAfter: apistatus.SlowRetry, Message: fmt.Sprintf(
				"No load balancer of project %s is this cluster's at the endpoint's address %s: leave spec.controlPlaneEndpoint empty for a new one; "+
					"a cluster migrated from the previous provider keeps its load balancer %q, recorded in annotation %s",
				pc.Spec.ProjectID, host, pc.Name+"-capp-vip", LegacyLoadBalancerIDAnnotation)}, nil
		}
		if lb, err = s.create(ctx, locationID); err != nil {
			return nil, err
		}
	}
	if len(lb.IPs) == 0 {
		apistatus.Answered(pc)
		return &endpoint.State{Reason: infrav1.WaitingForLoadBalancerReason, RequeueAfter: addressRetry,
			Message: fmt.Sprintf("Load balancer %s has no address yet", lb.ID)}, nil
	}
	port := s.listenerPort()
	pool, err := s.ensurePool(ctx, lb, port)
	if err != nil {
		return nil, err
	}
	if err := s.ensurePort(ctx, lb, port, pool.ID); err != nil {
		return nil, err
	}
	pc.Spec.ControlPlaneEndpoint.Host = lb.IPs[0]
	pc.Spec.ControlPlaneEndpoint.Port = int32(port) //nolint:gosec // a port number
	apistatus.Answered(pc)
	return &endpoint.State{Ready: true, Reason: infrav1.LoadBalancerReadyReason, Message: fmt.Sprintf(
		"Load balancer %s at %s:%d forwards to pool %s", lb.ID, lb.IPs[0], port, pool.ID)}, nil
}

// Release removes the pool (with its origins) and the load balancer (with its ports), unless
// the reclaim policy keeps them.
func (s *Service) Release(ctx context.Context) error {
	pc := s.scope.PacketCluster
	if pc.Spec.ElasticIPReclaimPolicy == infrav1.ElasticIPReclaimRetain {
		return nil
	}
	lbs, err := s.findAll(ctx)
	if err != nil {
		return err
	}
	pools, err := s.pools(ctx)
	if err != nil {
		return err
	}
	for _, p := range pools {
		if err := s.scope.Packet.DeleteLoadBalancerPool(ctx, p.ID); err != nil {
			return err
		}
		record.Eventf(pc, "LoadBalancerPoolDeleted", "Deleted load-balancer pool %s", p.ID)
	}
	for _, lb := range lbs {
		if err := s.scope.Packet.DeleteLoadBalancer(ctx, lb.ID); err != nil {
			return err
		}
		record.Eventf(pc, "LoadBalancerDeleted", "Deleted load balancer %s (%v)", lb.ID, lb.IPs)
	}
	return nil
}

// addressRetry is how soon a load balancer without an address is looked at again.
const addressRetry = 10 * time.Second

// ready reports whether an earlier reconcile set the endpoint from the load balancer.
func (s *Service) ready() bool {
	c := conditions.Get(s.scope.PacketCluster, infrav1.ControlPlaneEndpointReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == infrav1.LoadBalancerReadyReason &&
		s.scope.PacketCluster.Spec.ControlPlaneEndpoint.Host != ""
}

// listenerPort is the endpoint's port: the user's, else the API servers' own.
func (s *Service) listenerPort() int {
	if p := s.scope.PacketCluster.Spec.ControlPlaneEndpoint.Port; p != 0 {
		return int(p)
	}
	return BindPort(s.scope.Cluster)
}

// find returns the cluster's load balancer: the one named for it, else — for a cluster migrated
// from the previous Packet provider — the load balancer that provider made for it, which is
// renamed so that it is found by name from then on. Should a lost create answer have left two,
// the endpoint's own is kept, else the first, and the user told; Delete removes all.
func (s *Service) find(ctx context.Context) (*packet.LoadBalancer, error) {
	pc := s.scope.PacketCluster
	all, err := s.scope.Packet.ListLoadBalancers(ctx, pc.Spec.ProjectID)
	if err != nil {
		return nil, err
	}
	name, host := Name(s.scope.Cluster), pc.Spec.ControlPlaneEndpoint.Host
	var ours []packet.LoadBalancer
	for _, lb := range all {
		if lb.Name == name {
			ours = append(ours, lb)
		}
	}
	slices.SortStableFunc(ours, func(a, b packet.LoadBalancer) int {
		return boolOrder(slices.Contains(a.IPs, host) && host != "", slices.Contains(b.IPs, host) && host != "")
	})
	if len(ours) > 1 {
		record.Warnf(pc, "DuplicateLoadBalancers", "Project %s has %d load balancers named %q; using %s. The others are deleted with the cluster",
			pc.Spec.ProjectID, len(ours), name, ours[0].ID)
	}
	if len(ours) > 0 {
		return &ours[0], nil
	}
	if host == "" {
		return nil, nil
	}
	for i := range all {
		if !s.previousProvidersOwn(all[i]) {
			continue
		}
		if err := s.scope.Packet.RenameLoadBalancer(ctx, all[i].ID, name); err != nil {
			return nil, err
		}
		record.Eventf(pc, "LoadBalancerAdopted", "Adopted load balancer %s (%q), which holds the endpoint's address %s", all[i].ID, all[i].Name, host)
		all[i].Name = name
		return &all[i], nil
	}
	return nil, nil
}

// LegacyLoadBalancerIDAnnotation is where the previous provider recorded a PacketCluster's load
// balancer; it moves with the PacketCluster when the cluster changes hands.
const LegacyLoadBalancerIDAnnotation = "equinix.com/loadbalancerID"

// previousProvidersOwn reports whether lb is the one the previous provider made for this
// PacketCluster: named for it (<name>-capp-vip), recorded in its annotation, and holding the
// endpoint's address. The address alone is public, and a name is shared by same-named clusters of
// other namespaces: a tenant writing another cluster's address as its endpoint must not take that
// cluster's load balancer (and delete it with its own cluster).
func (s *Service) previousProvidersOwn(lb packet.LoadBalancer) bool {
	pc := s.scope.PacketCluster
	return lb.ID != "" && pc.Annotations[LegacyLoadBalancerIDAnnotation] == lb.ID && lb.Name == pc.Name+"-capp-vip" &&
		slices.Contains(lb.IPs, pc.Spec.ControlPlaneEndpoint.Host)
}

func (s *Service) findAll(ctx context.Context) ([]packet.LoadBalancer, error) {
	all, err := s.scope.Packet.ListLoadBalancers(ctx, s.scope.PacketCluster.Spec.ProjectID)
	if err != nil {
		return nil, err
	}
	name := Name(s.scope.Cluster)
	return slices.DeleteFunc(all, func(lb packet.LoadBalancer) bool { return lb.Name != name }), nil
}

func (s *Service) create(ctx context.Context, locationID string) (*packet.LoadBalancer, error) {
	pc := s.scope.PacketCluster
	id, err := s.scope.Packet.CreateLoadBalancer(ctx, packet.CreateLoadBalancerRequest{
		ProjectID: pc.Spec.ProjectID, Name: Name(s.scope.Cluster), LocationID: locationID})
	if err != nil {
		return nil, err
	}
	record.Eventf(pc, "LoadBalancerCreated", "Created load balancer %s in metro %s", id, pc.Spec.Metro)
	return s.scope.Packet.GetLoadBalancer(ctx, id)
}

// pools returns the project's pools named for the cluster.
func (s *Service) pools(ctx context.Context) ([]packet.LoadBalancerPool, error) {
	return findPools(ctx, s.scope.Packet, s.scope.PacketCluster.Spec.ProjectID, Name(s.scope.Cluster))
}

// ensurePool returns the cluster's pool: the one named for it, else the previous provider's
// adopted, else a new one. With more than one (a lost create answer), the one the listener port
// forwards to is kept and the others deleted.
func (s *Service) ensurePool(ctx context.Context, lb *packet.LoadBalancer, port int) (*packet.LoadBalancerPool, error) {
	all, err := s.scope.Packet.ListLoadBalancerPools(ctx, s.scope.PacketCluster.Spec.ProjectID)
	if err != nil {
		return nil, err
	}
	listener := portNumbered(lb, port)
	pools := named(all, Name(s.scope.Cluster))
	if len(pools) == 0 {
		if p := s.previousProvidersPool(all, listener); p != nil {
			return s.adoptPool(ctx, p)
		}
		return s.createPool(ctx)
	}
	p := choosePool(pools, listener)
	for _, dup := range pools {
		if dup.ID == p.ID {
			continue
		}
		if err := s.scope.Packet.DeleteLoadBalancerPool(ctx, dup.ID); err != nil {
			return nil, err
		}
		record.Warnf(s.scope.PacketCluster, "DuplicateLoadBalancerPoolDeleted", "Deleted load-balancer pool %s, a duplicate of %s left by a lost answer", dup.ID, p.ID)
	}
	return p, nil
}

func (s *Service) createPool(ctx context.Context) (*packet.LoadBalancerPool, error) {
	pc := s.scope.PacketCluster
	id, err := s.scope.Packet.CreateLoadBalancerPool(ctx, pc.Spec.ProjectID, Name(s.scope.Cluster))
	if err != nil {
		return nil, err
	}
	record.Eventf(pc, "LoadBalancerPoolCreated", "Created load-balancer pool %s for the control planes", id)
	return &packet.LoadBalancerPool{ID: id, Name: Name(s.scope.Cluster), Protocol: "tcp"}, nil
}

// previousProvidersPool is the pool the previous provider made for the control plane,
// <name>-capp-vip-pool, if the listener port of the (adopted) load balancer forwards to it; nil
// otherwise. That provider made one pool per control plane: the first is adopted, and the
// origins of the others' machines are added to it when those machines are reconciled.
func (s *Service) previousProvidersPool(all []packet.LoadBalancerPool, listener *packet.LoadBalancerPort) *packet.LoadBalancerPool {
	if listener == nil {
		return nil
	}
	for i := range all {
		if slices.Contains(listener.PoolIDs, all[i].ID) && all[i].Name == PreviousPoolName(s.scope.PacketCluster.Name) {
			return &all[i]
		}
	}
	return nil
}

// adoptPool names p as the cluster's, so that a takeover creates no pool and p is found by name
// from then on.
func (s *Service) adoptPool(ctx context.Context, p *packet.LoadBalancerPool) (*packet.LoadBalancerPool, error) {
	if err := s.scope.Packet.RenameLoadBalancerPool(ctx, p.ID, Name(s.scope.Cluster)); err != nil {
		return nil, err
	}
	record.Eventf(s.scope.PacketCluster, "LoadBalancerPoolAdopted", "Adopted load-balancer pool %s (%q) of the previous provider", p.ID, p.Name)
	p.Name = Name(s.scope.Cluster)
	return p, nil
}

// PreviousPoolName and PreviousOriginName are the names the previous provider (v0.9.0) gave the
// pool and the origin of a PacketCluster's control plane: its load balancer's name, <name>-capp-vip,
// with -pool and -origin.
func PreviousPoolName(packetCluster string) string { return packetCluster + "-capp-vip-pool" }

// PreviousOriginName: see PreviousPoolName.
func PreviousOriginName(packetCluster string) string { return packetCluster + "-capp-vip-origin" }

// ensurePort opens the listener port, or makes the existing one forward to the pool.
func (s *Service) ensurePort(ctx context.Context, lb *packet.LoadBalancer, number int, poolID string) error {
	port := portNumbered(lb, number)
	switch {
	case port == nil:
		if _, err := s.scope.Packet.CreateLoadBalancerPort(ctx, lb.ID, portName, number, []string{poolID}); err != nil {
			return err
		}
		record.Eventf(s.scope.PacketCluster, "LoadBalancerPortCreated", "Load balancer %s listens on port %d", lb.ID, number)
	case !slices.Contains(port.PoolIDs, poolID):
		return s.scope.Packet.AddPoolsToPort(ctx, port.ID, []string{poolID})
	}
	return nil
}

// removeStaleOrigins deletes the origins of machines that are gone or going: their
// PacketMachine is deleting (its own deletion removes its origin too; this catches a removal
// that failed, which holds the machine's finalizer) or no longer exists. It looks only while a
// machine of the cluster is deleting, so that a cluster at rest costs no call.
func (s *Service) removeStaleOrigins(ctx context.Context) error {
	live, deleting, err := s.liveMachines(ctx)
	if err != nil || !deleting {
		return err
	}
	pools, err := s.pools(ctx)
	if err != nil {
		return err
	}
	for _, p := range pools {
		for _, o := range p.Origins {
			if live[o.Name] {
				continue
			}
			if err := s.scope.Packet.DeleteLoadBalancerOrigin(ctx, o.ID); err != nil {
				return err
			}
			record.Eventf(s.scope.PacketCluster, "LoadBalancerOriginRemoved",
				"Removed origin %s (%s:%d) of machine %s, which is gone", o.ID, o.Target, o.Port, o.Name)
		}
	}
	apistatus.Answered(s.scope.PacketCluster)
	return nil
}

// liveMachines returns the names of the cluster's PacketMachines that are not being deleted,
// and whether any is.
// Only control planes have origins, but infrastructure machines need not carry Cluster API's
// control-plane label, so all are listed. A new machine is in the cache before its origin can
// exist: the machine controller that adds the origin read the PacketMachine from that cache.
func (s *Service) liveMachines(ctx context.Context) (live map[string]bool, deleting bool, err error) {
	list := &infrav1.PacketMachineList{}
	if err := s.scope.List(ctx, list, client.InNamespace(s.scope.Cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: s.scope.Cluster.Name}); err != nil {
		return nil, false, fmt.Errorf("listing the cluster's PacketMachines: %w", err)
	}
	live = map[string]bool{}
	for _, pm := range list.Items {
		if pm.DeletionTimestamp.IsZero() {
			live[pm.Name] = true
		} else {
			deleting = true
		}
	}
	return live, deleting, nil
}

// findPools returns the project's pools with this name.
func findPools(ctx context.Context, c packet.Client, projectID, name string) ([]packet.LoadBalancerPool, error) {
	all, err := c.ListLoadBalancerPools(ctx, projectID)
	if err != nil {
		return nil, err
	}
	return named(all, name), nil
}

// named keeps the pools with this name, in a slice of their own.
func named(pools []packet.LoadBalancerPool, name string) []packet.LoadBalancerPool {
	return slices.DeleteFunc(slices.Clone(pools), func(p packet.LoadBalancerPool) bool { return p.Name != name })
}

// choosePool picks the pool the port forwards to, else the first; nil when there is none.
func choosePool(pools []packet.LoadBalancerPool, port *packet.LoadBalancerPort) *packet.LoadBalancerPool {
	for i := range pools {
		if port != nil && slices.Contains(port.PoolIDs, pools[i].ID) {
			return &pools[i]
		}
	}
	if len(pools) == 0 {
		return nil
	}
	return &pools[0]
}

func portNumbered(lb *packet.LoadBalancer, number int) *packet.LoadBalancerPort {
	for i := range lb.Ports {
		if lb.Ports[i].Number == number {
			return &lb.Ports[i]
		}
	}
	return nil
}

// boolOrder sorts true before false.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
