package e2e

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// Helpers for specs that run workload clusters: the simulator's devices boot their user-data
// (test/infrastructure/bootemu), so Cluster API reaches a real-looking workload API server.

// workloadClient reaches the workload cluster the way `clusterctl get kubeconfig` users do:
// through the kubeconfig Secret Cluster API writes.
func workloadClient(ctx context.Context, ns, name string) client.Client {
	s := &corev1.Secret{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-kubeconfig"}, s)
	}).WithContext(ctx).Should(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["value"])
	Expect(err).NotTo(HaveOccurred())
	cfg.Timeout = 10 * time.Second
	c, err := client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// waitClusterAvailable waits for the Cluster to be Available with its control plane and every
// MachineDeployment ready, and every Machine Running with a healthy Node.
func waitClusterAvailable(ctx context.Context, ns, name string, controlPlanes, workers int32, timeout time.Duration) {
	Eventually(func(g Gomega) {
		c := &clusterv1.Cluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
		g.Expect(conditions.IsTrue(c, clusterv1.AvailableCondition)).To(BeTrue(), "Cluster %s Available: %v", name,
			conditions.Get(c, clusterv1.AvailableCondition))

		kcps := &controlplanev1.KubeadmControlPlaneList{}
		g.Expect(k8s.List(ctx, kcps, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name})).To(Succeed())
		g.Expect(kcps.Items).To(HaveLen(1))
		kcp := kcps.Items[0]
		g.Expect(kcp.Status.Initialization.ControlPlaneInitialized).To(HaveValue(BeTrue()), "control plane initialized")
		g.Expect(kcp.Status.ReadyReplicas).To(HaveValue(Equal(controlPlanes)), "control plane ready replicas")
		g.Expect(kcp.Status.UpToDateReplicas).To(HaveValue(Equal(controlPlanes)), "control plane up-to-date replicas")

		mds := &clusterv1.MachineDeploymentList{}
		g.Expect(k8s.List(ctx, mds, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name})).To(Succeed())
		var ready int32
		for _, md := range mds.Items {
			ready += ptr.Deref(md.Status.ReadyReplicas, 0)
		}
		g.Expect(ready).To(Equal(workers), "ready workers")

		machines := &clusterv1.MachineList{}
		g.Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name})).To(Succeed())
		g.Expect(machines.Items).To(HaveLen(int(controlPlanes + workers)))
		for _, m := range machines.Items {
			g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "Machine %s phase", m.Name)
			g.Expect(conditions.IsTrue(&m, clusterv1.MachineNodeHealthyCondition)).To(BeTrue(), "Machine %s NodeHealthy: %v",
				m.Name, conditions.Get(&m, clusterv1.MachineNodeHealthyCondition))
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())
}

// expectNodesMatchMachines checks that the workload cluster's Nodes are exactly the Machines'
// devices: one Node per PacketMachine, with its providerID, Ready.
func expectNodesMatchMachines(ctx context.Context, ns, name string) {
	wc := workloadClient(ctx, ns, name)
	Eventually(func(g Gomega) {
		pms := &infrav1.PacketMachineList{}
		g.Expect(k8s.List(ctx, pms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name})).To(Succeed())
		var want []string
		for _, pm := range pms.Items {
			want = append(want, pm.Spec.ProviderID)
		}
		nodes := &corev1.NodeList{}
		g.Expect(wc.List(ctx, nodes)).To(Succeed())
		var got []string
		for _, n := range nodes.Items {
			got = append(got, n.Spec.ProviderID)
			g.Expect(nodeReady(n)).To(Equal(corev1.ConditionTrue), "node %s Ready", n.Name)
		}
		g.Expect(got).To(ConsistOf(want), "the workload cluster's nodes are the PacketMachines' devices")
	}).WithContext(ctx).Should(Succeed())
}

func nodeReady(n corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
