package e2e

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

var _ = Describe("Quick start", func() {
	It("brings the default flavour up to a workload cluster whose Nodes are the devices, follows power and scale, and deletes cleanly", func(ctx SpecContext) {
		ns := testNamespace(ctx, "quick-start")
		const name = "quick-start"

		By("applying the default flavour with 1 control plane and 2 workers (clusterctl generate cluster)")
		start := time.Now()
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "", "--control-plane-machine-count", "1", "--worker-machine-count", "2"))

		By("the PacketCluster gets an elastic IP endpoint, and the control plane's device the IP (CPEM)")
		pc := waitClusterProvisioned(ctx, ns, name)
		eip := pc.Spec.ControlPlaneEndpoint.Host
		Eventually(func(g Gomega) {
			devices := devicesOf(ctx, g, ns)
			g.Expect(devices).NotTo(BeEmpty())
			cp := devices[0]
			g.Expect(cp.Tags).To(ContainElement(infrav1.RoleTag(true)))
			d, err := sim.Device(ctx, cp.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.UserData).To(ContainSubstring("kubeadm init"))
			g.Expect(slices.ContainsFunc(d.Network, func(ip IP) bool { return ip.Address == eip })).To(BeTrue(),
				"device %s has the elastic IP %s among %v", d.ID, eip, d.Network)
		}).WithContext(ctx).Should(Succeed())

		By("the Cluster becomes Available: control plane 1/1 initialized, MachineDeployment 2/2, every Machine's Node healthy")
		waitClusterAvailable(ctx, ns, name, 1, 2, 4*time.Minute)
		GinkgoWriter.Printf("quick start: kubectl apply to Cluster Available in %s\n", time.Since(start).Round(time.Second))
		expectNodesMatchMachines(ctx, ns, name)

		By("powering a worker's device off through the Packet API makes its Node NotReady, and on again Ready")
		worker := workerMachine(ctx, ns, name)
		deviceID := worker.Spec.ProviderID[len(infrav1.ProviderIDPrefix):]
		Expect(sim.DeviceAction(ctx, deviceID, "power_off")).To(Succeed())
		wc := workloadClient(ctx, ns, name)
		Eventually(func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(wc.Get(ctx, client.ObjectKey{Name: worker.Status.NodeRef.Name}, n)).To(Succeed())
			g.Expect(nodeReady(*n)).To(Equal(corev1.ConditionUnknown))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			m := &clusterv1.Machine{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(worker), m)).To(Succeed())
			g.Expect(conditionStatus(m.Status.Conditions, clusterv1.MachineNodeHealthyCondition)).NotTo(Equal(metav1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "Cluster API sees the Node unhealthy")
		Eventually(func() error { return sim.DeviceAction(ctx, deviceID, "power_on") }).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(wc.Get(ctx, client.ObjectKey{Name: worker.Status.NodeRef.Name}, n)).To(Succeed())
			g.Expect(nodeReady(*n)).To(Equal(corev1.ConditionTrue))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("scaling the MachineDeployment 2 → 5 → 1: devices and Nodes follow, none left over")
		for _, replicas := range []int32{5, 1} {
			scaleMachineDeployment(ctx, ns, name+"-worker-a", replicas)
			waitClusterAvailable(ctx, ns, name, 1, replicas, 4*time.Minute)
			Eventually(func(g Gomega) { g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(int(1 + replicas))) }).WithContext(ctx).Should(Succeed())
			expectNodesMatchMachines(ctx, ns, name)
		}

		By("deleting the Cluster removes every Machine, device and elastic IP")
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		Eventually(func(g Gomega) {
			machines := &clusterv1.MachineList{}
			g.Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
			g.Expect(machines.Items).To(BeEmpty())
			g.Expect(devicesOf(ctx, g, ns)).To(BeEmpty())
			ips, err := sim.IPReservations(ctx, ns+"/")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ips).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})
})

// workerMachine returns a running worker Machine of the cluster with its Node.
func workerMachine(ctx context.Context, ns, cluster string) *clusterv1.Machine {
	machines := &clusterv1.MachineList{}
	Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster},
		client.HasLabels{clusterv1.MachineDeploymentNameLabel})).To(Succeed())
	for i := range machines.Items {
		if m := &machines.Items[i]; m.Status.NodeRef.IsDefined() && m.Spec.ProviderID != "" {
			return m
		}
	}
	Fail("no worker Machine with a Node")
	return nil
}

func scaleMachineDeployment(ctx context.Context, ns, name string, replicas int32) {
	md := &clusterv1.MachineDeployment{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To(replicas)
	Expect(k8s.Patch(ctx, md, patch)).To(Succeed())
}

func conditionStatus(conds []metav1.Condition, t string) metav1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
