package e2e

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

var _ = Describe("Quick start", func() {
	It("provisions the default flavour's first control-plane Machine, and deleting the Cluster removes every Machine, device and elastic IP", func(ctx SpecContext) {
		ns := testNamespace(ctx, "quick-start")
		const name = "quick-start"

		By("applying the default flavour with 1 control plane and 2 workers (clusterctl generate cluster)")
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "", "--control-plane-machine-count", "1", "--worker-machine-count", "2"))

		By("the PacketCluster gets an elastic IP endpoint and is provisioned")
		pc := waitClusterProvisioned(ctx, ns, name)
		eip := pc.Spec.ControlPlaneEndpoint.Host
		Eventually(func(g Gomega) {
			ips, err := sim.IPReservations(ctx, ns+"/"+name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ips).To(ContainElement(HaveField("Address", eip)), "an elastic IP reservation tagged for the cluster holds %s", eip)
		}).WithContext(ctx).Should(Succeed())

		By("KubeadmControlPlane creates the first control-plane Machine")
		cp := &clusterv1.Machine{}
		Eventually(func(g Gomega) {
			machines := &clusterv1.MachineList{}
			g.Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.HasLabels{clusterv1.MachineControlPlaneLabel})).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(1))
			*cp = machines.Items[0]
		}).WithContext(ctx).Should(Succeed())

		By("its device is created with the kubeadm init user data")
		var device Device
		Eventually(func(g Gomega) {
			devices := devicesOf(ctx, g, ns)
			g.Expect(devices).To(HaveLen(1), "only the control plane gets a device: workers wait for it to initialize")
			device = devices[0]
			g.Expect(device.Tags).To(ContainElement(infrav1.RoleTag(true)))
		}).WithContext(ctx).Should(Succeed())
		full, err := sim.Device(ctx, device.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(full.UserData).To(ContainSubstring("kubeadm init"))

		By("the device turns active and gets the elastic IP (CPEM)")
		Eventually(func(g Gomega) {
			d, err := sim.Device(ctx, device.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.State).To(Equal("active"))
			g.Expect(slices.ContainsFunc(d.Network, func(ip IP) bool { return ip.Address == eip })).To(BeTrue(),
				"device %s has the elastic IP %s among %v", d.ID, eip, d.Network)
		}).WithContext(ctx).Should(Succeed())

		By("the Machine reports infrastructure provisioned with its providerID and addresses")
		Eventually(func(g Gomega) {
			m := &clusterv1.Machine{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cp), m)).To(Succeed())
			g.Expect(m.Status.Initialization.InfrastructureProvisioned).To(HaveValue(BeTrue()))
			g.Expect(m.Spec.ProviderID).To(Equal(infrav1.ProviderIDPrefix + device.ID))
			g.Expect(m.Status.Addresses).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())

		By("the two worker Machines exist and wait for the control plane to initialize (no workload API server)")
		Eventually(func(g Gomega) {
			machines := &clusterv1.MachineList{}
			g.Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: name + "-worker-a"})).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(2))
			for _, m := range machines.Items {
				g.Expect(ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false)).To(BeFalse())
			}
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(1)) }).WithContext(ctx).WithTimeout(5 * time.Second).Should(Succeed())

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
