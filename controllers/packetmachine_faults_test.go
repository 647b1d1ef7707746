package controllers

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog/capacity"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/elasticip"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const (
	hwA001 = "00000000-0000-4000-8000-00000000a001"
	hwA002 = "00000000-0000-4000-8000-00000000a002"
	hwA003 = "00000000-0000-4000-8000-00000000a003"
)

var _ = Describe("PacketMachine reconciler, idempotency", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("adopts the device a create stored before failing, even while lists do not show it yet", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCommitThenFail, Route: "POST /projects/{id}/devices", Count: 1, Status: 500})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultListLag, Count: 1, Duration: 20 * time.Second})
		pm := mc.createMachine("ctf", machineOpts{})

		dev := oneDevice(pm)
		Consistently(func(g Gomega) {
			g.Expect(devicesOf(pm)).To(HaveLen(1))
			g.Expect(getPM(pm).Spec.ProviderID).To(BeEmpty())
		}, 1500*time.Millisecond, 100*time.Millisecond).Should(Succeed())
		Expect(getPM(pm).Annotations).To(HaveKey(device.CreateStartedAnnotation))
		Expect(machineCondition(pm, infrav1.DeviceReadyCondition)()).To(And(
			HaveField("Reason", infrav1.PacketAPIErrorReason),
			HaveField("Message", And(ContainSubstring("(HTTP 500)"), ContainSubstring("the device may exist anyway: waiting up to")))),
			"the wait keeps Packet's answer")

		sim.Advance(21 * time.Second) // the list shows the device; still inside the confirm window
		Eventually(func() string { return getPM(pm).Spec.ProviderID }, eventually).Should(Equal("equinixmetal://" + dev.ID))
		Expect(devicesOf(pm)).To(HaveLen(1))
		Expect(createsFor(pm)).To(Equal(1))
		Eventually(eventReasons(pm), eventually).Should(ContainElement("DeviceAdopted"))
		isProvisioned(pm)
	})

	It("gives one device when the manager dies mid-create and a new one starts", func() {
		const filter = "restart"
		mc := newFilteredMachineCluster(infrav1.PacketClusterSpec{}, filter)
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultListLag, Count: 1, Duration: 20 * time.Second})

		By("a first manager whose create reaches Packet but which dies before reading the answer")
		stop1, done1 := startMachineManager(filter, &stallingProvider{ClientProvider: factory})
		pm := mc.createMachine("restart", machineOpts{})
		dev := oneDevice(pm)
		stop1()
		Eventually(done1, eventually).Should(BeClosed())
		Expect(getPM(pm).Spec.ProviderID).To(BeEmpty())
		Expect(getPM(pm).Annotations).To(HaveKey(device.CreateStartedAnnotation))

		By("a second manager, while the device is still missing from lists")
		stop2, done2 := startMachineManager(filter, factory)
		defer func() { stop2(); Eventually(done2, eventually).Should(BeClosed()) }()
		Consistently(func(g Gomega) {
			g.Expect(devicesOf(pm)).To(HaveLen(1))
			g.Expect(getPM(pm).Spec.ProviderID).To(BeEmpty())
		}, 1500*time.Millisecond, 100*time.Millisecond).Should(Succeed())

		sim.Advance(21 * time.Second)
		Eventually(func() string { return getPM(pm).Spec.ProviderID }, eventually).Should(Equal("equinixmetal://" + dev.ID))
		Expect(devicesOf(pm)).To(HaveLen(1))
		Expect(createsFor(pm)).To(Equal(1))
	})

	It("keeps one device when a PacketMachine moved mid-create comes back with a new UID", func() {
		const filter = "moved"
		mc := newFilteredMachineCluster(infrav1.PacketClusterSpec{}, filter)
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultListLag, Count: 1, Duration: 20 * time.Second})

		By("a create that reaches Packet, its answer never read")
		stop1, done1 := startMachineManager(filter, &stallingProvider{ClientProvider: factory})
		pm := mc.createMachine("moved", machineOpts{})
		dev := oneDevice(pm)
		stop1()
		Eventually(done1, eventually).Should(BeClosed())
		before := getPM(pm)
		Expect(before.Annotations).To(HaveKey(device.CreateStartedAnnotation))
		Expect(dev.Tags).To(ContainElement(infrav1.MachineTag(before.Annotations[infrav1.MachineIdentityAnnotation])))

		By("clusterctl move: the object is created again from its spec and metadata, with a new UID")
		Expect(k8sClient.Patch(ctx, before.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Expect(k8sClient.Delete(ctx, before)).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), &infrav1.PacketMachine{}))
		}, eventually).Should(BeTrue())
		moved := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: before.Name, Namespace: before.Namespace,
			Labels: before.Labels, Annotations: before.Annotations, OwnerReferences: before.OwnerReferences}, Spec: before.Spec}
		Expect(k8sClient.Create(ctx, moved)).To(Succeed())
		Expect(moved.UID).NotTo(Equal(before.UID))

		stop2, done2 := startMachineManager(filter, factory)
		defer func() { stop2(); Eventually(done2, eventually).Should(BeClosed()) }()
		sim.Advance(21 * time.Second)
		Eventually(func() string { return getPM(moved).Spec.ProviderID }, eventually).Should(Equal("equinixmetal://" + dev.ID))
		Expect(devicesOf(moved)).To(HaveLen(1))
		Expect(createsFor(moved)).To(Equal(1), "the create before the move, none after it")
	})

	It("adopts a device tagged with the PacketMachine's UID, as devices were before the identity annotation", func() {
		const filter = "legacy-uid"
		mc := newFilteredMachineCluster(infrav1.PacketClusterSpec{}, filter)
		pm := mc.createMachine("legacy", machineOpts{})
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		legacy, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "pm-legacy", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly",
			Tags: []string{infrav1.MachineUIDTag(string(pm.UID)), infrav1.ClusterTag(mc.ns, mc.name), infrav1.RoleTag(false)}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute) // an old device, which every list shows

		stop, done := startMachineManager(filter, factory)
		defer func() { stop(); Eventually(done, eventually).Should(BeClosed()) }()
		Eventually(func() string { return getPM(pm).Spec.ProviderID }, eventually).Should(Equal("equinixmetal://" + legacy.ID))
		Eventually(eventReasons(pm), eventually).Should(ContainElement("DeviceAdopted"))
		Expect(getPM(pm).Annotations).NotTo(HaveKey(infrav1.MachineIdentityAnnotation), "no create, so no new identity")
		Consistently(func() (ids []string) {
			for _, d := range sim.Devices(simProject) {
				if slices.Contains(d.Tags, infrav1.ClusterTag(mc.ns, mc.name)) {
					ids = append(ids, d.ID)
				}
			}
			return ids
		}, time.Second).Should(ConsistOf(legacy.ID), "the cluster's only device")
	})

	It("creates again only after the confirm window when a failed create stored nothing", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "POST /projects/{id}/devices", Count: 1, Status: 502, Body: "html"})
		pm := mc.createMachine("lost", machineOpts{})
		Eventually(func() int { return createsFor(pm) }, eventually).Should(Equal(1))
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(
			And(haveReason(infrav1.PacketAPIErrorReason), HaveField("Message", And(ContainSubstring("(HTTP 502)"),
				ContainSubstring("the device may exist anyway: waiting up to")))))
		Consistently(func() int { return createsFor(pm) }, time.Second).Should(Equal(1))
		Expect(devicesOf(pm)).To(BeEmpty())

		sim.Advance(testConfirmWindow + time.Second)
		oneDevice(pm)
		Expect(createsFor(pm)).To(Equal(2))
	})
})

var _ = Describe("PacketMachine reconciler, hardware reservations", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("uses a single ID, the first free of a list, next-available after exhaustion, and frees them on deletion", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm1 := mc.createMachine("hw1", machineOpts{spec: infrav1.PacketMachineSpec{HardwareReservationID: hwA001}})
		Expect(oneDevice(pm1).HardwareReservationID).To(Equal(hwA001))
		isProvisioned(pm1)
		Expect(getPM(pm1).Status.HardwareReservationID).To(Equal(hwA001))

		pm2 := mc.createMachine("hw2", machineOpts{spec: infrav1.PacketMachineSpec{HardwareReservationID: hwA001 + "," + hwA002}})
		Expect(oneDevice(pm2).HardwareReservationID).To(Equal(hwA002))
		isProvisioned(pm2)
		Expect(getPM(pm2).Status.HardwareReservationID).To(Equal(hwA002))

		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHWExhausted, Count: 2})
		pm3 := mc.createMachine("hw3", machineOpts{spec: infrav1.PacketMachineSpec{HardwareReservationID: "next-available", Metro: "da"}})
		Expect(oneDevice(pm3).HardwareReservationID).To(Equal(hwA003))
		Expect(createsFor(pm3)).To(Equal(3), "two refused, then one created")
		Eventually(eventReasons(pm3), eventually).Should(ContainElement(infrav1.HardwareReservationUnavailableReason))
		isProvisioned(pm3)
		Expect(getPM(pm3).Status.HardwareReservationID).To(Equal(hwA003))

		By("deleting: the reservation is free once the PacketMachine is gone and Packet has wiped the server")
		deleteAndWait(pm1)
		sim.Advance(20 * time.Second)
		for _, hr := range sim.HardwareReservations(simProject) {
			if hr.ID == hwA001 {
				Expect(hr.DeviceID).To(BeEmpty())
			}
		}
		deleteAndWait(pm2)
		deleteAndWait(pm3)
	})
})

var _ = Describe("PacketMachine reconciler, project limits", func() {
	It("waits out a full project slowly, with Packet's words, instead of giving up on the spec", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		filler, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "filler", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(pk.DeleteDevice(ctx, filler.ID)).To(Succeed()) })
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: simProject, MaxDevices: len(sim.Devices(simProject))})
		DeferCleanup(func() {
			sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: simProject, MaxDevices: 1 << 20})
		})
		pm := mc.createMachine("full", machineOpts{})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.QuotaExceededReason), HaveField("Message", ContainSubstring("device limit (HTTP 422)"))))
		Consistently(func() int { return createsFor(pm) }, time.Second, 100*time.Millisecond).Should(Equal(1))
		Expect(eventReasons(pm)()).To(ContainElement(infrav1.QuotaExceededReason))
		deleteAndWait(pm)
	})
})

var _ = Describe("PacketMachine reconciler, hardware reservations elsewhere", func() {
	It("refuses a reservation outside the machine's metro, naming both, and creates nothing", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{}) // metro sv
		pm := mc.createMachine("hw-da", machineOpts{spec: infrav1.PacketMachineSpec{HardwareReservationID: hwA003}})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			HaveField("Reason", infrav1.InvalidRequestReason),
			HaveField("Message", And(ContainSubstring("no reservation is in the machine's metro sv"),
				ContainSubstring(hwA003+" is in facility da11 (metro da)")))))
		Consistently(func() int { return createsFor(pm) }, time.Second, 100*time.Millisecond).Should(BeZero())
		Expect(eventReasons(pm)()).To(ContainElement(infrav1.InvalidRequestReason))
		deleteAndWait(pm)
	})
})

var _ = Describe("PacketMachine reconciler, control-plane endpoint", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("assigns the CPEM elastic IP to one control plane exactly once, despite assignment lag", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		endpoint := getPacketCluster(mc.ns, "c1").Spec.ControlPlaneEndpoint.Host
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultEIPSlowAssign, Duration: time.Hour})
		assigns := apiCalls("POST /devices/{id}/ips")

		cp1 := mc.createMachine("cp1", machineOpts{controlPlane: true})
		cp2 := mc.createMachine("cp2", machineOpts{controlPlane: true})
		w1 := mc.createMachine("w1", machineOpts{})
		isProvisioned(cp1)
		isProvisioned(cp2)
		isProvisioned(w1)
		Consistently(func() int { return apiCalls("POST /devices/{id}/ips") - assigns }, time.Second).Should(BeNumerically("<=", 2))

		var ours []packetsim.IPAssignment
		for _, a := range sim.IPAssignments(simProject) {
			if a.Address == endpoint && !a.Management {
				ours = append(ours, a)
			}
		}
		Expect(ours).To(HaveLen(1))
		holders := map[string]string{}
		for _, pm := range []*infrav1.PacketMachine{cp1, cp2} {
			c := conditions.Get(getPM(pm), infrav1.ElasticIPAssignedCondition)
			Expect(c).To(HaveField("Status", metav1.ConditionTrue))
			holders[c.Reason] = getPM(pm).Spec.ProviderID
		}
		Expect(holders).To(HaveKey(infrav1.ElasticIPAssignedReason))
		Expect(holders).To(HaveKey(elasticip.AssignedElsewhereReason))
		Expect(holders[infrav1.ElasticIPAssignedReason]).To(Equal("equinixmetal://" + ours[0].DeviceID))
		Expect(conditions.Get(getPM(w1), infrav1.ElasticIPAssignedCondition)).To(haveReason(infrav1.NotNeededReason))
	})

	It("gives KUBE_VIP control planes one BGP session each and workers none", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{VIPManager: infrav1.KubeVIPVIPManager})
		cp := mc.createMachine("cp", machineOpts{controlPlane: true})
		w := mc.createMachine("w", machineOpts{})
		isProvisioned(cp)
		isProvisioned(w)
		sessionsOf := func(pm *infrav1.PacketMachine) int {
			id := getPM(pm).Spec.ProviderID
			n := 0
			for _, s := range sim.BGPSessions(simProject) {
				if "equinixmetal://"+s.DeviceID == id {
					n++
				}
			}
			return n
		}
		Expect(sessionsOf(cp)).To(Equal(1))
		Expect(sessionsOf(w)).To(Equal(0))
		Expect(conditions.Get(getPM(cp), infrav1.BGPSessionReadyCondition)).To(haveReason(infrav1.BGPSessionCreatedReason))
		Expect(conditions.Get(getPM(w), infrav1.BGPSessionReadyCondition)).To(haveReason(infrav1.NotNeededReason))
		Expect(conditions.Get(getPM(cp), infrav1.ElasticIPAssignedCondition)).To(haveReason(infrav1.NotNeededReason))
	})
})

var _ = Describe("PacketMachine reconciler, device states and API errors", func() {
	AfterEach(func() { sim.ClearFaults() })

	DescribeTable("reports a failed device with its last event, keeps it, and deletes it with the machine", func(forbidden bool) {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultDeviceFail, Count: 1, Duration: 3 * time.Second, Forbidden403: forbidden})
		pm := mc.createMachine("fails", machineOpts{})
		dev := oneDevice(pm)
		Eventually(func() *metav1.Condition {
			sim.Advance(2 * time.Second)
			return machineCondition(pm, infrav1.DeviceReadyCondition)()
		}, eventually, 200*time.Millisecond).Should(And(haveReason(infrav1.DeviceProvisionFailedReason),
			HaveField("Message", ContainSubstring("Provisioning failed"))))
		Expect(conditions.Get(getPM(pm), clusterv1.ReadyCondition)).To(HaveField("Status", metav1.ConditionFalse))
		Consistently(func() string { d, _ := sim.Device(dev.ID); return d.State }, time.Second).Should(Equal("failed"))
		Eventually(eventReasons(pm), eventually).Should(ContainElement(infrav1.DeviceProvisionFailedReason))
		deleteAndWait(pm)
		_, exists := sim.Device(dev.ID)
		Expect(exists).To(BeFalse())
	},
		Entry("Packet shows it", false),
		Entry("Packet answers 403 for it, as it does for some failed devices: not a credentials problem", true),
	)

	It("reports powered-off and vanished devices without giving up on them", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("states", machineOpts{})
		dev := oneDevice(pm)
		isProvisioned(pm)

		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultDevicePower, ResourceID: dev.ID, State: "inactive"})
		pokeUntil(pm, func(g Gomega) {
			cur := getPM(pm)
			g.Expect(conditions.Get(cur, infrav1.DeviceReadyCondition)).To(haveReason(infrav1.DeviceInactiveReason))
			g.Expect(cur.Status.InstanceStatus).To(Equal("inactive"))
		})

		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultDeviceVanish, ResourceID: dev.ID})
		pokeUntil(pm, func(g Gomega) {
			g.Expect(conditions.Get(getPM(pm), infrav1.DeviceReadyCondition)).To(haveReason(infrav1.DeviceNotFoundReason))
		})
		Expect(devicesOf(pm)).To(BeEmpty(), "a vanished device is not re-created")
		deleteAndWait(pm)
	})

	It("waits for Retry-After on 429 and backs off on 5xx", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultRateLimit, Route: "GET /projects/{id}/devices", Count: 1, RetryAfter: 2})
		pm := mc.createMachine("limited", machineOpts{})
		Eventually(machineCondition(pm, infrav1.PacketAPIAvailableCondition), eventually).Should(haveReason(infrav1.RateLimitedReason))
		oneDevice(pm)
		Eventually(machineCondition(pm, infrav1.PacketAPIAvailableCondition), eventually).Should(HaveField("Status", metav1.ConditionTrue))

		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "GET /devices/{id}", Count: 2, Status: 503})
		isProvisioned(pm)
	})

	It("stops on 422 with the API's message until the spec changes", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("invalid", machineOpts{bootstrap: "#!ipxe\nchain http://boot.example/x\n",
			spec: infrav1.PacketMachineSpec{OS: "custom_ipxe", IPXEUrl: "http://boot.example/boot.ipxe"}})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.InvalidRequestReason), HaveField("Message", ContainSubstring("only ipxe_script_url or userdata"))))
		Eventually(func() int { return createsFor(pm) }, eventually).Should(Equal(1))
		Consistently(func() int { return createsFor(pm) }, 1500*time.Millisecond).Should(Equal(1))

		cur := getPM(pm)
		base := cur.DeepCopy()
		cur.Spec.IPXEUrl = ""
		Expect(k8sClient.Patch(ctx, cur, client.MergeFrom(base))).To(Succeed())
		oneDevice(pm)
	})

	It("reports invalid credentials", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultAuth, Token: packetsim.DefaultToken})
		pm := mc.createMachine("unauthorized", machineOpts{})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(haveReason(infrav1.CredentialsInvalidReason))
		Expect(conditions.Get(getPM(pm), infrav1.PacketAPIAvailableCondition)).To(haveReason(infrav1.CredentialsInvalidReason))
		sim.ClearFaults()
		deleteAndWait(pm)
	})
})

var _ = Describe("PacketMachineTemplate reconciler", func() {
	It("fills the capacity of a template created before its cluster, once the cluster is there", func() {
		ns := newNamespace()
		pmt := &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "early", Namespace: ns,
				Labels: map[string]string{clusterv1.ClusterNameLabel: "c1", clusterv1.WatchLabel: machineSuiteFilter}},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"}}},
		}
		Expect(k8sClient.Create(ctx, pmt)).To(Succeed())
		Consistently(func() int {
			got := &infrav1.PacketMachineTemplate{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pmt), got)).To(Succeed())
			return len(got.Status.Capacity)
		}, time.Second, 100*time.Millisecond).Should(BeZero(), "no cluster yet")

		cluster, pc := createCluster(ns, "c1", infrav1.PacketClusterSpec{Metro: "sv"})
		patchLabels(pc, machineSuiteFilter)
		patchLabels(cluster, machineSuiteFilter)
		Eventually(func() int {
			got := &infrav1.PacketMachineTemplate{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pmt), got)).To(Succeed())
			return len(got.Status.Capacity)
		}, eventually).Should(Equal(2), "cpu and memory, without the template changing")
	})

	It("fills capacity and node info from the plan catalogue", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		for _, tc := range []struct {
			plan string
			want corev1.ResourceList
		}{
			{"c3.small.x86", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}},
			{"g2.large.x86", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48"), corev1.ResourceMemory: resource.MustParse("512Gi"),
				capacity.GPUResource: resource.MustParse("2")}},
		} {
			pmt := &infrav1.PacketMachineTemplate{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "pmt-", Namespace: mc.ns,
					Labels: map[string]string{clusterv1.ClusterNameLabel: mc.name, clusterv1.WatchLabel: machineSuiteFilter}},
				Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
					Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: tc.plan}}},
			}
			Expect(k8sClient.Create(ctx, pmt)).To(Succeed())
			Eventually(func(g Gomega) {
				got := &infrav1.PacketMachineTemplate{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pmt), got)).To(Succeed())
				g.Expect(got.Status.Capacity).To(HaveLen(len(tc.want)))
				for k, v := range tc.want {
					have := got.Status.Capacity[k]
					g.Expect(have.Equal(v)).To(BeTrue(), "%s: %s, want %s", k, have.String(), v.String())
				}
				g.Expect(got.Status.NodeInfo).To(Equal(infrav1.NodeInfo{Architecture: "amd64", OperatingSystem: "linux"}))
			}, eventually).Should(Succeed())
		}
	})
})

// poke makes the reconciler look at a machine now, as the manager's periodic resync would.
func poke(pm *infrav1.PacketMachine) {
	cur := getPM(pm)
	base := cur.DeepCopy()
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations["test/poke"] = time.Now().String()
	Expect(k8sClient.Patch(ctx, cur, client.MergeFrom(base))).To(Succeed())
}

// pokeUntil pokes pm until check passes. A reconcile of a provisioned machine is answered by the
// project's device list, which may be up to the snapshot's age older than a fault injected just
// before the poke: that reconcile still sees the device as it was, and nothing looks at a
// provisioned machine again by itself. A later poke's reconcile sees the fault.
func pokeUntil(pm *infrav1.PacketMachine, check func(g Gomega)) {
	Eventually(func(g Gomega) {
		poke(pm)
		check(g)
	}, eventually, 250*time.Millisecond).Should(Succeed())
}

// startMachineManager runs a manager with only a PacketMachine reconciler for objects labelled
// with filter. stop kills it; done is closed once it has stopped.
func startMachineManager(filter string, provider interface {
	ClientFor(source, apiKey string) (packet.Client, error)
}) (stop func(), done chan struct{}) {
	mgr, err := ctrl.NewManager(testEnv.Config, ctrl.Options{Scheme: testEnv.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: ClientOptions()})
	Expect(err).NotTo(HaveOccurred())
	r := newTestMachineReconciler(filter)
	r.Client, r.APIReader, r.Packet = mgr.GetClient(), mgr.GetAPIReader(), provider
	mctx, cancel := context.WithCancel(ctx)
	Expect(r.SetupWithManager(mctx, mgr, testOptions)).To(Succeed())
	done = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		_ = mgr.Start(mctx)
	}()
	return cancel, done
}

// stallingProvider gives clients whose CreateDevice sends the request and then never reads the
// answer, like a manager killed right after the request left.
type stallingProvider struct {
	ClientProvider interface {
		ClientFor(source, apiKey string) (packet.Client, error)
	}
}

func (p *stallingProvider) ClientFor(source, apiKey string) (packet.Client, error) {
	c, err := p.ClientProvider.ClientFor(source, apiKey)
	if err != nil {
		return nil, err
	}
	return stallingClient{Client: c}, nil
}

type stallingClient struct{ packet.Client }

func (c stallingClient) CreateDevice(ctx context.Context, req packet.CreateDeviceRequest) (*packet.Device, error) {
	_, _ = c.Client.CreateDevice(ctx, req)
	<-ctx.Done()
	return nil, ctx.Err()
}
