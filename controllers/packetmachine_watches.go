package controllers

import (
	"context"
	"maps"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
)

// Watches. Every reconcile of a machine with a device costs a Packet API call (the device GET),
// so the controller reacts to what others change, not to its own status writes or to the status
// churn of the objects it watches. Timed looks at provisioning devices come from RequeueAfter.

// clusterToPacketMachines maps a Cluster to the PacketMachines of its Machines, by the names in
// the Machines' infrastructureRef (a PacketMachine need not share its Machine's name).
func (r *PacketMachineReconciler) clusterToPacketMachines(ctx context.Context, o client.Object) []reconcile.Request {
	return r.machinesOfCluster(ctx, o.GetNamespace(), o.GetName())
}

// packetClusterToPacketMachines maps a PacketCluster to the PacketMachines of its cluster.
func (r *PacketMachineReconciler) packetClusterToPacketMachines(ctx context.Context, o client.Object) []reconcile.Request {
	return r.machinesOfCluster(ctx, o.GetNamespace(), clusterNameOf(o))
}

// clusterNameOf is the name of the Cluster a PacketCluster belongs to, from its label or its
// owner reference; "" before it is known.
func clusterNameOf(o client.Object) string {
	if name := o.GetLabels()[clusterv1.ClusterNameLabel]; name != "" {
		return name
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Cluster" {
			return ref.Name
		}
	}
	return ""
}

func (r *PacketMachineReconciler) machinesOfCluster(ctx context.Context, namespace, clusterName string) []reconcile.Request {
	if clusterName == "" {
		return nil
	}
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Machines of a cluster", "cluster", clusterName)
		return nil
	}
	return r.packetMachinesOf(machines.Items)
}

// packetMachinesOf returns the PacketMachines of the Machines, skipping Machines outside the
// controller's watch filter.
func (r *PacketMachineReconciler) packetMachinesOf(machines []clusterv1.Machine) []reconcile.Request {
	gk := infrav1.GroupVersion.WithKind("PacketMachine").GroupKind()
	var requests []reconcile.Request
	for _, m := range machines {
		if r.WatchFilterValue != "" && m.Labels[clusterv1.WatchLabel] != r.WatchFilterValue {
			continue
		}
		if m.Spec.InfrastructureRef.GroupKind() == gk && m.Spec.InfrastructureRef.Name != "" {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{
				Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}})
		}
	}
	return requests
}

// ownAnnotations are the PacketMachine annotations the controller writes itself. The identity,
// project and credentials are recorded with the create-started time: passing that write would
// reconcile the machine again at once, for nothing. The identity is never changed once set (the
// webhook refuses it), so no one else's change is missed.
var ownAnnotations = []string{
	device.CreateStartedAnnotation, device.CreateRetryAnnotation, device.DeleteRequestedAnnotation,
	device.ProjectAnnotation, device.CredentialsAnnotation, infrav1.MachineIdentityAnnotation,
}

// changedByOthers passes PacketMachine updates that someone else made: spec (other than the
// providerID the controller records), labels, annotations (other than its own bookkeeping),
// owner references, finalizers (other than its own) and deletion. Status writes, the
// controller's own, do not pass, and neither does the PacketMachine's removal: its finalizer
// held it until its device was gone, so a reconcile would only find it missing.
func changedByOthers() predicate.Funcs {
	return predicate.Funcs{DeleteFunc: nothingLeftToDo, UpdateFunc: func(e event.UpdateEvent) bool {
		oldPM, okOld := e.ObjectOld.(*infrav1.PacketMachine)
		newPM, okNew := e.ObjectNew.(*infrav1.PacketMachine)
		if !okOld || !okNew {
			return true
		}
		oldSpec, newSpec := oldPM.Spec, newPM.Spec
		oldSpec.ProviderID, newSpec.ProviderID = "", ""
		oldMeta, newMeta := oldPM.ObjectMeta, newPM.ObjectMeta
		oldMeta.Finalizers, newMeta.Finalizers = othersFinalizers(oldMeta.Finalizers), othersFinalizers(newMeta.Finalizers)
		return !reflect.DeepEqual(oldSpec, newSpec) || metaChanged(oldMeta, newMeta, ownAnnotations...)
	}}
}

// nothingLeftToDo drops the removal of an object: what it meant for a PacketMachine was acted
// on when its deletion began.
func nothingLeftToDo(event.DeleteEvent) bool { return false }

// othersFinalizers are the finalizers other than the controller's own.
func othersFinalizers(finalizers []string) []string {
	return slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == infrav1.PacketMachineFinalizer })
}

// machineSpecChanged passes Machine updates that matter to the PacketMachine: its spec (the
// bootstrap data secret, failure domain, version — not the providerID copied from the
// PacketMachine), labels, annotations, owners and deletion. Machine status churn does not pass,
// nor the Machine's removal: Cluster API removes a Machine after its PacketMachine.
func machineSpecChanged() predicate.Funcs {
	return predicate.Funcs{DeleteFunc: nothingLeftToDo, UpdateFunc: func(e event.UpdateEvent) bool {
		oldM, okOld := e.ObjectOld.(*clusterv1.Machine)
		newM, okNew := e.ObjectNew.(*clusterv1.Machine)
		if !okOld || !okNew {
			return true
		}
		oldSpec, newSpec := oldM.Spec, newM.Spec
		oldSpec.ProviderID, newSpec.ProviderID = "", ""
		return !reflect.DeepEqual(oldSpec, newSpec) || metaChanged(oldM.ObjectMeta, newM.ObjectMeta)
	}}
}

// packetClusterChanged passes PacketCluster updates that can unblock or change machines: spec,
// metadata, and provisioned or the control-plane endpoint's condition turning.
func packetClusterChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPC, okOld := e.ObjectOld.(*infrav1.PacketCluster)
		newPC, okNew := e.ObjectNew.(*infrav1.PacketCluster)
		if !okOld || !okNew {
			return true
		}
		return oldPC.Generation != newPC.Generation ||
			!reflect.DeepEqual(oldPC.Status.Initialization, newPC.Status.Initialization) ||
			conditions.IsTrue(oldPC, infrav1.ControlPlaneEndpointReadyCondition) != conditions.IsTrue(newPC, infrav1.ControlPlaneEndpointReadyCondition) ||
			metaChanged(oldPC.ObjectMeta, newPC.ObjectMeta)
	}}
}

// metaChanged compares the metadata a controller acts on, ignoring the given annotations.
func metaChanged(a, b metav1.ObjectMeta, ignoredAnnotations ...string) bool {
	annA, annB := maps.Clone(a.Annotations), maps.Clone(b.Annotations)
	for _, k := range ignoredAnnotations {
		delete(annA, k)
		delete(annB, k)
	}
	return !maps.Equal(a.Labels, b.Labels) || !maps.Equal(annA, annB) ||
		!reflect.DeepEqual(a.OwnerReferences, b.OwnerReferences) ||
		!slices.Equal(a.Finalizers, b.Finalizers) ||
		!a.DeletionTimestamp.Equal(b.DeletionTimestamp)
}

// bootstrapSecretIndex indexes Machines by the name of their bootstrap data Secret.
const bootstrapSecretIndex = "spec.bootstrap.dataSecretName" //nolint:gosec // a field path, not a credential

func indexBootstrapSecret(o client.Object) []string {
	m, ok := o.(*clusterv1.Machine)
	if !ok || m.Spec.Bootstrap.DataSecretName == nil {
		return nil
	}
	return []string{*m.Spec.Bootstrap.DataSecretName}
}

// secretToPacketMachines maps a Secret to the PacketMachines that read it: those whose Machine
// boots from it, and every machine of a cluster whose credentialsRef names it. A fixed bootstrap
// or credentials Secret is then acted on at once, not at the next slow retry. The Secret carries
// no watch-filter label, so the filter is applied to the Machines instead.
func (r *PacketMachineReconciler) secretToPacketMachines(ctx context.Context, o client.Object) []reconcile.Request {
	log := ctrl.LoggerFrom(ctx)
	r.credentials.Observe(ctx, o)
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{bootstrapSecretIndex: o.GetName()}); err != nil {
		log.Error(err, "Listing the Machines that boot from a Secret", "Secret", o.GetName())
		return nil
	}
	requests := r.packetMachinesOf(machines.Items)
	for _, pc := range credentialsUsers(ctx, r.Client, o) {
		requests = append(requests, r.machinesOfCluster(ctx, pc.Namespace, clusterNameOf(&pc))...)
	}
	return requests
}

// credentialsUsers returns the PacketClusters of the Secret's namespace whose credentialsRef
// names it. A namespace holds few PacketClusters, so they are listed, not indexed.
func credentialsUsers(ctx context.Context, c client.Client, secret client.Object) []infrav1.PacketCluster {
	clusters := &infrav1.PacketClusterList{}
	if err := c.List(ctx, clusters, client.InNamespace(secret.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the PacketClusters that may use a Secret", "Secret", secret.GetName())
		return nil
	}
	var out []infrav1.PacketCluster
	for _, pc := range clusters.Items {
		if pc.Spec.CredentialsRef != nil && pc.Spec.CredentialsRef.Name == secret.GetName() {
			out = append(out, pc)
		}
	}
	return out
}
