package controllers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/remediation"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetremediations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetremediations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetremediationtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines/status,verbs=update;patch

// PacketRemediationReconciler runs the PacketRemediations a MachineHealthCheck creates for
// unhealthy Machines (Cluster API external remediation): reboot, reinstall, then replace.
type PacketRemediationReconciler struct {
	Client client.Client
	// APIReader reads the PacketRemediation from the API server before a device action, so a
	// stale cached copy never reboots or reinstalls twice. Nil: the check is skipped.
	APIReader client.Reader
	// Packet gives the Packet client for a set of credentials.
	Packet credentials.ClientProvider
	// DefaultAPIKey is the manager's own Packet API key, used when a PacketCluster has no
	// credentialsRef; DefaultKeyProjects the projects it may serve (empty: any).
	DefaultAPIKey      string
	DefaultKeyProjects []string
	// WatchFilterValue limits reconciles to objects with this cluster.x-k8s.io/watch-filter label.
	WatchFilterValue string
	// LegacyAdoptionNamespaces are the namespaces whose clusters may take over the previous
	// provider's objects, tagged with a cluster name but no namespace; "*" is every namespace.
	LegacyAdoptionNamespaces []string
	// Poll is how often a running step looks at the Machine (default 30s); Now is the clock
	// step timeouts are measured with (time.Now).
	Poll time.Duration
	Now  func() time.Time

	credentials *credentials.Source
}

// SetupWithManager registers the reconciler with mgr.
func (r *PacketRemediationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	r.credentials = credentialsSource(r.Client, r.Packet, r.DefaultAPIKey, r.DefaultKeyProjects)
	filter := predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.PacketRemediation{}, builder.WithPredicates(filter)).
		WithOptions(options).
		// A Machine's conditions (HealthCheckSucceeded, NodeHealthy) say when a step worked.
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToRemediation),
			builder.WithPredicates(filter)).
		Complete(r)
}

// machineToRemediation maps a Machine to the PacketRemediation of the same name, if there is one
// or if the Machine still carries the ExternallyRemediated condition (its request is gone and the
// condition may be cleared once the Machine is healthy).
func (r *PacketRemediationReconciler) machineToRemediation(ctx context.Context, o client.Object) []reconcile.Request {
	key := client.ObjectKeyFromObject(o)
	if m, ok := o.(*clusterv1.Machine); ok && conditions.Has(m, clusterv1.MachineExternallyRemediatedCondition) {
		return []reconcile.Request{{NamespacedName: key}}
	}
	if err := r.Client.Get(ctx, key, &infrav1.PacketRemediation{}); err != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// Reconcile runs Cluster API's canonical preamble, then one move of the remediation strategy.
func (r *PacketRemediationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)
	rem := &infrav1.PacketRemediation{}
	if err := r.Client.Get(ctx, req.NamespacedName, rem); err != nil {
		if apierrors.IsNotFound(err) {
			// The MachineHealthCheck deletes the request once the Machine is healthy again,
			// maybe before this controller saw it healthy.
			return ctrl.Result{}, r.clearMachineCondition(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	// The MachineHealthCheck deletes the request once the Machine is healthy; an ended one is
	// kept as it is for the record.
	if !rem.DeletionTimestamp.IsZero() || remediation.Ended(rem) {
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(rem, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := helper.Patch(ctx, rem, patch.WithOwnedConditions{Conditions: []string{
			clusterv1.PausedCondition, infrav1.RemediationSucceededCondition, infrav1.StepSucceededCondition,
			infrav1.PacketAPIAvailableCondition,
		}}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	machine, cluster, err := r.machineAndCluster(ctx, rem)
	if machine == nil || cluster == nil || err != nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, log.WithValues("Machine", klog.KObj(machine), "Cluster", klog.KObj(cluster)))
	if isPaused, _, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, rem); err != nil || isPaused {
		return ctrl.Result{}, err
	}

	return r.remediate(ctx, rem, machine, cluster)
}

// machineAndCluster returns the remediated Machine and its Cluster, or nil ones once the
// request was stopped because either is gone.
func (r *PacketRemediationReconciler) machineAndCluster(ctx context.Context, rem *infrav1.PacketRemediation) (*clusterv1.Machine, *clusterv1.Cluster, error) {
	machine, err := r.machineFor(ctx, rem)
	if err != nil {
		return nil, nil, err
	}
	if machine == nil || !machine.DeletionTimestamp.IsZero() {
		remediation.Stop(rem, infrav1.MachineNotFoundReason, fmt.Sprintf("Machine %s is gone or being deleted", rem.Name))
		return nil, nil, nil
	}
	cluster, err := util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta)
	if apierrors.IsNotFound(err) {
		remediation.Stop(rem, infrav1.MachineNotFoundReason, fmt.Sprintf("Machine %s's Cluster is gone", machine.Name))
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return machine, cluster, nil
}

// remediate takes one step of the strategy for the Machine's device and reflects where it
// stands on the Machine.
func (r *PacketRemediationReconciler) remediate(ctx context.Context, rem *infrav1.PacketRemediation, machine *clusterv1.Machine, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	pm, pc, err := r.infrastructureFor(ctx, machine, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pm == nil || pc == nil {
		remediation.Stop(rem, infrav1.DeviceNotFoundReason, fmt.Sprintf("Machine %s has no PacketMachine or its cluster no PacketCluster", machine.Name))
		return ctrl.Result{}, nil
	}
	creds, packetClient, credErr := r.credentials.Connect(ctx, pc)
	if credErr != nil {
		return remediation.CredentialsFailed(rem, credErr)
	}
	// Only read: the scope is never closed, so the PacketMachine is never patched from here.
	ms, err := scope.NewMachineScope(scope.MachineScopeParams{Client: r.Client, Cluster: cluster, Machine: machine,
		PacketCluster: pc, PacketMachine: pm, Packet: packetClient, Credentials: creds,
		AdoptLegacy: adoptsLegacy(r.LegacyAdoptionNamespaces, pm.Namespace)})
	if err != nil {
		return ctrl.Result{}, err
	}
	if current, err := r.isCurrent(ctx, rem); err != nil || !current {
		ctrl.LoggerFrom(ctx).V(4).Info("The cached PacketRemediation is behind the API server; looking again")
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	res, err := remediation.NewService(remediation.Params{Client: r.Client, Remediation: rem, Machine: ms,
		Poll: r.Poll, Now: r.Now}).Reconcile(ctx)
	if perr := r.reflectOnMachine(ctx, machine, rem); perr != nil {
		err = kerrors.NewAggregate([]error{err, perr})
	}
	return res, err
}

// reflectOnMachine keeps the Machine's ExternallyRemediated condition in step with the request.
// Cluster API's MachineHealthCheck sets it False (WaitingForRemediation) when it creates the
// request and leaves it to the external remediation from then on: False with the current step's
// reason and message while the remediation runs or after it stopped, removed once the Machine is
// healthy again.
func (r *PacketRemediationReconciler) reflectOnMachine(ctx context.Context, m *clusterv1.Machine, rem *infrav1.PacketRemediation) error {
	if rem.Status.Phase == infrav1.RemediationPhaseSucceeded {
		return r.setExternallyRemediated(ctx, m, nil)
	}
	state := conditions.Get(rem, infrav1.StepSucceededCondition)
	if rem.Status.Phase == infrav1.RemediationPhaseStopped || state == nil {
		state = conditions.Get(rem, infrav1.RemediationSucceededCondition)
	}
	if state == nil {
		return nil
	}
	return r.setExternallyRemediated(ctx, m, state)
}

// setExternallyRemediated sets the Machine's ExternallyRemediated condition False with state's
// reason and message, or removes it when state is nil. The patch helper writes nothing when
// the condition is already so.
func (r *PacketRemediationReconciler) setExternallyRemediated(ctx context.Context, m *clusterv1.Machine, state *metav1.Condition) error {
	helper, err := patch.NewHelper(m, r.Client)
	if err != nil {
		return err
	}
	if state == nil {
		conditions.Delete(m, clusterv1.MachineExternallyRemediatedCondition)
	} else {
		conditions.Set(m, metav1.Condition{Type: clusterv1.MachineExternallyRemediatedCondition, Status: metav1.ConditionFalse,
			Reason: state.Reason, Message: state.Message})
	}
	return helper.Patch(ctx, m, patch.WithOwnedConditions{Conditions: []string{clusterv1.MachineExternallyRemediatedCondition}})
}

// clearMachineCondition removes the ExternallyRemediated condition of a healthy Machine whose
// request is gone.
func (r *PacketRemediationReconciler) clearMachineCondition(ctx context.Context, key client.ObjectKey) error {
	m := &clusterv1.Machine{}
	if err := r.Client.Get(ctx, key, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	if m.Spec.InfrastructureRef.Kind != "PacketMachine" || !conditions.Has(m, clusterv1.MachineExternallyRemediatedCondition) ||
		!remediation.MachineHealthy(m, time.Time{}) {
		return nil
	}
	return r.setExternallyRemediated(ctx, m, nil)
}

// machineFor returns the remediated Machine: the owner the MachineHealthCheck set, else the
// Machine of the same name. Nil when it is gone.
func (r *PacketRemediationReconciler) machineFor(ctx context.Context, rem *infrav1.PacketRemediation) (*clusterv1.Machine, error) {
	m, err := util.GetOwnerMachine(ctx, r.Client, rem.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if m != nil {
		return m, nil
	}
	if len(rem.OwnerReferences) > 0 && apierrors.IsNotFound(err) {
		return nil, nil
	}
	m = &clusterv1.Machine{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rem), m); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return m, nil
}

// infrastructureFor returns the Machine's PacketMachine and the Cluster's PacketCluster; nil
// when one is gone or not a Packet one.
func (r *PacketRemediationReconciler) infrastructureFor(ctx context.Context, m *clusterv1.Machine, cluster *clusterv1.Cluster) (*infrav1.PacketMachine, *infrav1.PacketCluster, error) {
	ref := m.Spec.InfrastructureRef
	if ref.Kind != "PacketMachine" || ref.APIGroup != infrav1.GroupVersion.Group {
		return nil, nil, nil
	}
	pm := &infrav1.PacketMachine{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, pm); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	cref := cluster.Spec.InfrastructureRef
	if cref.Kind != "PacketCluster" {
		return nil, nil, nil
	}
	pc := &infrav1.PacketCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: cref.Name}, pc); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	return pm, pc, nil
}

// isCurrent reports whether the cached PacketRemediation is the API server's current one.
func (r *PacketRemediationReconciler) isCurrent(ctx context.Context, rem *infrav1.PacketRemediation) (bool, error) {
	if r.APIReader == nil {
		return true, nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(infrav1.GroupVersion.WithKind("PacketRemediation"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rem), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return live.ResourceVersion == rem.ResourceVersion, nil
}
