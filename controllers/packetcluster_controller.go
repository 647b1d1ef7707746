package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog/failuredomains"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/bgp"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/elasticip"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/endpoint"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/loadbalancer"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/sshkeys"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/vlan"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetmachines;packetmachinetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// A PacketCluster holds its credentials Secret with a finalizer until it is deleted.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=patch

// PacketClusterReconciler gives a Cluster its Packet infrastructure: the control-plane endpoint
// (an elastic IP, a load balancer, or the user's), BGP for kube-vip, and failure domains.
type PacketClusterReconciler struct {
	Client client.Client
	// APIReader reads the PacketCluster a reconcile starts from at the API server, not the cache
	// (nil: the cache). A reconcile started by the cluster's own write may find the cache a
	// write behind (a reservation recorded in an annotation, not yet its endpoint) and ask
	// Packet again what it already knows: elastic IPs, SSH keys. Clusters are few and reconciled
	// rarely, so the read costs the API server little.
	APIReader client.Reader
	// Packet gives the Packet client for a set of credentials.
	Packet credentials.ClientProvider
	// DefaultAPIKey is the manager's own Packet API key, used when a PacketCluster has no
	// credentialsRef.
	DefaultAPIKey string
	// DefaultKeyProjects are the projects DefaultAPIKey may serve; empty: any.
	DefaultKeyProjects []string
	// BGPLocalASN is the ASN for KUBE_VIP clusters that set none.
	BGPLocalASN int64
	// WatchFilterValue limits reconciles to objects with this cluster.x-k8s.io/watch-filter label.
	WatchFilterValue string
	// ManagementCluster is this management cluster's identity (scope.ManagementClusterIdentity),
	// tagged on the devices and IP reservations it manages so that its janitor, and no other
	// management cluster's, sweeps them; "" tags none.
	ManagementCluster string
	// LegacyAdoptionNamespaces are the namespaces whose clusters may take over the previous
	// provider's objects, tagged with a cluster name but no namespace; "*" is every namespace.
	LegacyAdoptionNamespaces []string
	// credentials connects to Packet with a cluster's credentials; set by SetupWithManager.
	credentials *credentials.Source
	// PendingIPRetry is how often a reservation awaiting Packet's approval is checked; 0 means
	// the service's default (30s).
	PendingIPRetry time.Duration
	// IPConfirmWindow is how long an elastic IP reservation whose answer was lost may take to
	// show in Packet's lists before another is asked for; 0 means 2m.
	IPConfirmWindow time.Duration
	// Now is the clock of that window; nil means time.Now.
	Now func() time.Time
}

// SetupWithManager registers the reconciler with mgr.
func (r *PacketClusterReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	r.credentials = credentialsSource(r.Client, r.Packet, r.DefaultAPIKey, r.DefaultKeyProjects)
	// The filters apply to every source but Secrets, which carry no watch-filter label;
	// secretToPacketClusters applies them to the PacketClusters it finds.
	filter := predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)
	notExternal := predicates.ResourceIsNotExternallyManaged(mgr.GetScheme(), log)
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.PacketCluster{}, builder.WithPredicates(filter, notExternal)).
		WithOptions(options).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(util.ClusterToInfrastructureMapFunc(ctx,
				infrav1.GroupVersion.WithKind("PacketCluster"), mgr.GetClient(), &infrav1.PacketCluster{})),
			builder.WithPredicates(filter, predicates.ClusterPausedTransitions(mgr.GetScheme(), log)),
		).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToPacketClusters), builder.OnlyMetadata).
		Watches(&infrav1.PacketMachine{}, handler.EnqueueRequestsFromMapFunc(r.machineToEMLBCluster),
			builder.WithPredicates(filter, machineGoing)).
		Complete(r)
}

// secretToPacketClusters maps a credentials Secret to the PacketClusters whose credentialsRef
// names it, so that fixed credentials are used at once, not at the next slow retry.
func (r *PacketClusterReconciler) secretToPacketClusters(ctx context.Context, o client.Object) []reconcile.Request {
	var requests []reconcile.Request
	for _, pc := range credentialsUsers(ctx, r.Client, o) {
		if r.WatchFilterValue != "" && pc.Labels[clusterv1.WatchLabel] != r.WatchFilterValue || annotations.IsExternallyManaged(&pc) {
			continue
		}
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pc)})
	}
	return requests
}

// Reconcile runs Cluster API's canonical preamble, then reserves (or releases) what the cluster
// needs from Packet.
func (r *PacketClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)
	pc := &infrav1.PacketCluster{}
	if err := r.reader().Get(ctx, req.NamespacedName, pc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	cluster, err := r.ownerCluster(ctx, pc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cluster == nil {
		if !pc.DeletionTimestamp.IsZero() {
			// Cluster API never adopted it, so nothing was reserved for it.
			return ctrl.Result{}, r.removeFinalizer(ctx, pc)
		}
		log.Info("Waiting for the Cluster controller to set an OwnerRef on the PacketCluster")
		return ctrl.Result{}, nil
	}
	log = log.WithValues("Cluster", klog.KObj(cluster))
	ctx = ctrl.LoggerInto(ctx, log)

	if annotations.IsExternallyManaged(pc) {
		log.V(4).Info("PacketCluster is externally managed, skipping")
		return ctrl.Result{}, nil
	}
	if added, err := finalizers.EnsureFinalizer(ctx, r.Client, pc, infrav1.PacketClusterFinalizer); err != nil || added {
		return ctrl.Result{}, err
	}
	if err := scope.DropInvalidConditions(ctx, r.Client, pc); err != nil { // the previous provider's
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, pc); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}

	creds, packetClient, credErr := r.credentials.Connect(ctx, pc)
	s, err := scope.NewClusterScope(scope.ClusterScopeParams{Client: r.Client, Cluster: cluster, PacketCluster: pc, Packet: packetClient,
		Credentials: creds, ManagementCluster: r.ManagementCluster, AdoptLegacy: adoptsLegacy(r.LegacyAdoptionNamespaces, pc.Namespace)})
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := s.Close(ctx); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()
	if credErr != nil {
		if !pc.DeletionTimestamp.IsZero() {
			return r.deleteWithoutCredentials(ctx, pc, credErr)
		}
		return apistatus.Record(pc, apistatus.NoStep, credErr, apistatus.SlowRetry)
	}

	if !pc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if err := credentials.Hold(ctx, r.Client, pc, creds); err != nil {
		return ctrl.Result{}, fmt.Errorf("holding the credentials Secret until the cluster is deleted: %w", err)
	}
	return r.reconcileNormal(ctx, s)
}

// ownerCluster is the PacketCluster's Cluster, nil while it has none. Once the Cluster is gone
// first (deleted with its namespace, or by hand), a deleting PacketCluster gets a stand-in named
// from its owner reference: what was made for it is found by that name and released all the same.
func (r *PacketClusterReconciler) ownerCluster(ctx context.Context, pc *infrav1.PacketCluster) (*clusterv1.Cluster, error) {
	cluster, err := util.GetOwnerCluster(ctx, r.Client, pc.ObjectMeta)
	if apierrors.IsNotFound(err) && !pc.DeletionTimestamp.IsZero() {
		ctrl.LoggerFrom(ctx).Info("The PacketCluster's Cluster is gone; releasing what was made for it")
		return &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: pc.Namespace, Name: clusterNameOf(pc)}}, nil
	}
	return cluster, err
}

func (r *PacketClusterReconciler) reconcileNormal(ctx context.Context, s *scope.ClusterScope) (ctrl.Result, error) {
	pc := s.PacketCluster
	if res, err := r.endpointService(s).Reconcile(ctx); err != nil || !res.IsZero() ||
		!conditions.IsTrue(pc, infrav1.ControlPlaneEndpointReadyCondition) {
		return res, err
	}
	if pc.Spec.VIPManager == infrav1.KubeVIPVIPManager {
		if res, err := bgp.NewService(s, r.BGPLocalASN).Reconcile(ctx); err != nil || !res.IsZero() ||
			!conditions.IsTrue(pc, infrav1.BGPReadyCondition) {
			return res, err
		}
	}
	if res, err := vlan.NewService(s).Reconcile(ctx); err != nil || !res.IsZero() ||
		!conditions.IsTrue(pc, infrav1.VLANReadyCondition) {
		return res, err
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	due, next := failuredomains.Due(pc, now)
	if due {
		fds, err := failuredomains.Compute(ctx, s)
		if err != nil {
			return apistatus.Record(pc, apistatus.NoStep, err, apistatus.SlowRetry)
		}
		pc.Status.FailureDomains = fds
		failuredomains.Computed(pc, now)
		next = failuredomains.RefreshAfter
	}
	// The endpoint is set above, so it reaches Cluster API together with provisioned.
	pc.Status.Initialization.Provisioned = ptr.To(true)
	return ctrl.Result{RequeueAfter: next}, nil
}

func (r *PacketClusterReconciler) reconcileDelete(ctx context.Context, s *scope.ClusterScope) (ctrl.Result, error) {
	pc := s.PacketCluster
	// The machines delete their devices with this cluster's credentials and project, and a
	// control plane may hold the elastic IP: release nothing while one is left. Cluster API
	// deletes the machines first; a namespace deletion or a hand-made one may not.
	machines := &infrav1.PacketMachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(pc.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: s.Cluster.Name}); err != nil {
		return ctrl.Result{}, err
	}
	endpointService := r.endpointService(s)
	if n := len(machines.Items); n > 0 {
		endpointService.WaitForMachines(n)
		return ctrl.Result{RequeueAfter: machinesGoneRetry}, nil
	}
	if res, err := endpointService.Delete(ctx); err != nil || !res.IsZero() {
		return res, err
	}
	if res, err := vlan.NewService(s).Delete(ctx); err != nil || !res.IsZero() {
		return res, err
	}
	// Cluster API deletes the PacketCluster after every machine, so the SSH keys registered for
	// the machines are unused now.
	deleted, err := sshkeys.DeleteRegistered(ctx, s.Packet, pc.Spec.ProjectID, infrav1.SSHKeyLabel(pc.Namespace, s.Cluster.Name))
	if err != nil {
		return apistatus.Record(pc, apistatus.NoStep, err, apistatus.SlowRetry)
	}
	if deleted > 0 {
		record.Eventf(pc, "SSHKeysDeleted", "Deleted %d project SSH keys registered for the cluster's machines", deleted)
	}
	// Last: until here the machines and the elastic IP needed the key.
	if err := credentials.Release(ctx, r.Client, r.Client, pc); err != nil {
		return ctrl.Result{}, fmt.Errorf("releasing the credentials Secret: %w", err)
	}
	controllerutil.RemoveFinalizer(pc, infrav1.PacketClusterFinalizer)
	return ctrl.Result{}, nil
}

// deleteWithoutCredentials lets a PacketCluster whose credentials never resolved go: nothing was
// made with them, so a typo in credentialsRef does not hold the Cluster's deletion forever. One
// whose credentials worked before waits for them, as its reservations need them to be released.
func (r *PacketClusterReconciler) deleteWithoutCredentials(ctx context.Context, pc *infrav1.PacketCluster, credErr error) (ctrl.Result, error) {
	held, err := credentials.Held(ctx, r.reader(), pc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if held {
		return apistatus.Record(pc, apistatus.NoStep, credErr, apistatus.SlowRetry)
	}
	record.Eventf(pc, "DeletedWithoutCredentials", "Credentials never resolved (%s), so nothing was made with them: deleting", credErr)
	controllerutil.RemoveFinalizer(pc, infrav1.PacketClusterFinalizer)
	return ctrl.Result{}, nil
}

// endpointService is the service of the cluster's control-plane endpoint, served by the load
// balancer of an EMLB cluster, else by the elastic IP.
func (r *PacketClusterReconciler) endpointService(s *scope.ClusterScope) *endpoint.Service {
	if s.PacketCluster.Spec.VIPManager == infrav1.EMLBVIPManager {
		return endpoint.NewService(s, loadbalancer.NewService(s))
	}
	eip := elasticip.NewService(s)
	if r.PendingIPRetry > 0 {
		eip.PendingRetry = r.PendingIPRetry
	}
	if r.IPConfirmWindow > 0 {
		eip.ConfirmWindow = r.IPConfirmWindow
	}
	if r.Now != nil {
		eip.Now = r.Now
	}
	return endpoint.NewService(s, eip)
}

// machinesGoneRetry is how often a PacketCluster being deleted looks for its machines again.
const machinesGoneRetry = 5 * time.Second

// reader is where a reconcile reads its PacketCluster (see APIReader).
func (r *PacketClusterReconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// removeFinalizer drops the finalizer of a PacketCluster that Cluster API never adopted.
func (r *PacketClusterReconciler) removeFinalizer(ctx context.Context, pc *infrav1.PacketCluster) error {
	if !controllerutil.ContainsFinalizer(pc, infrav1.PacketClusterFinalizer) {
		return nil
	}
	orig := pc.DeepCopy()
	controllerutil.RemoveFinalizer(pc, infrav1.PacketClusterFinalizer)
	return r.Client.Patch(ctx, pc, client.MergeFrom(orig))
}
