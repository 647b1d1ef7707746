package controllers

import (
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// machineGoing passes the events of a PacketMachine that starts deleting or is gone: what may
// leave an EMLB cluster's load balancer with an origin too many. Roles are not told apart here:
// infrastructure machines need not carry Cluster API's control-plane label.
var machineGoing = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
	DeleteFunc: func(event.DeleteEvent) bool { return true },
}

// machineToEMLBCluster maps a PacketMachine to its cluster's PacketCluster when that is an EMLB
// cluster, whose load balancer removes the origins of machines that are gone (see
// loadbalancer.Service).
func (r *PacketClusterReconciler) machineToEMLBCluster(ctx context.Context, o client.Object) []reconcile.Request {
	clusterName := o.GetLabels()[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: clusterName}, cluster); err != nil {
		return nil
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "PacketCluster" || ref.APIGroup != infrav1.GroupVersion.Group {
		return nil
	}
	pc := &infrav1.PacketCluster{}
	key := client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}
	if err := r.Client.Get(ctx, key, pc); err != nil || pc.Spec.VIPManager != infrav1.EMLBVIPManager {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}
