package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

var _ = Describe("PacketMachine reconciler, tenancy", func() {
	It("neither follows nor deletes a device of another cluster named in spec.providerID", func() {
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		foreign, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "other-team", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly", Tags: []string{infrav1.ClusterTag("other-team", "c1")}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute)

		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("thief", machineOpts{controlPlane: true,
			spec: infrav1.PacketMachineSpec{ProviderID: infrav1.ProviderIDPrefix + foreign.ID}})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.DeviceNotOwnedReason),
			HaveField("Message", ContainSubstring("does not carry the cluster's tag "+infrav1.ClusterTag(mc.ns, mc.name)))))
		Expect(getPM(pm).Status.Initialization.Provisioned).To(BeNil())

		By("deleting the machine leaves the other cluster's device and its addresses alone")
		deleteAndWait(pm)
		d, ok := sim.Device(foreign.ID)
		Expect(ok).To(BeTrue(), "the foreign device still exists")
		Expect(d.State).To(Equal(packetsim.StateActive))
		Expect(d.IPAssignmentIDs).To(HaveLen(3), "its management addresses only: the cluster's elastic IP was not assigned to it")
		Expect(pk.DeleteDevice(ctx, foreign.ID)).To(Succeed())
	})
})

var _ = Describe("PacketCluster deletion", func() {
	It("waits for the cluster's PacketMachines, so they can still delete their devices, then releases the elastic IP", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("last", machineOpts{controlPlane: true})
		isProvisioned(pm)
		dev := oneDevice(pm)

		Expect(k8sClient.Delete(ctx, getPacketCluster(mc.ns, mc.name))).To(Succeed())
		Eventually(func() string {
			c := conditions.Get(getPacketCluster(mc.ns, mc.name), infrav1.ControlPlaneEndpointReadyCondition)
			if c == nil {
				return ""
			}
			return c.Message
		}, eventually).Should(ContainSubstring("Waiting for 1 PacketMachines"))
		Consistently(func() int { return len(endpointReservations(mc.ns, mc.name)) }, time.Second, 100*time.Millisecond).Should(Equal(1))

		deleteAndWait(pm)
		_, exists := sim.Device(dev.ID)
		Expect(exists).To(BeFalse(), "the machine deleted its device with the cluster's credentials")
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: mc.name}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		Expect(endpointReservations(mc.ns, mc.name)).To(BeEmpty())
	})
})
