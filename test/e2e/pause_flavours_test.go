package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

var _ = Describe("Pause", func() {
	It("makes no Packet API call for a paused Cluster", func(ctx SpecContext) {
		ns := testNamespace(ctx, "pause")
		const cluster = "paused"
		newCluster(ctx, ns, cluster)
		waitClusterProvisioned(ctx, ns, cluster)
		newMachine(ctx, ns, cluster, machineName(0))
		expectMachinesAndDevices(ctx, ns, 1, 2*time.Minute)

		By("pausing the Cluster and waiting for the provider to report Paused")
		c := &clusterv1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Paused = ptr.To(true)
		Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			pc := &infrav1.PacketCluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, pc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(pc.Status.Conditions, clusterv1.PausedCondition)).To(BeTrue(), "PacketCluster Paused")
			pm := &infrav1.PacketMachine{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: machineName(0)}, pm)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(pm.Status.Conditions, clusterv1.PausedCondition)).To(BeTrue(), "PacketMachine Paused")
		}).WithContext(ctx).Should(Succeed())
		time.Sleep(2 * time.Second) // let reconciles that started before the pause finish
		calls, err := sim.ProviderCalls(ctx)
		Expect(err).NotTo(HaveOccurred())

		By("changing the paused cluster: a new Machine, a changed PacketCluster")
		newMachine(ctx, ns, cluster, machineName(1))
		pc := &infrav1.PacketCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, pc)).To(Succeed())
		pcPatch := client.MergeFrom(pc.DeepCopy())
		pc.Annotations = map[string]string{"e2e.capp/touched": time.Now().Format(time.RFC3339)}
		Expect(k8s.Patch(ctx, pc, pcPatch)).To(Succeed())

		By("the simulator's counters do not move")
		Consistently(func(g Gomega) {
			now, err := sim.ProviderCalls(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now).To(Equal(calls), "Packet API calls by the provider while the Cluster is paused")
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(1)) }).
			WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())

		By("unpausing: the new Machine gets its device")
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, c)).To(Succeed())
		patch = client.MergeFrom(c.DeepCopy())
		c.Spec.Paused = ptr.To(false)
		Expect(k8s.Patch(ctx, c, patch)).To(Succeed())
		// Cluster API's Machine controller maps Cluster events to Machines only once the control
		// plane is initialized, which never happens without a workload API server: the Machine
		// created while paused would wait for the core manager's sync period. Touch it instead.
		m := &clusterv1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: machineName(1)}, m)).To(Succeed())
		mPatch := client.MergeFrom(m.DeepCopy())
		m.Annotations = map[string]string{"e2e.capp/unpaused": "true"}
		Expect(k8s.Patch(ctx, m, mPatch)).To(Succeed())
		expectMachinesAndDevices(ctx, ns, 2, 2*time.Minute)
	})
})

// flavours lists the template flavours of the provider's clusterctl repository ("" is the
// default cluster-template.yaml).
func flavours() []string {
	components := os.Getenv("SANDBOX_PROVIDER_COMPONENTS")
	if components == "" {
		components = sandbox.DefaultConfig(repoRoot()).ProviderComponents
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(components), "cluster-template*.yaml"))
	var out []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(name, "cluster-template"), "-"))
	}
	sort.Strings(out)
	return out
}

var _ = Describe("Template flavours", func() {
	It("finds the flavours in the provider's repository", func() {
		Expect(flavours()).To(ContainElement(""), "cluster-template.yaml is in the repository")
		Expect(flavours()).To(ContainElements("kube-vip", "topology", "flatcar", "private-network", "emlb", "remediation", "raid"))
	})
	// Every flavour at once, each in a namespace of its own: the clusters come up and go away
	// side by side, which is also what a management cluster serving several teams sees.
	It("applies every flavour, and each Cluster becomes Available with a Node per Machine and deletes cleanly", func(ctx SpecContext) {
		type applied struct{ flavour, ns, name string }
		var all []applied
		for _, flavour := range flavours() {
			title := flavour
			if title == "" {
				title = "default"
			}
			ns := testNamespace(ctx, "flavour-"+title)
			name := "f-" + title
			applyYAML(ctx, ns, generateCluster(ctx, ns, name, flavour, "--control-plane-machine-count", "1", "--worker-machine-count", "1"))
			all = append(all, applied{title, ns, name})
		}
		for _, a := range all {
			By("the " + a.flavour + " flavour: PacketCluster provisioned, then the workload cluster up")
			// A ClusterClass names the PacketCluster it stamps out itself: follow the Cluster's reference.
			infraName := ""
			Eventually(func(g Gomega) {
				c := &clusterv1.Cluster{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: a.name}, c)).To(Succeed())
				g.Expect(c.Spec.InfrastructureRef.Name).NotTo(BeEmpty(), "Cluster %s/%s references its PacketCluster", a.ns, a.name)
				infraName = c.Spec.InfrastructureRef.Name
			}).WithContext(ctx).Should(Succeed())
			waitClusterProvisioned(ctx, a.ns, infraName)
			waitClusterAvailable(ctx, a.ns, a.name, 1, 1, 6*time.Minute)
			expectNodesMatchMachines(ctx, a.ns, a.name)
			if a.flavour == "private-network" {
				expectPrivateNetwork(ctx, a.ns, a.name, infraName)
			}
			if a.flavour == "raid" {
				expectRAIDLayout(ctx, a.ns, a.name)
			}
		}
		By("deleting every flavour's Cluster")
		for _, a := range all {
			Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: a.name}})).To(Succeed())
		}
		for _, a := range all {
			Eventually(func(g Gomega) {
				g.Expect(devicesOf(ctx, g, a.ns)).To(BeEmpty(), "devices of the %s flavour", a.flavour)
			}).
				WithContext(ctx).WithTimeout(4 * time.Minute).Should(Succeed())
		}
	})
})

// expectPrivateNetwork checks the private-network flavour's devices in the simulator: every one
// carries the cluster's VLAN on bond0, still bonded (hybrid-bonded), and the worker has no public
// IPv4.
func expectPrivateNetwork(ctx context.Context, ns, cluster, packetCluster string) {
	pc := &infrav1.PacketCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: packetCluster}, pc)).To(Succeed())
	Expect(pc.Status.Network).NotTo(BeNil(), "the PacketCluster reports its VLAN")
	vlanID := pc.Status.Network.VLANID
	devices, err := sim.Devices(ctx, infrav1.ClusterTag(ns, cluster))
	Expect(err).NotTo(HaveOccurred())
	Expect(devices).To(HaveLen(2))
	workers := 0
	for _, summary := range devices {
		d, err := sim.Device(ctx, summary.ID)
		Expect(err).NotTo(HaveOccurred())
		var bond0 *Port
		for i := range d.Ports {
			if d.Ports[i].Name == "bond0" {
				bond0 = &d.Ports[i]
			}
		}
		Expect(bond0).NotTo(BeNil())
		Expect(bond0.Data.Bonded).To(BeTrue(), "hybrid-bonded keeps bond0 bonded")
		Expect(bond0.VLANs).To(ContainElement(HaveField("ID", vlanID)), "device %s carries the cluster's VLAN", d.Hostname)
		if hasTagPart(d.Tags, infrav1.RoleTag(false)) {
			workers++
			for _, ip := range d.Network {
				Expect(ip.Public && strings.Contains(ip.Address, ".")).To(BeFalse(), "the worker %s has no public IPv4", d.Hostname)
			}
		}
	}
	Expect(workers).To(Equal(1))
}

// expectRAIDLayout checks that the raid flavour's devices were created with its layout and that
// their hosts mounted it: etcd's data on an array of its own on the control plane only.
func expectRAIDLayout(ctx context.Context, ns, cluster string) {
	devices, err := sim.Devices(ctx, infrav1.ClusterTag(ns, cluster))
	Expect(err).NotTo(HaveOccurred())
	Expect(devices).To(HaveLen(2))
	for _, summary := range devices {
		d, err := sim.Device(ctx, summary.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(d.Storage)).To(ContainSubstring(`"name":"/dev/md/ROOT"`), "device %s has the flavour's layout", d.Hostname)
		console, err := sim.Console(ctx, d.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(console).To(ContainSubstring("mount: /dev/md/ROOT on / type ext4"))
		etcd := ContainSubstring("mount: /dev/md/ETCD on /var/lib/etcd type ext4")
		if slices.Contains(d.Tags, infrav1.RoleTag(true)) {
			Expect(console).To(etcd, "control plane %s", d.Hostname)
		} else {
			Expect(console).NotTo(etcd, "worker %s", d.Hostname)
		}
	}
}
