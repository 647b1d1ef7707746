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
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/bgp"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/elasticip"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/loadbalancer"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/network"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetmachines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetmachines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// PacketMachineReconciler turns a Cluster API Machine into a Packet device: it creates (or
// adopts) the device, reports it to Cluster API once active, gives control planes the cluster's
// elastic IP or BGP session, and deletes the device with the Machine.
type PacketMachineReconciler struct {
	Client client.Client
	// APIReader reads from the API server, not the cache: before a device is created, the
	// PacketMachine it was decided from is checked to be the current one. Nil: the check is
	// skipped.
	APIReader client.Reader
	// Packet gives the Packet client for a set of credentials.
	Packet credentials.ClientProvider
	// DefaultAPIKey is the manager's own Packet API key, used when a PacketCluster has no
	// credentialsRef.
	DefaultAPIKey string
	// DefaultKeyProjects are the projects DefaultAPIKey may serve; empty: any.
	DefaultKeyProjects []string
	// WatchFilterValue limits reconciles to objects with this cluster.x-k8s.io/watch-filter label.
	WatchFilterValue string
	// ManagementCluster is this management cluster's identity (scope.ManagementClusterIdentity),
	// tagged on the devices and IP reservations it manages so that its janitor, and no other
	// management cluster's, sweeps them; "" tags none.
	ManagementCluster string
	// LegacyAdoptionNamespaces are the namespaces whose clusters may take over the previous
	// provider's objects, tagged with a cluster name but no namespace; "*" is every namespace.
	LegacyAdoptionNamespaces []string

	// PollMin and PollMax bound how often a provisioning or deprovisioning device is looked at
	// (defaults 10s and 2m; a look at a measured end that is near may come sooner than
	// PollMin, until a look finds no progress); CreateConfirmWindow is how long an unanswered
	// create may take to show in Packet's lists (default 2m). Now is the clock they are
	// measured with (time.Now).
	PollMin, PollMax    time.Duration
	CreateConfirmWindow time.Duration
	Now                 func() time.Time
	// SnapshotMaxAge is how old the Packet clients' project device lists may be (their
	// packet.Options.DeviceSnapshotMaxAge); looks aimed at an estimated end land that long
	// after it. Default packet.DefaultSnapshotMaxAge.
	SnapshotMaxAge time.Duration

	progress    *device.Progress
	sentCreates *device.SentCreates
	credentials *credentials.Source
}

// conflictRetry is how soon a reconcile whose status write found a newer PacketMachine runs
// again, if nothing else starts it first (the change that made it newer usually does).
const conflictRetry = time.Second

// SetupWithManager registers the reconciler with mgr.
func (r *PacketMachineReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	if r.progress == nil {
		r.progress = device.NewProgress()
	}
	if r.sentCreates == nil {
		r.sentCreates = device.NewSentCreates()
	}
	// The metadata-only informer of the Secret watch below tells when a credentials Secret
	// changed, so its contents are read once per change, not once per reconcile.
	r.credentials = credentialsSource(r.Client, r.Packet, r.DefaultAPIKey, r.DefaultKeyProjects)
	r.credentials.Metadata = mgr.GetCache()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &clusterv1.Machine{}, bootstrapSecretIndex, indexBootstrapSecret); err != nil {
		return fmt.Errorf("indexing Machines by bootstrap Secret: %w", err)
	}
	// The watch filter applies to every source but Secrets, which carry no such label;
	// secretToPacketMachines applies it to the Machines it finds.
	filter := predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.PacketMachine{}, builder.WithPredicates(filter, changedByOthers())).
		WithOptions(options).
		Watches(&clusterv1.Machine{},
			handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(infrav1.GroupVersion.WithKind("PacketMachine"))),
			builder.WithPredicates(filter, machineSpecChanged()),
		).
		Watches(&infrav1.PacketCluster{},
			handler.EnqueueRequestsFromMapFunc(r.packetClusterToPacketMachines),
			builder.WithPredicates(filter, packetClusterChanged()),
		).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(r.clusterToPacketMachines),
			builder.WithPredicates(filter, predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log)),
		).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToPacketMachines), builder.OnlyMetadata).
		Complete(r)
}

// Reconcile runs Cluster API's canonical preamble, then creates, follows or deletes the device.
func (r *PacketMachineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)
	pm := &infrav1.PacketMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, pm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	machine, cluster, err := r.owners(ctx, pm)
	if machine == nil || cluster == nil || err != nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, log.WithValues("Machine", klog.KObj(machine), "Cluster", klog.KObj(cluster)))

	if err := scope.DropInvalidConditions(ctx, r.Client, pm); err != nil { // the previous provider's
		return ctrl.Result{}, err
	}
	// A paused machine, or one whose Paused condition changes, has it patched in place by Cluster
	// API's helper; a new machine's NotPaused is written by the scope with the rest (see notPaused).
	if annotations.IsPaused(cluster, pm) || conditions.Has(pm, clusterv1.PausedCondition) {
		if isPaused, _, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, pm); err != nil || isPaused {
			return ctrl.Result{}, err
		}
	}
	pc, err := r.packetClusterFor(ctx, pm, cluster)
	if err != nil || pc == nil {
		return ctrl.Result{}, err
	}

	creds, packetClient, credErr := r.credentials.Connect(ctx, pc)
	s, err := scope.NewMachineScope(scope.MachineScopeParams{Client: r.Client, Cluster: cluster, Machine: machine,
		PacketCluster: pc, PacketMachine: pm, Packet: packetClient, Credentials: creds, APIReader: r.APIReader,
		ManagementCluster: r.ManagementCluster, AdoptLegacy: adoptsLegacy(r.LegacyAdoptionNamespaces, pm.Namespace)})
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		err := s.Close(ctx)
		switch {
		case err == nil:
		case reterr == nil && apierrors.IsConflict(err):
			// The PacketMachine changed since it was read (Cluster API sets its owner and labels
			// while the first reconciles run): look again from the new copy. Not a failure to
			// back off from; backing off would slow every machine Cluster API just created.
			log.V(4).Info("The PacketMachine changed while it was reconciled; looking again")
			res = ctrl.Result{RequeueAfter: conflictRetry}
		default:
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()
	if !conditions.Has(pm, clusterv1.PausedCondition) {
		conditions.Set(pm, notPaused(pm))
	}
	if credErr != nil {
		return device.CredentialsFailed(pm, credErr)
	}

	if !pm.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// owners returns the PacketMachine's Machine and Cluster, or nil ones when there is nothing to
// do until they exist (a PacketMachine never adopted by a Machine loses its finalizer here). A
// PacketMachine being deleted after its Machine or Cluster is gone gets stand-ins built from
// what it knows, so that its device is deleted all the same.
func (r *PacketMachineReconciler) owners(ctx context.Context, pm *infrav1.PacketMachine) (*clusterv1.Machine, *clusterv1.Cluster, error) {
	log := ctrl.LoggerFrom(ctx)
	machine, err := util.GetOwnerMachine(ctx, r.Client, pm.ObjectMeta)
	if apierrors.IsNotFound(err) && !pm.DeletionTimestamp.IsZero() {
		log.Info("The PacketMachine's Machine is gone; deleting its device all the same")
		machine, err = standInMachine(pm), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if machine == nil {
		if !pm.DeletionTimestamp.IsZero() && pm.Spec.ProviderID == "" && pm.Annotations[device.CreateStartedAnnotation] == "" {
			// Never adopted by a Machine, so no device was ever asked for.
			return nil, nil, r.removeFinalizer(ctx, pm)
		}
		log.Info("Waiting for the Machine controller to set an OwnerRef on the PacketMachine")
		return nil, nil, nil
	}
	cluster, err := util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta)
	if apierrors.IsNotFound(err) && !pm.DeletionTimestamp.IsZero() && standInCluster(machine) != nil {
		log.Info("The PacketMachine's Cluster is gone; deleting its device all the same", "Machine", klog.KObj(machine))
		cluster, err = standInCluster(machine), nil
	}
	if err != nil {
		log.Info("Waiting for the Machine's cluster", "Machine", klog.KObj(machine), "reason", err.Error())
		return machine, nil, nil
	}
	return machine, cluster, nil
}

func (r *PacketMachineReconciler) reconcileNormal(ctx context.Context, s *scope.MachineScope) (ctrl.Result, error) {
	pm := s.PacketMachine
	// Written with this reconcile's first metadata patch: the one recording a create in flight,
	// before the create is sent, if not before. No device exists without it.
	controllerutil.AddFinalizer(pm, infrav1.PacketMachineFinalizer)
	// The gates only hold back the create: a device that exists is followed whatever happens
	// to the cluster or the bootstrap data.
	if s.DeviceID() == "" {
		if !s.Cluster.DeletionTimestamp.IsZero() || !s.PacketCluster.DeletionTimestamp.IsZero() {
			// A device created now would outlive the cluster's credentials and elastic IP.
			device.SetWaiting(pm, infrav1.WaitingForClusterInfrastructureReason, "The cluster is being deleted; no device is created for it")
			return ctrl.Result{}, nil
		}
		if !ptr.Deref(s.Cluster.Status.Initialization.InfrastructureProvisioned, false) {
			device.SetWaiting(pm, infrav1.WaitingForClusterInfrastructureReason, "Waiting for the cluster's infrastructure to be provisioned")
			return ctrl.Result{}, nil
		}
		if s.Machine.Spec.Bootstrap.DataSecretName == nil {
			device.SetWaiting(pm, infrav1.WaitingForBootstrapDataReason, "Waiting for the Machine's bootstrap data secret")
			return ctrl.Result{}, nil
		}
	}

	dev, res, err := device.NewService(s, r.deviceOptions()).Reconcile(ctx)
	if dev == nil || err != nil {
		return followFirst(s, res), err
	}
	if res, err := elasticip.NewAssignService(s).Reconcile(ctx, dev); err != nil || !res.IsZero() {
		return res, err
	}
	if res, err := bgp.NewSessionService(s).Reconcile(ctx, dev); err != nil || !res.IsZero() {
		return res, err
	}
	if res, err := network.NewService(s).Reconcile(ctx, dev); err != nil || !res.IsZero() {
		return res, err
	}
	// After the network: a layer-2 port loses the public address an origin needs.
	if res, err := loadbalancer.NewOriginService(s).Reconcile(ctx, dev); err != nil || !res.IsZero() {
		return res, err
	}
	for _, c := range []string{infrav1.ElasticIPAssignedCondition, infrav1.BGPSessionReadyCondition,
		infrav1.NetworkReadyCondition, infrav1.LoadBalancerOriginReadyCondition} {
		if !conditions.IsTrue(pm, c) {
			return ctrl.Result{}, nil
		}
	}
	if !ptr.Deref(pm.Status.Initialization.Provisioned, false) {
		record.Eventf(pm, "MachineProvisioned", "Device %s is provisioned", dev.ID)
	}
	pm.Status.Initialization.Provisioned = ptr.To(true)
	return res, nil // a spot device is looked at again, for a termination notice
}

// followPriority ranks the next look at a device that exists above creating new ones (priority
// 0). With a thousand machines created at once the workqueue holds a thousand creates, which
// the request budget lets through at a few a second; a look at a device that may have turned
// active queued behind them would report the machine minutes late. The look itself is mostly
// answered from the client's device snapshot, so putting it first costs the creates little.
const followPriority = 10

// followFirst gives a timed look at the machine's recorded device followPriority.
func followFirst(s *scope.MachineScope, res ctrl.Result) ctrl.Result {
	if s.DeviceID() != "" && res.RequeueAfter > 0 {
		res.Priority = ptr.To(followPriority)
	}
	return res
}

func (r *PacketMachineReconciler) reconcileDelete(ctx context.Context, s *scope.MachineScope) (ctrl.Result, error) {
	// The load balancer stops sending to the device before it shuts down.
	if res, err := loadbalancer.NewOriginService(s).Delete(ctx); err != nil || !res.IsZero() {
		return res, err
	}
	done, res, err := device.NewService(s, r.deviceOptions()).Delete(ctx)
	if err != nil || !done {
		return res, err
	}
	controllerutil.RemoveFinalizer(s.PacketMachine, infrav1.PacketMachineFinalizer)
	return ctrl.Result{}, nil
}

func (r *PacketMachineReconciler) deviceOptions() device.Options {
	return device.Options{PollMin: r.PollMin, PollMax: r.PollMax, CreateConfirmWindow: r.CreateConfirmWindow,
		Now: r.Now, Progress: r.progress, SentCreates: r.sentCreates, SnapshotMaxAge: r.SnapshotMaxAge}
}

// notPaused is the Paused condition Cluster API's paused.EnsurePausedCondition gives an object
// that is not paused. That helper writes it in a patch of its own; a new machine's is set here
// and written with the first status patch instead, one request fewer per machine.
func notPaused(pm *infrav1.PacketMachine) metav1.Condition {
	return metav1.Condition{Type: clusterv1.PausedCondition, Status: metav1.ConditionFalse,
		Reason: clusterv1.NotPausedReason, ObservedGeneration: pm.Generation}
}

// removeFinalizer drops the finalizer of a PacketMachine that no Machine ever adopted.
func (r *PacketMachineReconciler) removeFinalizer(ctx context.Context, pm *infrav1.PacketMachine) error {
	if !controllerutil.ContainsFinalizer(pm, infrav1.PacketMachineFinalizer) {
		return nil
	}
	orig := pm.DeepCopy()
	controllerutil.RemoveFinalizer(pm, infrav1.PacketMachineFinalizer)
	return r.Client.Patch(ctx, pm, client.MergeFrom(orig))
}
