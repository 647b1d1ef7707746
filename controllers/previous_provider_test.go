package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// Taking over what the previous provider's v0.9.0 manager left running: its objects are stored
// as it wrote them (previous_provider_helpers_test.go), and this provider's reconcilers then see
// them for the first time, as after a migration.
var _ = Describe("Taking over the previous provider's v0.9.0 objects", func() {
	It("gives its PacketCluster this provider's status, keeping its elastic IP", func() {
		ns, name := legacyNamespace, "v090-cpem" // its elastic IP's tag names no namespace
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		eip, err := pk.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: simProject, Metro: "sv",
			Tags: []string{"cluster-api-provider-packet:cluster-id:" + name}})
		Expect(err).NotTo(HaveOccurred())

		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: name}}}
		Expect(k8sClient.Create(ctx, cluster)).To(Succeed())
		// Without its owner reference until its status is written: the reconciler waits for one.
		pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: name}, Finalizers: []string{infrav1.PacketClusterFinalizer}},
			Spec: infrav1.PacketClusterSpec{ProjectID: simProject, Metro: "sv", VIPManager: infrav1.CPEMVIPManager,
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: eip.Address, Port: 6443}}}
		Expect(k8sClient.Create(ctx, pc)).To(Succeed())
		writeAsV090("PacketCluster", pc, map[string]any{"ready": true,
			"conditions": []any{v090Condition("NetworkInfrastructureReady"), v090Condition("Ready")}})
		Expect(pc.Status.Conditions).To(HaveLen(2), "stored as v0.9.0 wrote them")
		reserves := apiCalls("POST /projects/{id}/ips")

		By("handing it over")
		base := pc.DeepCopy()
		pc.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
			Name: cluster.Name, UID: cluster.UID}}
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(base))).To(Succeed())

		Eventually(provisioned(ns, name), eventually).Should(Succeed())
		Eventually(conditionOf(ns, name, infrav1.ControlPlaneEndpointReadyCondition), eventually).Should(haveReason(infrav1.ElasticIPReservedReason))
		got := getPacketCluster(ns, name)
		Expect(got.Spec.ControlPlaneEndpoint.Host).To(Equal(eip.Address))
		Expect(conditions.Get(got, "NetworkInfrastructureReady")).To(BeNil(), "v0.9.0's conditions are gone")
		for _, c := range got.Status.Conditions {
			Expect(c.Reason).NotTo(BeEmpty(), c.Type)
		}
		Expect(conditions.Get(got, clusterv1.ReadyCondition)).NotTo(BeNil())
		Expect(apiCalls("POST /projects/{id}/ips")).To(Equal(reserves), "its elastic IP is kept, no other reserved")
	})

	It("follows its machine's device by the namespaced tags v0.9.0 gave it, without creating or deleting one", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{}) // in a namespace that may not adopt by name only
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		dev, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "pm-w0", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly",
			Tags: []string{"capp:cluster-id:" + mc.name, "capp:machine-uid:w0", "capp:namespace:" + mc.ns, "kubernetes.io/role:node"}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute)

		pm := storePreviousMachine(mc, "equinixmetal://"+dev.ID, map[string]any{"ready": true, "instanceStatus": "active",
			"addresses":  []any{map[string]any{"type": "ExternalIP", "address": "203.0.113.10"}},
			"conditions": []any{v090Condition("InstanceReady"), v090Condition("Ready")}})
		creates, deletes := writesFor(mc.ns, dev.ID)
		handOverMachine(mc, pm)

		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.DeviceActiveReason), HaveField("Status", metav1.ConditionTrue)))
		got := getPM(pm)
		Expect(got.Spec.ProviderID).To(Equal("equinixmetal://"+dev.ID), "the same device")
		Expect(got.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		Expect(conditions.Get(got, "InstanceReady")).To(BeNil(), "v0.9.0's conditions are gone")
		for _, c := range got.Status.Conditions {
			Expect(c.Reason).NotTo(BeEmpty(), c.Type)
		}
		sim.Advance(time.Minute)
		Consistently(func() [2]int { c, d := writesFor(mc.ns, dev.ID); return [2]int{c, d} }, time.Second).
			Should(Equal([2]int{creates, deletes}), "no device created for the cluster, the adopted one not deleted")
		d, ok := sim.Device(dev.ID)
		Expect(ok).To(BeTrue())
		Expect(d.State).To(Equal(packetsim.StateActive))

		By("deleting the adopted machine deletes its device")
		deleteAndWait(pm)
		_, exists := sim.Device(dev.ID)
		Expect(exists).To(BeFalse())
	})

	It("does not follow a device whose v0.9.0 tags name the cluster in another namespace", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		dev, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "other-team", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly",
			Tags: []string{"capp:cluster-id:" + mc.name, "capp:machine-uid:w0", "capp:namespace:other-team", "kubernetes.io/role:node"}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute)

		pm := mc.createMachine("thief", machineOpts{spec: infrav1.PacketMachineSpec{ProviderID: "equinixmetal://" + dev.ID}})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(haveReason(infrav1.DeviceNotOwnedReason))
		deleteAndWait(pm)
		_, ok := sim.Device(dev.ID)
		Expect(ok).To(BeTrue(), "the other namespace's device is left alone")
		Expect(pk.DeleteDevice(ctx, dev.ID)).To(Succeed())
	})
})

// The provider's packngo era (v0.7.x, not served by the module proxy any more, so written here
// from its source): devices tagged cluster-api-provider-packet:cluster-id:<cluster> and
// cluster-api-provider-packet:machine-uid:<Machine UID>, provider IDs packet://<uuid>, the
// finalizers this provider keeps, and status ready, instanceState and addresses without
// conditions. Its tag names no namespace, so its devices are followed only in a namespace the
// operator lets adopt (--legacy-adoption-namespaces).
var _ = Describe("Taking over the previous provider's v0.7 (packngo era) objects", func() {
	It("follows its machine's device by its packet:// provider ID and legacy tag, without creating or deleting one", func() {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: legacyNamespace}}))).To(Succeed())
		mc := newMachineClusterIn(legacyNamespace, "v07", infrav1.PacketClusterSpec{}, machineSuiteFilter)
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		dev, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "v07-w0", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly",
			Tags: []string{"cluster-api-provider-packet:cluster-id:" + mc.name, "cluster-api-provider-packet:machine-uid:5f1d2c3e-aaaa-4bbb-8ccc-000000000007"}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute)

		pm := storePreviousMachine(mc, "packet://"+dev.ID, map[string]any{"ready": true, "instanceStatus": "active",
			"addresses": []any{map[string]any{"type": "ExternalIP", "address": "203.0.113.17"}}})
		creates, deletes := writesFor(mc.ns, dev.ID)
		handOverMachine(mc, pm)

		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.DeviceActiveReason), HaveField("Status", metav1.ConditionTrue)))
		got := getPM(pm)
		id, err := infrav1.ParseProviderID(got.Spec.ProviderID)
		Expect(err).NotTo(HaveOccurred())
		Expect(id).To(Equal(dev.ID), "the same device")
		Expect(got.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		sim.Advance(time.Minute)
		Consistently(func() [2]int { c, d := writesFor(mc.ns, dev.ID); return [2]int{c, d} }, time.Second).
			Should(Equal([2]int{creates, deletes}), "no device created for the cluster, the adopted one not deleted")

		By("deleting the adopted machine deletes its device")
		deleteAndWait(pm)
		_, exists := sim.Device(dev.ID)
		Expect(exists).To(BeFalse())
	})
})

// storePreviousMachine stores machine w0 of mc as the previous provider left it: its provider ID,
// finalizer and status, labelled for no reconciler of the suite until that status is written.
func storePreviousMachine(mc *machineCluster, providerID string, status map[string]any) *infrav1.PacketMachine {
	previous := *mc
	previous.filter = "previous-provider"
	pm := previous.createMachine("w0", machineOpts{spec: infrav1.PacketMachineSpec{ProviderID: providerID}})
	base := pm.DeepCopy()
	pm.Finalizers = []string{infrav1.PacketMachineFinalizer}
	Expect(k8sClient.Patch(ctx, pm, client.MergeFrom(base))).To(Succeed())
	writeAsV090("PacketMachine", pm, status)
	return pm
}

// handOverMachine labels pm and its Machine for the suite's reconcilers, as a migration starts
// this provider's manager on them.
func handOverMachine(mc *machineCluster, pm *infrav1.PacketMachine) {
	By("handing it over")
	patchLabels(pm, machineSuiteFilter)
	patchLabels(&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: mc.ns, Name: "w0"}}, machineSuiteFilter)
}

// writesFor counts the device creates naming the namespace in their tags, and the deletes of one
// device, so other specs' machines cannot disturb the counts.
func writesFor(ns, deviceID string) (creates, deletes int) {
	for _, r := range sim.Requests() {
		switch {
		case r.Route == "POST /projects/{id}/devices" && strings.Contains(r.Body, ns):
			creates++
		case r.Route == "DELETE /devices/{id}" && strings.Contains(r.Path, deviceID):
			deletes++
		}
	}
	return creates, deletes
}
