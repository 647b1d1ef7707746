package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
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

var _ = Describe("Deleting a cluster whose credentials never resolved", func() {
	It("lets the PacketCluster go: nothing was made with a Secret that does not exist", func() {
		ns := newNamespace()
		_, pc := createCluster(ns, "typo", infrav1.PacketClusterSpec{Metro: "sv", CredentialsRef: &infrav1.SecretReference{Name: "packet-credential"}})
		Eventually(func() string {
			return conditions.GetReason(getPacketCluster(ns, "typo"), infrav1.PacketAPIAvailableCondition)
		}, eventually).Should(Equal(infrav1.CredentialsInvalidReason))
		By("deleting it, as Cluster API does when the Cluster is deleted")
		Expect(k8sClient.Delete(ctx, getPacketCluster(ns, "typo"))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "typo"}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue(), "the PacketCluster, which reserved nothing, is gone")
		Eventually(eventReasons(pc), eventually).Should(ContainElement("DeletedWithoutCredentials"))
	})
})

var _ = Describe("Changing a cluster's credentialsRef", func() {
	It("lets go of the Secret held before, and of the new one when the cluster is deleted", func() {
		ns := newNamespace()
		finalizers := func(name string) func() []string {
			return func() []string {
				s := &corev1.Secret{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
					return nil
				}
				return s.Finalizers
			}
		}
		for _, name := range []string{"first-key", "second-key"} {
			Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Data: map[string][]byte{"apiKey": []byte(packetsim.DefaultToken)}})).To(Succeed())
		}
		createCluster(ns, "c1", infrav1.PacketClusterSpec{Metro: "sv", CredentialsRef: &infrav1.SecretReference{Name: "first-key"}})
		Eventually(finalizers("first-key"), eventually).Should(ContainElement(credentials.Finalizer("c1")))

		By("pointing credentialsRef at another Secret, as a user may until the endpoint exists")
		pc := getPacketCluster(ns, "c1")
		orig := pc.DeepCopy()
		pc.Spec.CredentialsRef = &infrav1.SecretReference{Name: "second-key"}
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		Eventually(finalizers("second-key"), eventually).Should(ContainElement(credentials.Finalizer("c1")))
		Eventually(finalizers("first-key"), eventually).Should(BeEmpty(), "the first Secret is no longer held")

		By("deleting the cluster lets go of the second")
		Expect(k8sClient.Delete(ctx, getPacketCluster(ns, "c1"))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		Expect(finalizers("second-key")()).To(BeEmpty())
	})
})

var _ = Describe("Deleting a cluster's credentials Secret with everything else, as a namespace deletion does", func() {
	It("keeps the Secret until the machines deleted their devices and the cluster its elastic IP", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		key := client.ObjectKey{Namespace: mc.ns, Name: "cluster-key"}
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Data: map[string][]byte{"apiKey": []byte(packetsim.DefaultToken)}})).To(Succeed())
		pc := getPacketCluster(mc.ns, mc.name)
		orig := pc.DeepCopy()
		pc.Spec.CredentialsRef = &infrav1.SecretReference{Name: key.Name}
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		secretFinalizers := func() []string {
			s := &corev1.Secret{}
			if err := k8sClient.Get(ctx, key, s); err != nil {
				return nil
			}
			return s.Finalizers
		}
		Eventually(secretFinalizers, eventually).Should(ConsistOf(credentials.Finalizer(mc.name)))
		s := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, key, s)).To(Succeed())
		Expect(s.Labels).NotTo(HaveKey(clusterctlv1.ClusterctlMoveLabel),
			"clusterctl move takes the Secret along, and deletes it from the source, only if its owner labels it so: other workloads may share it")

		pm := mc.createMachine("cp", machineOpts{controlPlane: true})
		isProvisioned(pm)
		dev := oneDevice(pm)

		By("deleting the Secret, the PacketCluster and the PacketMachine at once")
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}})).To(Succeed())
		Expect(k8sClient.Delete(ctx, getPacketCluster(mc.ns, mc.name))).To(Succeed())
		deleteAndWait(pm)
		_, exists := sim.Device(dev.ID)
		Expect(exists).To(BeFalse(), "the machine deleted its device with the key of the deleted Secret")
		Eventually(func() bool { return apierrorsIsNotFound(k8sClient.Get(ctx, key, &corev1.Secret{})) }, eventually).Should(BeTrue(),
			"the PacketCluster lets the Secret go once it is done")
		Expect(endpointReservations(mc.ns, mc.name)).To(BeEmpty())
	})
})

var _ = Describe("Deleting a PacketMachine that outlived its owners", func() {
	It("deletes the device when the Machine is gone, when the Cluster is gone too, and even without the PacketCluster", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pmA, pmB, pmC := mc.createMachine("orphan-a", machineOpts{}), mc.createMachine("orphan-b", machineOpts{}), mc.createMachine("orphan-c", machineOpts{})
		isProvisioned(pmA)
		isProvisioned(pmB)
		isProvisioned(pmC)
		devA, devB, devC := oneDevice(pmA), oneDevice(pmB), oneDevice(pmC)
		Expect(getPM(pmC).Annotations).To(HaveKeyWithValue(device.ProjectAnnotation, simProject))

		By("the Machine is gone (its finalizer removed by hand); the garbage collector deletes the PacketMachine")
		Expect(k8sClient.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: mc.ns, Name: "orphan-a"}})).To(Succeed())
		deleteAndWait(pmA)
		_, exists := sim.Device(devA.ID)
		Expect(exists).To(BeFalse(), "the device of a PacketMachine without its Machine is deleted")

		By("the Machine and the Cluster are gone; the PacketCluster, which waits for its machines, is still there")
		Expect(k8sClient.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: mc.ns, Name: "orphan-b"}})).To(Succeed())
		Expect(k8sClient.Delete(ctx, mc.cluster)).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(mc.cluster), &clusterv1.Cluster{}))
		},
			eventually).Should(BeTrue())
		deleteAndWait(pmB)
		_, exists = sim.Device(devB.ID)
		Expect(exists).To(BeFalse(), "the device of a PacketMachine without its Machine and Cluster is deleted")

		By("the PacketCluster is gone too (its finalizer removed by hand): the project the machine recorded is used")
		pc := getPacketCluster(mc.ns, mc.name)
		orig := pc.DeepCopy()
		pc.Finalizers = nil
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		Expect(k8sClient.Delete(ctx, pc)).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pc), &infrav1.PacketCluster{}))
		},
			eventually).Should(BeTrue())
		Expect(k8sClient.Delete(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: mc.ns, Name: "orphan-c"}})).To(Succeed())
		deleteAndWait(pmC)
		_, exists = sim.Device(devC.ID)
		Expect(exists).To(BeFalse(), "the device of a PacketMachine without any of its owners is deleted")
	})
})

var _ = Describe("PacketMachine deletion that takes too long", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("reports a device stuck deprovisioning with its age, asks again, and finishes when Packet does", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("stuck", machineOpts{})
		isProvisioned(pm)
		dev := oneDevice(pm)
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultSlowDeprovision, Duration: 40 * time.Minute, Count: 1})

		Expect(k8sClient.Delete(ctx, getPM(pm))).To(Succeed())
		Eventually(func() string { d, _ := sim.Device(dev.ID); return d.State }, eventually).Should(Equal(packetsim.StateDeprovisioning))
		Eventually(func() *metav1.Condition {
			sim.Advance(time.Minute)
			return machineCondition(pm, infrav1.DeviceReadyCondition)()
		}, eventually, 100*time.Millisecond).Should(And(haveReason(infrav1.DeviceDeletionStuckReason),
			HaveField("Message", MatchRegexp(`is still deprovisioning 1[5-9]m.* after its deletion was asked; asking Packet again`))))
		Eventually(eventReasons(pm), eventually).Should(ContainElement(infrav1.DeviceDeletionStuckReason))
		Expect(deletesFor(dev.ID)).To(BeNumerically(">=", 2), "the delete was sent again")

		Eventually(func() bool {
			sim.Advance(time.Minute)
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), &infrav1.PacketMachine{}))
		}, eventually, 100*time.Millisecond).Should(BeTrue())
	})
})

var _ = Describe("PacketMachine deletion asked by an earlier version", func() {
	It("is followed from its annotation, not asked for again", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("upgraded", machineOpts{})
		isProvisioned(pm)
		dev := oneDevice(pm)
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultSlowDeprovision, Duration: time.Minute, Count: 1})
		DeferCleanup(sim.ClearFaults)
		// What a version that kept the time in an annotation did: ask, record, then be replaced.
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		Expect(pk.DeleteDevice(ctx, dev.ID)).To(Succeed())
		live := getPM(pm)
		base := live.DeepCopy()
		live.Annotations = map[string]string{device.DeleteRequestedAnnotation: simClock.Now().UTC().Format(time.RFC3339Nano)}
		Expect(k8sClient.Patch(ctx, live, client.MergeFrom(base))).To(Succeed())

		deleteAndWait(pm)
		Expect(deletesFor(dev.ID)).To(Equal(1), "the device being deprovisioned was not asked for again")
	})
})

// deletesFor counts the DELETE requests for one device.
func deletesFor(id string) int {
	n := 0
	for _, r := range sim.Requests() {
		if r.Route == "DELETE /devices/{id}" && strings.Contains(r.Path, id) {
			n++
		}
	}
	return n
}

var _ = Describe("Machines of a cluster being deleted", func() {
	It("get no device", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pc := getPacketCluster(mc.ns, mc.name)
		orig := pc.DeepCopy()
		pc.Finalizers = append(pc.Finalizers, "test/hold") // keeps it while it is being deleted
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		Expect(k8sClient.Delete(ctx, pc)).To(Succeed())
		DeferCleanup(func() {
			cur := getPacketCluster(mc.ns, mc.name)
			orig := cur.DeepCopy()
			cur.Finalizers = nil
			Expect(k8sClient.Patch(ctx, cur, client.MergeFrom(orig))).To(Succeed())
		})

		pm := mc.createMachine("late", machineOpts{})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.WaitingForClusterInfrastructureReason), HaveField("Message", ContainSubstring("being deleted"))))
		Consistently(func() int { return createsFor(pm) }, time.Second, 100*time.Millisecond).Should(BeZero())
		deleteAndWait(pm)
	})
})

var _ = Describe("Deleting a machine with duplicate devices", func() {
	It("deletes every device tagged for it, not only the recorded one", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("dup", machineOpts{})
		isProvisioned(pm)
		recorded := oneDevice(pm)
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		dup, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "dup-2", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly", Tags: recorded.Tags})
		Expect(err).NotTo(HaveOccurred())

		deleteAndWait(pm)
		Eventually(func() bool {
			sim.Advance(2 * time.Second)
			_, exists := sim.Device(dup.ID)
			return exists
		}, eventually, 100*time.Millisecond).Should(BeFalse(), "the duplicate is deleted with the machine")
		Expect(eventReasons(pm)()).To(ContainElement("DuplicateDevices"))
	})
})
