package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// machineName names the i-th direct Machine.
func machineName(i int) string { return fmt.Sprintf("m-%02d", i) }

// expectMachinesAndDevices waits until ns has want Machines, all provisioned, and exactly as many
// devices of its clusters in the simulator.
func expectMachinesAndDevices(ctx context.Context, ns string, want int, timeout time.Duration) {
	Eventually(func(g Gomega) {
		provisioned, total := machinesProvisioned(ctx, g, ns)
		g.Expect(total).To(Equal(want), "Machines")
		g.Expect(provisioned).To(Equal(want), "Machines with infrastructure provisioned and a providerID")
		g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(want), "devices in the simulator")
	}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
}

func deleteMachines(ctx context.Context, ns string, from, to int) {
	for i := from; i < to; i++ {
		Expect(k8s.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: machineName(i)}})).To(Succeed())
	}
}

func deleteClusterAndExpectNoDevices(ctx context.Context, ns, name string) {
	Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	Eventually(func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
		g.Expect(machines.Items).To(BeEmpty(), "Machines")
		g.Expect(devicesOf(ctx, g, ns)).To(BeEmpty(), "devices in the simulator")
	}).WithContext(ctx).WithTimeout(4 * time.Minute).Should(Succeed())
}

var _ = Describe("Direct machines", func() {
	It("provisions 10 Machines with ready bootstrap data, and scaling them up and down keeps one device per Machine", func(ctx SpecContext) {
		ns := testNamespace(ctx, "direct")
		const cluster = "direct"
		newCluster(ctx, ns, cluster)
		waitClusterProvisioned(ctx, ns, cluster)

		By("creating 10 Machines whose bootstrap data secrets are ready")
		for i := range 10 {
			newMachine(ctx, ns, cluster, machineName(i))
		}
		expectMachinesAndDevices(ctx, ns, 10, 3*time.Minute)

		By("scaling down to 6")
		deleteMachines(ctx, ns, 6, 10)
		expectMachinesAndDevices(ctx, ns, 6, 2*time.Minute)

		By("scaling up to 9")
		for i := 10; i < 13; i++ {
			newMachine(ctx, ns, cluster, machineName(i))
		}
		expectMachinesAndDevices(ctx, ns, 9, 2*time.Minute)

		By("scaling down to 4")
		deleteMachines(ctx, ns, 0, 5)
		expectMachinesAndDevices(ctx, ns, 4, 2*time.Minute)

		By("deleting the Cluster removes every Machine and device")
		deleteClusterAndExpectNoDevices(ctx, ns, cluster)
	})
})

var _ = Describe("Faults", func() {
	It("ends with exactly 10 devices for 10 Machines, then 0 after deletion, with 10% 5xx, 5% 429 and 5% commit-then-fail injected", func(ctx SpecContext) {
		ns := testNamespace(ctx, "faults")
		const cluster = "faults"
		newCluster(ctx, ns, cluster)
		waitClusterProvisioned(ctx, ns, cluster)

		By("injecting 10% 5xx, 5% 429 and 5% commit-then-fail on every Packet API route")
		DeferCleanup(func(ctx SpecContext) { Expect(sim.ClearFaults(ctx)).To(Succeed()) })
		for _, f := range []Fault{
			{Kind: "http_error", Status: 503, Probability: 0.10},
			{Kind: "rate_limit", RetryAfter: 1, Probability: 0.05},
			{Kind: "commit_then_fail", Status: 500, Probability: 0.05},
		} {
			_, err := sim.InjectFault(ctx, f)
			Expect(err).NotTo(HaveOccurred())
		}
		before, err := sim.Requests(ctx)
		Expect(err).NotTo(HaveOccurred())

		By("creating 10 Machines whose bootstrap data secrets are ready")
		start := time.Now()
		for i := range 10 {
			newMachine(ctx, ns, cluster, machineName(i))
		}
		expectMachinesAndDevices(ctx, ns, 10, 5*time.Minute)
		provisioned := time.Since(start)
		Consistently(func(g Gomega) { g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(10)) }).
			WithContext(ctx).WithTimeout(10*time.Second).WithPolling(2*time.Second).Should(Succeed(), "no late duplicate device")

		after, err := sim.Requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		failed, lostCreates := 0, 0
		for _, r := range after[len(before):] {
			if r.Status >= 429 {
				failed++
			}
			if r.Status >= 500 && r.Route == "POST /projects/{id}/devices" {
				lostCreates++
			}
		}
		// A create answered with the injected 503 was not made and costs its machine the manager's
		// --device-create-confirm-window; one answered with the commit-then-fail 500 was made and is
		// adopted by its tags at the next look.
		fmt.Fprintf(GinkgoWriter, "provisioned in %s; %d of %d Packet API requests failed by injection, %d of them device creates\n",
			provisioned.Round(time.Second), failed, len(after)-len(before), lostCreates)
		Expect(failed).To(BeNumerically(">", 0), "the faults were injected")

		By("deleting the Cluster removes every device, faults still on")
		deleteClusterAndExpectNoDevices(ctx, ns, cluster)
	})
})
