package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// managementClusterTag is the tag of the suite's management cluster, the envtest kube-apiserver.
func managementClusterTag() string {
	identity, err := scope.ManagementClusterIdentity(ctx, k8sClient)
	Expect(err).NotTo(HaveOccurred())
	Expect(identity).NotTo(BeEmpty())
	return infrav1.ManagementClusterTag(identity)
}

var _ = Describe("The management cluster's tag", func() {
	It("is on what the controllers make, and replaces another management cluster's on a moved cluster's device", func() {
		ours := managementClusterTag()
		source := infrav1.ManagementClusterTag("the-management-cluster-it-came-from")

		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		Expect(endpointReservations(mc.ns, mc.name)).To(ConsistOf(HaveField("Tags", ContainElement(ours))),
			"the elastic IP is reserved with the tag")
		fresh := mc.createMachine("fresh", machineOpts{controlPlane: true})
		Expect(oneDevice(fresh).Tags).To(ContainElement(ours), "a device is created with the tag")

		By("a device that clusterctl moved here with its PacketMachine, tagged by the management cluster it came from")
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		moved, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "moved", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly",
			Tags: []string{infrav1.ClusterTag(mc.ns, mc.name), infrav1.RoleTag(false), source}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute)
		mc.createMachine("moved", machineOpts{spec: infrav1.PacketMachineSpec{ProviderID: infrav1.ProviderIDPrefix + moved.ID}})
		Eventually(func() []string { d, _ := sim.Device(moved.ID); return d.Tags }, eventually).Should(And(
			ContainElement(ours), Not(ContainElement(source)), ContainElement(infrav1.ClusterTag(mc.ns, mc.name))))
	})

	It("comes off an elastic IP that the Retain policy keeps, so that no janitor sweeps it", func() {
		ns := newNamespace()
		createCluster(ns, "kept", infrav1.PacketClusterSpec{Metro: "sv", ElasticIPReclaimPolicy: infrav1.ElasticIPReclaimRetain})
		Eventually(provisioned(ns, "kept"), eventually).Should(Succeed())
		Expect(endpointReservations(ns, "kept")).To(ConsistOf(HaveField("Tags", ContainElement(HavePrefix(infrav1.ManagementClusterTagPrefix)))))
		Expect(k8sClient.Delete(ctx, getPacketCluster(ns, "kept"))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		Expect(endpointReservations(ns, "kept")).To(ConsistOf(HaveField("Tags", And(
			ContainElement(infrav1.ControlPlaneEndpointTag(ns, "kept")), Not(ContainElement(HavePrefix(infrav1.ManagementClusterTagPrefix)))))))
	})
})
