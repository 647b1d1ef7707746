package controllers

import (
	"context"
	"maps"
	"reflect"

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
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind == "Cluster" {
				name = ref.Name
			}
		}
	}
	if name == "" {
		return nil
	}
	return r.machinesOfCluster(ctx, o.GetNamespace(), name)
}

func (r *PacketMachineReconciler) machinesOfCluster(ctx context.Context, namespace, clusterName string) []reconcile.Request {
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Machines of a cluster", "cluster", clusterName)
		return nil
	}
	gk := infrav1.GroupVersion.WithKind("PacketMachine").GroupKind()
	var requests []reconcile.Request
	for _, m := range machines.Items {
		if m.Spec.InfrastructureRef.GroupKind() == gk && m.Spec.InfrastructureRef.Name != "" {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{
				Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}})
		}
	}
	return requests
}

// ownAnnotations are the PacketMachine annotations the controller writes itself.
var ownAnnotations = []string{device.CreateStartedAnnotation, device.DeleteRequestedAnnotation}

// changedByOthers passes PacketMachine updates that someone else made: spec (other than the
// providerID the controller records), labels, annotations (other than its own bookkeeping),
// owner references, finalizers and deletion. Status writes, the controller's own, do not pass.
func changedByOthers() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPM, okOld := e.ObjectOld.(*infrav1.PacketMachine)
		newPM, okNew := e.ObjectNew.(*infrav1.PacketMachine)
		if !okOld || !okNew {
			return true
		}
		oldSpec, newSpec := oldPM.Spec, newPM.Spec
		oldSpec.ProviderID, newSpec.ProviderID = "", ""
		return !reflect.DeepEqual(oldSpec, newSpec) ||
			metaChanged(oldPM.ObjectMeta, newPM.ObjectMeta, ownAnnotations...)
	}}
}

// machineSpecChanged passes Machine updates that matter to the PacketMachine: its spec (the
// bootstrap data secret, failure domain, version — not the providerID copied from the
// PacketMachine), labels, annotations, owners and deletion. Machine status churn does not pass.
func machineSpecChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
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
		!reflect.DeepEqual(a.Finalizers, b.Finalizers) ||
		!a.DeletionTimestamp.Equal(b.DeletionTimestamp)
}
