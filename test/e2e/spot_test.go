package e2e

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// The sandbox's clusters run in metro sv on c3.small.x86; the spot-workers flavour bids 0.50.
const (
	spotMetro = "sv"
	spotPlan  = "c3.small.x86"
)

var _ = Describe("Spot workers", func() {
	It("labels spot workers interruptible, and replaces the workers Packet reclaims when the market rises", func(ctx SpecContext) {
		ns := testNamespace(ctx, "spot")
		const name = "spot"
		market, err := sim.SpotPrice(ctx, spotMetro, spotPlan)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(sim.SetSpotPrice(ctx, spotMetro, spotPlan, market)).To(Succeed()) })

		By("applying the spot-workers flavour: an on-demand control plane, 2 workers bidding 0.50")
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "spot-workers", "--control-plane-machine-count", "1", "--worker-machine-count", "2"))
		waitClusterAvailable(ctx, ns, name, 1, 2, 4*time.Minute)
		expectNodesMatchMachines(ctx, ns, name)

		By("the workers are spot devices and their Nodes are labelled interruptible; the control plane is neither")
		oldWorkers := spotWorkers(ctx, ns, name)
		Expect(oldWorkers).To(HaveLen(2))
		for _, d := range devicesOf(ctx, Default, ns) {
			Expect(d.SpotInstance).To(Equal(!slices.Contains(d.Tags, infrav1.RoleTag(true))), "device %s", d.Hostname)
		}
		wc := workloadClient(ctx, ns, name)
		Eventually(func(g Gomega) {
			nodes := &corev1.NodeList{}
			g.Expect(wc.List(ctx, nodes)).To(Succeed())
			g.Expect(nodes.Items).To(HaveLen(3))
			for _, n := range nodes.Items {
				_, controlPlane := n.Labels["node-role.kubernetes.io/control-plane"]
				_, interruptible := n.Labels[clusterv1.InterruptibleLabel]
				g.Expect(interruptible).To(Equal(!controlPlane), "node %s", n.Name)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("the market rising above the bid: Packet gives each worker notice, and the PacketMachines say so")
		Expect(sim.SetSpotPrice(ctx, spotMetro, spotPlan, 0.75)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, pm := range oldWorkers {
				cur := &infrav1.PacketMachine{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pm), cur)).To(Succeed())
				c := conditions.Get(cur, infrav1.DeviceReadyCondition)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(infrav1.DeviceTerminationScheduledReason), "%s: %s", pm.Name, c.Message)
			}
		}).WithContext(ctx).WithTimeout(50 * time.Second).WithPolling(time.Second).Should(Succeed())
		By("the market falling back, so that replacements can be bought")
		Expect(sim.SetSpotPrice(ctx, spotMetro, spotPlan, market)).To(Succeed())

		By("Packet reclaims the devices at their termination time; Cluster API replaces the Machines")
		Eventually(func(g Gomega) {
			for _, pm := range oldWorkers {
				_, err := sim.Device(ctx, deviceIDOf(pm))
				g.Expect(err).To(MatchError(ContainSubstring("404")), "device of %s", pm.Name)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		reclaimed := time.Now()
		Eventually(func(g Gomega) {
			current := spotWorkers(ctx, ns, name)
			for _, pm := range current {
				g.Expect(pm.Name).NotTo(BeElementOf(names(oldWorkers)), "the reclaimed machines are replaced, not revived")
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		waitClusterAvailable(ctx, ns, name, 1, 2, 4*time.Minute)
		GinkgoWriter.Printf("spot workers: devices reclaimed to both replacement Nodes Ready in %s\n", time.Since(reclaimed).Round(time.Second))
		expectNodesMatchMachines(ctx, ns, name)
		Expect(devicesOf(ctx, Default, ns)).To(HaveLen(3), "one device per Machine, no leftovers")

		By("deleting the Cluster leaves nothing behind")
		deleteClusterAndExpectNoDevices(ctx, ns, name)
	})
})

// spotWorkers lists the cluster's worker PacketMachines that have a device.
func spotWorkers(ctx context.Context, ns, cluster string) []infrav1.PacketMachine {
	pms := &infrav1.PacketMachineList{}
	Expect(k8s.List(ctx, pms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster})).To(Succeed())
	return slices.DeleteFunc(pms.Items, func(pm infrav1.PacketMachine) bool {
		_, controlPlane := pm.Labels[clusterv1.MachineControlPlaneLabel]
		return controlPlane || pm.Spec.ProviderID == ""
	})
}

func deviceIDOf(pm infrav1.PacketMachine) string {
	return pm.Spec.ProviderID[len(infrav1.ProviderIDPrefix):]
}

func names(pms []infrav1.PacketMachine) []string {
	out := make([]string, 0, len(pms))
	for _, pm := range pms {
		out = append(out, pm.Name)
	}
	return out
}
