package e2e

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// Two tenants share the management cluster, the project and the manager's key, as
// docs/security.md's threat model has it. The attacker knows what anyone can see of the victim
// (its endpoint address) and guesses the rest (device and VLAN numbers); the specs hand it the
// IDs to make the attacks as strong as they can be.
var _ = Describe("Two tenants on one project", func() {
	It("keep each other's devices, load balancer, VLAN and migrated objects: remediation, adoption, VLAN and legacy-tag attacks change nothing of the victim's", func(ctx SpecContext) {
		victim := testNamespace(ctx, "victim")
		const prod = "prod"
		By("the victim: an EMLB cluster with a VLAN of its own, Available")
		applyYAMLEditingPacketCluster(ctx, victim, generateCluster(ctx, victim, prod, "emlb", "--control-plane-machine-count", "1", "--worker-machine-count", "1"),
			func(pc map[string]any) error {
				return unstructured.SetNestedMap(pc, map[string]any{"vlan": map[string]any{}}, "spec", "network")
			})
		waitClusterAvailable(ctx, victim, prod, 1, 1, 5*time.Minute)
		lb := clusterLoadBalancer(ctx, victim, prod)
		pc := &infrav1.PacketCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: victim, Name: prod}, pc)).To(Succeed())
		Expect(pc.Status.Network).NotTo(BeNil())
		vxlan := pc.Status.Network.VXLAN
		var devices []string
		Eventually(func(g Gomega) {
			devices = nil
			for _, d := range devicesOf(ctx, g, victim) {
				devices = append(devices, d.ID)
			}
			g.Expect(devices).To(HaveLen(2))
		}).WithContext(ctx).Should(Succeed())
		slices.Sort(devices)

		attacker := testNamespace(ctx, "attacker")
		By("1: a Machine whose PacketMachine names the victim's device, and a PacketRemediation that reboots and reinstalls it")
		newCluster(ctx, attacker, "repair")
		waitClusterProvisioned(ctx, attacker, "repair")
		newMachineNaming(ctx, attacker, "repair", "thief", infrav1.ProviderIDPrefix+devices[0])
		machine := &clusterv1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: attacker, Name: "thief"}, machine)).To(Succeed())
		rem := &infrav1.PacketRemediation{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "thief",
			Labels:          map[string]string{clusterv1.ClusterNameLabel: "repair"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine.Name, UID: machine.UID}}},
			Spec: infrav1.PacketRemediationSpec{Strategy: []infrav1.RemediationStep{
				{Type: infrav1.RemediationStepReboot}, {Type: infrav1.RemediationStepReinstall}}}}
		Expect(k8s.Create(ctx, rem)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rem), rem)).To(Succeed())
			g.Expect(conditions.GetReason(rem, infrav1.RemediationSucceededCondition)).To(Equal(infrav1.DeviceNotOwnedReason))
		}).WithContext(ctx).Should(Succeed())

		By("2: a PacketCluster whose endpoint is the victim's load-balancer address")
		thief := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: prod,
			Annotations: map[string]string{"equinix.com/loadbalancerID": lb.ID}},
			Spec: infrav1.PacketClusterSpec{ProjectID: sandbox.SimProjectID, Metro: pc.Spec.Metro, VIPManager: infrav1.EMLBVIPManager,
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: lb.IPs[0], Port: 6443}}}
		newClusterFor(ctx, thief)
		expectClusterCondition(ctx, attacker, prod, infrav1.ControlPlaneEndpointReadyCondition, infrav1.WaitingForLoadBalancerReason)

		By("5: a PacketCluster naming the victim's VLAN by its VXLAN")
		newClusterFor(ctx, &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "vlan"},
			Spec: infrav1.PacketClusterSpec{ProjectID: sandbox.SimProjectID, Metro: pc.Spec.Metro, VIPManager: infrav1.CPEMVIPManager,
				Network: &infrav1.ClusterNetwork{VLAN: infrav1.VLANReference{VXLAN: vxlan}}}})
		expectClusterCondition(ctx, attacker, "vlan", infrav1.VLANReadyCondition, infrav1.VLANNotOwnedReason)

		By("8: a cluster named like a migrated one, whose endpoint is its elastic IP, and a machine naming its device")
		// What the previous provider left of a cluster "legacy": tags with its name, no namespace.
		legacyTags := []string{infrav1.LegacyClusterTag("legacy")}
		legacyDevice, err := sim.CreateDevice(ctx, "legacy-control-plane", pc.Spec.Metro, legacyTags)
		Expect(err).NotTo(HaveOccurred())
		legacyIP, err := sim.ReserveIP(ctx, pc.Spec.Metro, legacyTags)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			Expect(sim.DeleteDevice(ctx, legacyDevice.ID)).To(Succeed())
			Expect(sim.ReleaseIP(ctx, legacyIP.ID)).To(Succeed())
		})
		newClusterFor(ctx, &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "legacy"},
			Spec: infrav1.PacketClusterSpec{ProjectID: sandbox.SimProjectID, Metro: pc.Spec.Metro, VIPManager: infrav1.CPEMVIPManager,
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: legacyIP.Address, Port: 6443}}})
		expectClusterCondition(ctx, attacker, "legacy", infrav1.ControlPlaneEndpointReadyCondition, infrav1.UserSuppliedEndpointReason)
		waitClusterProvisioned(ctx, attacker, "legacy")
		newMachineNaming(ctx, attacker, "legacy", "legacy-thief", infrav1.ProviderIDPrefix+legacyDevice.ID)
		Eventually(func(g Gomega) {
			pm := &infrav1.PacketMachine{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: attacker, Name: "legacy-thief"}, pm)).To(Succeed())
			g.Expect(conditions.GetReason(pm, infrav1.DeviceReadyCondition)).To(Equal(infrav1.DeviceNotOwnedReason))
		}).WithContext(ctx).Should(Succeed())
		devices = append(devices, legacyDevice.ID) // no write may reach it either
		slices.Sort(devices)

		By("deleting the attacker's clusters")
		Expect(deleteClusters(ctx, attacker)).To(Succeed())

		By("the victim's devices, load balancer and VLAN are as they were, and its cluster Available")
		Eventually(func(g Gomega) {
			now := []string{legacyDevice.ID}
			for _, d := range devicesOf(ctx, g, victim) {
				now = append(now, d.ID)
			}
			slices.Sort(now)
			g.Expect(now).To(Equal(devices), "same devices")
		}).WithContext(ctx).Should(Succeed())
		d, err := sim.Device(ctx, legacyDevice.ID)
		Expect(err).NotTo(HaveOccurred(), "the migrated cluster's device is still there")
		Expect(d.Tags).To(Equal(legacyTags))
		ips, err := sim.IPReservations(ctx, legacyTags[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(ips).To(ConsistOf(And(HaveField("ID", legacyIP.ID), HaveField("Tags", Equal(legacyTags)), HaveField("Assignments", BeEmpty()))),
			"the migrated cluster's elastic IP, still reserved, neither adopted nor assigned to the attacker's device")
		// The victim's cluster has no remediation of its own: any action on its devices, or a
		// rewrite of their user-data, is the attacker's.
		requests, err := sim.Requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, r := range requests {
			acts := r.Route == "POST /devices/{id}/actions" || r.Route == "PUT /devices/{id}" || r.Route == "PATCH /devices/{id}"
			for _, id := range devices {
				Expect(acts && strings.Contains(r.Path, id)).To(BeFalse(), "a write reached the victim's device: %s %s", r.Method, r.Path)
			}
		}
		Expect(clusterLoadBalancer(ctx, victim, prod).ID).To(Equal(lb.ID), "the victim's load balancer, under its own name")
		vlans, err := sim.VLANs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(vlans).To(ContainElement(And(HaveField("VXLAN", vxlan), HaveField("Description", infrav1.ClusterTag(victim, prod)))))
		waitClusterAvailable(ctx, victim, prod, 1, 1, time.Minute)
	})
})

// newClusterFor creates a Cluster with no control plane for a PacketCluster.
func newClusterFor(ctx context.Context, pc *infrav1.PacketCluster) {
	Expect(k8s.Create(ctx, pc)).To(Succeed())
	Expect(k8s.Create(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: pc.Namespace, Name: pc.Name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: pc.Name}}})).To(Succeed())
}

// expectClusterCondition waits for a PacketCluster's condition to have the reason.
func expectClusterCondition(ctx context.Context, ns, name, conditionType, reason string) {
	Eventually(func(g Gomega) {
		pc := &infrav1.PacketCluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pc)).To(Succeed())
		g.Expect(conditions.GetReason(pc, conditionType)).To(Equal(reason))
	}).WithContext(ctx).Should(Succeed())
}

// newMachineNaming creates a worker Machine whose PacketMachine names a device in providerID
// from the start, as a tenant may write it.
func newMachineNaming(ctx context.Context, ns, cluster, name, providerID string) {
	newMachineWith(ctx, ns, cluster, name, "#cloud-config\nruncmd: [echo mine now]\n",
		infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", BillingCycle: "hourly", ProviderID: providerID})
}
