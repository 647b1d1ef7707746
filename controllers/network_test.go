package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// portOf returns a port of a device as the simulator holds it.
func portOf(deviceID, name string) packetsim.Port {
	d, ok := sim.Device(deviceID)
	Expect(ok).To(BeTrue())
	for _, p := range d.Ports {
		if p.Name == name {
			return p
		}
	}
	Fail("device " + deviceID + " has no port " + name)
	return packetsim.Port{}
}

// networkCallsFor counts the port reads and port changes made for one device.
func networkCallsFor(deviceID string) (reads, changes int) {
	d, _ := sim.Device(deviceID)
	ports := map[string]bool{}
	for _, p := range d.Ports {
		ports[p.ID] = true
	}
	for _, r := range sim.Requests() {
		switch {
		case r.Route == "GET /devices/{id}" && strings.Contains(r.Path, deviceID) && strings.Contains(r.Query, "network_ports"):
			reads++
		case strings.HasPrefix(r.Route, "POST /ports/"):
			for id := range ports {
				if strings.Contains(r.Path, id) {
					changes++
				}
			}
		}
	}
	return reads, changes
}

func clusterVLANs(ns, name string) []packetsim.VirtualNetwork {
	var out []packetsim.VirtualNetwork
	for _, vn := range sim.VirtualNetworks(simProject) {
		if vn.Description == infrav1.ClusterTag(ns, name) {
			out = append(out, vn)
		}
	}
	return out
}

func hybridBonded(vlans ...infrav1.MachineVLAN) *infrav1.MachineNetwork {
	return &infrav1.MachineNetwork{PortMode: infrav1.PortModeHybridBonded, VLANs: vlans}
}

var _ = Describe("Private networking", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("creates the cluster's VLAN once, attaches machines with two calls each, and deletes it with the cluster", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{Network: &infrav1.ClusterNetwork{}})
		pc := getPacketCluster(mc.ns, mc.name)
		Expect(pc.Status.Network).NotTo(BeNil())
		vlans := clusterVLANs(mc.ns, mc.name)
		Expect(vlans).To(HaveLen(1))
		Expect(vlans[0].Metro).To(Equal("sv"))
		Expect(pc.Status.Network.VLANID).To(Equal(vlans[0].ID))
		Expect(pc.Status.Network.VXLAN).To(Equal(vlans[0].VXLAN))
		Expect(conditions.IsTrue(pc, infrav1.VLANReadyCondition)).To(BeTrue())

		cp := mc.createMachine("cp", machineOpts{controlPlane: true, spec: infrav1.PacketMachineSpec{Network: hybridBonded(infrav1.MachineVLAN{Cluster: true})}})
		worker := mc.createMachine("worker", machineOpts{spec: infrav1.PacketMachineSpec{Network: &infrav1.MachineNetwork{
			PortMode: infrav1.PortModeHybridBonded, VLANs: []infrav1.MachineVLAN{{Cluster: true}}, PublicIPv4: ptr.To(false)}}})
		isProvisioned(cp)
		isProvisioned(worker)
		for _, pm := range []*infrav1.PacketMachine{cp, worker} {
			dev := oneDevice(pm)
			Expect(portOf(dev.ID, "bond0").VLANs).To(ConsistOf(vlans[0].ID))
			Expect(portOf(dev.ID, "bond0").Bonded).To(BeTrue(), "hybrid-bonded keeps the bond")
			Expect(conditions.IsTrue(getPM(pm), infrav1.NetworkReadyCondition)).To(BeTrue())
			reads, changes := networkCallsFor(dev.ID)
			Expect(reads+changes).To(Equal(2), "one look at the ports and one attachment")
		}
		addresses := getPM(worker).Status.Addresses
		Expect(addresses).To(ContainElement(HaveField("Type", clusterv1.MachineInternalIP)))
		Expect(addresses).NotTo(ContainElement(HaveField("Type", clusterv1.MachineExternalIP)), "publicIPv4: false")

		By("reconciling again without a new VLAN or port call")
		creates := apiCalls("POST /projects/{id}/virtual-networks")
		poke := client.MergeFrom(pc.DeepCopy())
		pc.Annotations = map[string]string{"test/poke": "1"}
		Expect(k8sClient.Patch(ctx, pc, poke)).To(Succeed())
		Consistently(func() int { return apiCalls("POST /projects/{id}/virtual-networks") }, time.Second).Should(Equal(creates))
		Expect(clusterVLANs(mc.ns, mc.name)).To(HaveLen(1))

		By("deleting the machines, then the cluster: the VLAN goes last")
		mc.deleteMachines()
		Expect(k8sClient.Delete(ctx, getPacketCluster(mc.ns, mc.name))).To(Succeed())
		Eventually(func() bool {
			sim.Advance(2 * time.Second)
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: mc.name}, &infrav1.PacketCluster{}))
		}, eventually, 200*time.Millisecond).Should(BeTrue())
		Expect(clusterVLANs(mc.ns, mc.name)).To(BeEmpty())
	})

	It("puts a worker in layer2-individual on two VLANs, one of them an existing VLAN named by VXLAN, which the cluster leaves", func() {
		c, err := factory.ClientFor("network-test", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		existing, err := c.CreateVLAN(ctx, simProject, "sv", "made by hand")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(c.DeleteVLAN(ctx, existing.ID)).To(Succeed()) })

		mc := newMachineCluster(infrav1.PacketClusterSpec{Network: &infrav1.ClusterNetwork{VLAN: infrav1.VLANReference{VXLAN: existing.VXLAN}}})
		Expect(getPacketCluster(mc.ns, mc.name).Status.Network.VLANID).To(Equal(existing.ID))
		other, err := c.CreateVLAN(ctx, simProject, "sv", "second")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(c.DeleteVLAN(ctx, other.ID)).To(Succeed()) })

		pm := mc.createMachine("l2", machineOpts{spec: infrav1.PacketMachineSpec{Network: &infrav1.MachineNetwork{
			PortMode: infrav1.PortModeLayer2Individual,
			VLANs:    []infrav1.MachineVLAN{{Cluster: true}, {VLANReference: infrav1.VLANReference{ID: other.ID}, Port: "eth1"}}}}})
		isProvisioned(pm)
		dev := oneDevice(pm)
		Expect(portOf(dev.ID, "eth0").VLANs).To(ConsistOf(existing.ID))
		Expect(portOf(dev.ID, "eth1").VLANs).To(ConsistOf(other.ID))
		Expect(portOf(dev.ID, "eth0").Bonded).To(BeFalse())
		Expect(portOf(dev.ID, "eth1").Bonded).To(BeFalse())
		got, _ := sim.Device(dev.ID)
		Expect(got.IPAssignmentIDs).To(BeEmpty(), "layer 2 leaves the device no Packet address")

		By("deleting the cluster: the VLAN it only used stays")
		mc.deleteMachines()
		Expect(k8sClient.Delete(ctx, getPacketCluster(mc.ns, mc.name))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: mc.name}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		_, err = c.GetVLAN(ctx, existing.ID)
		Expect(err).NotTo(HaveOccurred())
	})

	It("converts once and attaches once when Packet's answers are lost mid-way, as after a manager killed between steps", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{Network: &infrav1.ClusterNetwork{}})
		// Route templates: convert/{layer}, and {op} for assign (and disbond, bond...).
		for _, route := range []string{"POST /ports/{id}/convert/{layer}", "POST /ports/{id}/{op}"} {
			sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCommitThenFail, Route: route, Status: 500, Count: 1})
		}
		pm := mc.createMachine("l2b", machineOpts{spec: infrav1.PacketMachineSpec{Network: &infrav1.MachineNetwork{
			PortMode: infrav1.PortModeLayer2Bonded, VLANs: []infrav1.MachineVLAN{{Cluster: true}}}}})
		isProvisioned(pm)
		dev := oneDevice(pm)
		Expect(portOf(dev.ID, "bond0").NetworkType).To(Equal("layer2-bonded"))
		Expect(portOf(dev.ID, "bond0").VLANs).To(HaveLen(1))
		converts, refused := 0, 0
		for _, r := range sim.Requests() {
			if strings.HasPrefix(r.Route, "POST /ports/") && strings.Contains(r.Path, portOf(dev.ID, "bond0").ID) {
				if strings.HasSuffix(r.Path, "/convert/layer-2") {
					converts++
				}
				if r.Status == 422 {
					refused++
				}
			}
		}
		Expect(converts).To(Equal(1), "the next reconcile read the ports and saw the conversion done")
		Expect(refused).To(BeNumerically("<=", 1), "at most the one re-sent attachment, answered 'already assigned'")
		Expect(conditions.IsTrue(getPM(pm), infrav1.NetworkReadyCondition)).To(BeTrue())
	})

	It("never joins another namespace's VLAN named by VXLAN or ID, and leaves its owner free to delete it", func() {
		victim := newMachineCluster(infrav1.PacketClusterSpec{Network: &infrav1.ClusterNetwork{}})
		vlans := clusterVLANs(victim.ns, victim.name)
		Expect(vlans).To(HaveLen(1))
		theirs := vlans[0]

		By("a cluster of another namespace naming it by VXLAN")
		thief := newNamespace()
		createCluster(thief, "c1", infrav1.PacketClusterSpec{Metro: "sv", Network: &infrav1.ClusterNetwork{VLAN: infrav1.VLANReference{VXLAN: theirs.VXLAN}}})
		Eventually(conditionOf(thief, "c1", infrav1.VLANReadyCondition), eventually).Should(And(
			haveReason(infrav1.VLANNotOwnedReason), HaveField("Message", ContainSubstring(infrav1.ClusterTag(victim.ns, victim.name)))))
		Expect(getPacketCluster(thief, "c1").Status.Initialization.Provisioned).To(BeNil())

		By("a machine of another namespace naming it by ID")
		other := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := other.createMachine("spy", machineOpts{spec: infrav1.PacketMachineSpec{Network: hybridBonded(
			infrav1.MachineVLAN{VLANReference: infrav1.VLANReference{ID: theirs.ID}})}})
		Eventually(func(g Gomega) {
			sim.Advance(5 * time.Second)
			g.Expect(machineCondition(pm, infrav1.NetworkReadyCondition)()).To(And(Not(BeNil()), haveReason(infrav1.VLANNotOwnedReason)))
		}, eventually, 200*time.Millisecond).Should(Succeed())
		dev := oneDevice(pm)
		for _, p := range []string{"bond0", "eth1"} {
			Expect(portOf(dev.ID, p).VLANs).To(BeEmpty(), "no port of the spy carries the VLAN")
		}

		By("the owner deletes its cluster, and its VLAN goes with it")
		Expect(k8sClient.Delete(ctx, getPacketCluster(victim.ns, victim.name))).To(Succeed())
		Eventually(func() []packetsim.VirtualNetwork { return clusterVLANs(victim.ns, victim.name) }, eventually).Should(BeEmpty())
	})

	It("says which VLAN it cannot find, and does not provision the machine without it", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("lost-vlan", machineOpts{spec: infrav1.PacketMachineSpec{Network: hybridBonded(
			infrav1.MachineVLAN{VLANReference: infrav1.VLANReference{VXLAN: 3999}})}})
		Eventually(func(g Gomega) {
			sim.Advance(5 * time.Second)
			c := machineCondition(pm, infrav1.NetworkReadyCondition)()
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(infrav1.VLANNotFoundReason))
			g.Expect(c.Message).To(ContainSubstring("3999"))
		}, eventually, 200*time.Millisecond).Should(Succeed())
		Expect(getPM(pm).Status.Initialization.Provisioned).NotTo(Equal(ptr.To(true)))
	})
})
