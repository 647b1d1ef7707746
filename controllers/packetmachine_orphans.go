package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
)

// Orphans. A PacketMachine being deleted may have outlived its Machine or its Cluster: a
// finalizer removed by hand, or a Machine deleted with its finalizer stripped, after which the
// garbage collector deletes the PacketMachine it owned. Its device still runs, and is billed.
// Deleting it needs only the machine's identity (its own UID, the cluster's name, its role),
// which the PacketMachine carries, and the cluster's project and key, which the PacketCluster
// has: it waits for its PacketMachines before it goes, and if it went anyway, the PacketMachine
// recorded both when it asked for its device. So the missing owners are stood in for, for
// deletion only.

// standInMachine is the Machine a deleted PacketMachine had, as far as deleting its device needs:
// the owner's name, and the PacketMachine's labels (cluster name, control-plane role).
func standInMachine(pm *infrav1.PacketMachine) *clusterv1.Machine {
	name := pm.Name
	for _, ref := range pm.OwnerReferences {
		if ref.Kind == "Machine" {
			name = ref.Name
		}
	}
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: pm.Namespace, Name: name, Labels: pm.Labels}}
}

// standInCluster is the Cluster of a machine whose Cluster is gone; "" when the machine does not
// name one.
func standInCluster(m *clusterv1.Machine) *clusterv1.Cluster {
	name := m.Labels[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	return &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: name}}
}

// packetClusterFor returns the cluster's PacketCluster: the one its infrastructure reference
// names or, for a stand-in Cluster, the one the Cluster owned. nil means none yet (logged). A
// PacketMachine being deleted whose PacketCluster is gone (its finalizer removed by hand) gets
// one stood in for from the project and credentials Secret it recorded when it asked for its
// device.
func (r *PacketMachineReconciler) packetClusterFor(ctx context.Context, pm *infrav1.PacketMachine, cluster *clusterv1.Cluster) (*infrav1.PacketCluster, error) {
	log := ctrl.LoggerFrom(ctx)
	name, err := r.packetClusterName(ctx, cluster)
	if err != nil {
		return nil, err
	}
	pc := &infrav1.PacketCluster{}
	if name != "" {
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, pc)
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if err == nil {
			return pc, nil
		}
	}
	if recorded := device.RecordedPacketCluster(pm); recorded != nil && !pm.DeletionTimestamp.IsZero() {
		log.Info("The PacketMachine's PacketCluster is gone; deleting its device with the project and credentials it recorded")
		return recorded, nil
	}
	if name == "" {
		log.Info("Waiting for the Cluster to reference its PacketCluster")
	} else {
		log.Info("Waiting for the PacketCluster", "PacketCluster", name)
	}
	return nil, nil
}

func (r *PacketMachineReconciler) packetClusterName(ctx context.Context, cluster *clusterv1.Cluster) (string, error) {
	if cluster.Spec.InfrastructureRef.IsDefined() {
		return cluster.Spec.InfrastructureRef.Name, nil
	}
	if cluster.UID != "" {
		return "", nil // a real Cluster that does not reference one yet
	}
	list := &infrav1.PacketClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cluster.Namespace)); err != nil {
		return "", err
	}
	for _, pc := range list.Items {
		if clusterNameOf(&pc) == cluster.Name {
			return pc.Name, nil
		}
	}
	return "", nil
}
