package controllers

import (
	"context"
	"errors"
	"reflect"

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog/capacity"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetmachinetemplates,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=packetmachinetemplates/status,verbs=get;update;patch

// PacketMachineTemplateReconciler tells the cluster autoscaler what a machine of a template
// offers (status.capacity and status.nodeInfo), so that it can scale a node group up from zero.
type PacketMachineTemplateReconciler struct {
	Client client.Client
	// Packet gives the Packet client for a set of credentials.
	Packet credentials.ClientProvider
	// DefaultAPIKey is the manager's own Packet API key.
	DefaultAPIKey string
	// DefaultKeyProjects are the projects DefaultAPIKey may serve; empty: any.
	DefaultKeyProjects []string
	// WatchFilterValue limits reconciles to objects with this cluster.x-k8s.io/watch-filter label.
	WatchFilterValue string

	credentials *credentials.Source
}

// SetupWithManager registers the reconciler with mgr.
func (r *PacketMachineTemplateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	r.credentials = credentialsSource(r.Client, r.Packet, r.DefaultAPIKey, r.DefaultKeyProjects)
	return ctrl.NewControllerManagedBy(mgr).
		// The plan catalogue is read when the template appears, when its spec changes, and when
		// it gets its cluster (owner reference or label) — not on every resync.
		For(&infrav1.PacketMachineTemplate{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() || !reflect.DeepEqual(o.GetLabels(), n.GetLabels()) ||
				!reflect.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
				annotations.HasPaused(o) != annotations.HasPaused(n)
		}})).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		// A template seen before its cluster is ready (no PacketCluster yet, or paused) gets its
		// capacity once it is.
		Watches(&infrav1.PacketCluster{}, handler.EnqueueRequestsFromMapFunc(r.templatesOfPacketCluster),
			builder.WithPredicates(packetClusterChanged())).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.templatesOfCluster),
			builder.WithPredicates(predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log))).
		Complete(r)
}

func (r *PacketMachineTemplateReconciler) templatesOfPacketCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.templatesOf(ctx, o.GetNamespace(), clusterNameOf(o))
}

func (r *PacketMachineTemplateReconciler) templatesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.templatesOf(ctx, o.GetNamespace(), o.GetName())
}

// templatesOf returns the templates of a cluster, by the owner reference or label clusterOf
// reads; a namespace holds few templates.
func (r *PacketMachineTemplateReconciler) templatesOf(ctx context.Context, namespace, clusterName string) []reconcile.Request {
	if clusterName == "" {
		return nil
	}
	templates := &infrav1.PacketMachineTemplateList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the PacketMachineTemplates of a cluster", "cluster", clusterName)
		return nil
	}
	var requests []reconcile.Request
	for _, t := range templates.Items {
		if clusterNameOf(&t) == clusterName {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
		}
	}
	return requests
}

// Reconcile fills the template's status from the plan of its machines.
func (r *PacketMachineTemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	pmt := &infrav1.PacketMachineTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, pmt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pmt.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// The project and the credentials are the cluster's, so a template must belong to one.
	cluster, err := r.clusterOf(ctx, pmt)
	if err != nil || cluster == nil {
		log.V(4).Info("Waiting for the template to belong to a cluster")
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log = log.WithValues("Cluster", klog.KObj(cluster))
	if annotations.IsPaused(cluster, pmt) || !cluster.Spec.InfrastructureRef.IsDefined() {
		return ctrl.Result{}, nil
	}
	pc := &infrav1.PacketCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Spec.InfrastructureRef.Name}, pc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	_, pclient, err := r.credentials.Connect(ctx, pc)
	if err != nil {
		return ctrl.Result{RequeueAfter: apistatus.SlowRetry}, nil //nolint:nilerr // the PacketCluster reports its credentials.
	}

	plan := pmt.Spec.Template.Spec.MachineType
	machine, err := capacity.ForPlan(ctx, pclient, pc.Spec.ProjectID, plan)
	var unknown *capacity.ErrUnknownPlan
	if errors.As(err, &unknown) {
		record.Warnf(pmt, "UnknownPlan", "%s; the autoscaler cannot scale this template from zero", err)
		return ctrl.Result{RequeueAfter: apistatus.SlowRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	warnIfStorageExceedsPlan(pmt, machine)
	list, info := machine.Capacity, machine.NodeInfo
	if reflect.DeepEqual(pmt.Status.Capacity, list) && pmt.Status.NodeInfo == info {
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(pmt, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	pmt.Status.Capacity, pmt.Status.NodeInfo = list, info
	log.V(2).Info("Setting the template's capacity", "plan", plan)
	return ctrl.Result{}, helper.Patch(ctx, pmt)
}

// clusterOf returns the template's cluster: its owner Cluster (Cluster API sets it on the
// templates a cluster uses), else the cluster named by its cluster-name label.
func (r *PacketMachineTemplateReconciler) clusterOf(ctx context.Context, pmt *infrav1.PacketMachineTemplate) (*clusterv1.Cluster, error) {
	cluster, err := util.GetOwnerCluster(ctx, r.Client, pmt.ObjectMeta)
	if err != nil || cluster != nil {
		return cluster, err
	}
	if name := pmt.Labels[clusterv1.ClusterNameLabel]; name != "" {
		cluster = &clusterv1.Cluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pmt.Namespace, Name: name}, cluster); err != nil {
			return nil, err
		}
		return cluster, nil
	}
	return nil, nil
}

// warnIfStorageExceedsPlan says, before any machine is made of the template, that its disk
// layout names more disks than the plan's servers have: the webhook cannot tell without the
// catalogue, and Packet refuses the create of every machine of it.
func warnIfStorageExceedsPlan(pmt *infrav1.PacketMachineTemplate, machine capacity.Machine) {
	spec := pmt.Spec.Template.Spec
	if spec.Storage != nil && machine.Drives > 0 && len(spec.Storage.Disks) > machine.Drives {
		record.Warnf(pmt, "StorageExceedsPlan", "spec.template.spec.storage names %d disks; plan %s has %d: Packet refuses to create "+
			"the device of every machine of this template", len(spec.Storage.Disks), spec.MachineType, machine.Drives)
	}
}
