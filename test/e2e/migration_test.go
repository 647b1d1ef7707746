package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// The clusters the previous provider creates: its default template (CPEM moves the elastic IP)
// and its EMLB one, by its own manager, before the handover.
const (
	migratedCPEM = "v090-cpem"
	migratedEMLB = "v090-emlb"
)

var _ = Describe("Migration from the previous provider", Label("migration"), func() {
	It("takes over v0.9.0's running CPEM and EMLB clusters without a Packet create or delete, then scales, upgrades and deletes them", func(ctx SpecContext) {
		Expect(migration).NotTo(BeNil(), "this spec needs a sandbox started with the previous provider: make test-e2e-migration")
		ns := testNamespace(ctx, "migration")

		By("creating a CPEM cluster (1 control plane, 2 workers, 1 more on a hardware reservation) and an EMLB cluster with v0.9.0's templates and manager")
		start := time.Now()
		kubectlApply(ctx, withReservedWorker(generatePreviousCluster(ctx, ns, migratedCPEM, "", 2), migratedCPEM))
		kubectlApply(ctx, generatePreviousCluster(ctx, ns, migratedEMLB, "emlb", 1))
		waitClusterAvailable(ctx, ns, migratedCPEM, 1, 3, 8*time.Minute)
		waitClusterAvailable(ctx, ns, migratedEMLB, 1, 1, 8*time.Minute)
		GinkgoWriter.Printf("v0.9.0: both clusters Available in %s\n", time.Since(start).Round(time.Second))
		before := takeFleetPicture(ctx, ns)
		countsBefore, err := sim.RouteCounts(ctx)
		Expect(err).NotTo(HaveOccurred())

		By("handing over by the steps of docs/migration.md, this provider's manager killed once on the way")
		start = time.Now()
		handOver(ctx, ns)
		waitTakenOver(ctx, ns, before)
		takeover := time.Since(start)
		// Writes that trail the conditions (a hot loop, a late adoption) count too.
		time.Sleep(15 * time.Second)
		countsAfter, err := sim.RouteCounts(ctx)
		Expect(err).NotTo(HaveOccurred())
		writes := packetWrites(countsBefore, countsAfter)
		GinkgoWriter.Printf("takeover: %s, Packet writes %v\n", takeover.Round(time.Second), writes)
		Expect(creationsAndDeletions(writes)).To(BeEmpty(), "no device, IP, BGP session, SSH key or load balancer created or deleted")

		By("the Clusters stay Available on the same devices, elastic IP, load balancer and Nodes")
		waitClusterAvailable(ctx, ns, migratedCPEM, 1, 3, 2*time.Minute)
		waitClusterAvailable(ctx, ns, migratedEMLB, 1, 1, 2*time.Minute)
		Expect(takeFleetPicture(ctx, ns)).To(Equal(before))

		dayTwo(ctx, ns)
	})
})

// generatePreviousCluster renders one of v0.9.0's templates, as its users render it: clusterctl
// generate cluster --infrastructure packet:v0.9.0 from its release.
func generatePreviousCluster(ctx context.Context, ns, name, flavor string, workers int) []byte {
	args := []string{"generate", "cluster", name, "--infrastructure", "packet:" + migration.previousVersion,
		"--target-namespace", ns, "--kubernetes-version", "v1.36.0", "--control-plane-machine-count", "1",
		"--worker-machine-count", fmt.Sprint(workers), "--kubeconfig", sb.Kubeconfig}
	if flavor != "" {
		args = append(args, "--flavor", flavor)
	}
	out, err := sb.Clusterctl(ctx, args...)
	Expect(err).NotTo(HaveOccurred(), string(out))
	return out
}

// reservedWorkers are the hardware reservations (sv15) the reserved worker may take, in order.
// v0.9.0 ignores a single reservation ID (its device is on demand) and crashes on a list without
// a facility, so the list and the facility are what its users wrote.
const reservedWorkers = "00000000-0000-4000-8000-00000000a001,00000000-0000-4000-8000-00000000a002"

// withReservedWorker adds to a v0.9.0 cluster a second MachineDeployment, <cluster>-reserved,
// of one worker on a hardware reservation: worker-a's objects copied, its own selector.
func withReservedWorker(manifests []byte, cluster string) []byte {
	objs, err := sandbox.DecodeYAML(manifests)
	Expect(err).NotTo(HaveOccurred())
	name, label := cluster+"-reserved", map[string]any{"pool": "reserved"}
	var out bytes.Buffer
	for _, o := range objs {
		if o.GetName() != cluster+"-worker-a" || (o.GetKind() != "PacketMachineTemplate" && o.GetKind() != "MachineDeployment") {
			continue
		}
		c := o.DeepCopy()
		c.SetName(name)
		c.SetResourceVersion("")
		if c.GetKind() == "PacketMachineTemplate" {
			Expect(unstructured.SetNestedField(c.Object, "sv15", "spec", "template", "spec", "facility")).To(Succeed())
			Expect(unstructured.SetNestedField(c.Object, reservedWorkers, "spec", "template", "spec", "hardwareReservationID")).To(Succeed())
		} else {
			Expect(unstructured.SetNestedField(c.Object, int64(1), "spec", "replicas")).To(Succeed())
			Expect(unstructured.SetNestedField(c.Object, name, "spec", "template", "spec", "infrastructureRef", "name")).To(Succeed())
			for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
				labels, _, _ := unstructured.NestedMap(c.Object, path...)
				maps.Copy(labels, label)
				Expect(unstructured.SetNestedMap(c.Object, labels, path...)).To(Succeed())
			}
		}
		data, err := yaml.Marshal(c.Object)
		Expect(err).NotTo(HaveOccurred())
		out.WriteString("---\n")
		out.Write(data)
	}
	Expect(out.Len()).NotTo(BeZero(), "worker-a's MachineDeployment and PacketMachineTemplate")
	return append(append(manifests, '\n'), out.Bytes()...)
}

// kubectlApply applies manifests with kubectl, as v0.9.0's users did: its EMLB reconciler writes
// into the PacketCluster's annotations without creating the map, so it panics on an object that
// has none, and kubectl's last-applied-configuration annotation is what spared them.
func kubectlApply(ctx context.Context, manifests []byte) {
	cmd := exec.CommandContext(ctx, sandbox.EnvOr("KUBECTL", "kubectl"), "apply", "--kubeconfig", sb.Kubeconfig, "-f", "-")
	cmd.Stdin = bytes.NewReader(manifests)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

// handOver does what docs/migration.md tells a user: stop the previous manager, remove its
// components but not its CRDs (clusterctl delete keeps them), install this release's over them,
// and start this provider's manager, allowed to adopt the elastic IPs v0.9.0 tagged without a
// namespace in ns. The manager is killed once while it adopts, as a crash would, and restarted.
func handOver(ctx context.Context, ns string) {
	Expect(sb.StopManager(syscall.SIGTERM)).To(Succeed())
	out, err := sb.Clusterctl(ctx, "delete", "--infrastructure", "packet", "--kubeconfig", sb.Kubeconfig)
	Expect(err).NotTo(HaveOccurred(), string(out))
	Expect(sb.UseProviderComponents(migration.componentsOf(migration.releaseTag))).To(Succeed())
	out, err = sb.Clusterctl(ctx, "init", "--infrastructure", "packet:"+migration.releaseTag, "--kubeconfig", sb.Kubeconfig)
	Expect(err).NotTo(HaveOccurred(), string(out))
	Expect(sb.WireWebhooks(ctx)).To(Succeed())

	args := append(ManagerArgs(), "--legacy-adoption-namespaces="+ns)
	manager := sandbox.DefaultConfig(repoRoot()).Manager
	Expect(sb.StartManager(ctx, manager, args, nil)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(adoptedMachines(ctx, g, ns)).To(BeNumerically(">", 0))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	Expect(sb.StopManager(syscall.SIGKILL)).To(Succeed())
	Expect(sb.StartManager(ctx, manager, args, nil)).To(Succeed())
}

// waitTakenOver waits until this provider reports on every PacketMachine and PacketCluster of
// the fleet: DeviceReady on the device v0.9.0 created, the EMLB control plane an origin of its
// load balancer, the cluster's endpoint ready.
func waitTakenOver(ctx context.Context, ns string, before fleetPicture) {
	Eventually(func(g Gomega) {
		g.Expect(adoptedMachines(ctx, g, ns)).To(Equal(len(before.Devices)))
		pms := &infrav1.PacketMachineList{}
		g.Expect(k8s.List(ctx, pms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: migratedEMLB,
			clusterv1.MachineControlPlaneLabel: ""})).To(Succeed())
		g.Expect(pms.Items).To(HaveLen(1))
		g.Expect(conditionStatus(pms.Items[0].Status.Conditions, infrav1.LoadBalancerOriginReadyCondition)).To(Equal(metav1.ConditionTrue),
			"the EMLB control plane is an origin: %v", pms.Items[0].Status.Conditions)
		pcs := &infrav1.PacketClusterList{}
		g.Expect(k8s.List(ctx, pcs, client.InNamespace(ns))).To(Succeed())
		g.Expect(pcs.Items).To(HaveLen(2))
		for _, pc := range pcs.Items {
			g.Expect(conditionStatus(pc.Status.Conditions, infrav1.ControlPlaneEndpointReadyCondition)).
				To(Equal(metav1.ConditionTrue), "PacketCluster %s endpoint: %v", pc.Name, pc.Status.Conditions)
		}
	}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
}

// adoptedMachines counts the PacketMachines whose DeviceReady this provider set to True.
func adoptedMachines(ctx context.Context, g Gomega, ns string) int {
	pms := &infrav1.PacketMachineList{}
	g.Expect(k8s.List(ctx, pms, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, pm := range pms.Items {
		if conditionStatus(pm.Status.Conditions, infrav1.DeviceReadyCondition) == metav1.ConditionTrue {
			n++
		}
	}
	return n
}

// fleetPicture is what a takeover must not change.
type fleetPicture struct {
	Devices       map[string]string // Machine → device ID
	Reservations  map[string]string // Machine → hardware reservation ID
	Nodes         map[string]string // Node → provider ID, both clusters
	EndpointHosts map[string]string // Cluster → control-plane endpoint host
	ElasticIP     string            // the CPEM cluster's, by ID
	LoadBalancer  string            // the EMLB cluster's, by ID
}

func takeFleetPicture(ctx context.Context, ns string) fleetPicture {
	p := fleetPicture{Devices: map[string]string{}, Reservations: map[string]string{}, Nodes: map[string]string{},
		EndpointHosts: map[string]string{}}
	machines := &clusterv1.MachineList{}
	Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
	for _, m := range machines.Items {
		id, err := infrav1.ParseProviderID(m.Spec.ProviderID)
		Expect(err).NotTo(HaveOccurred(), "Machine %s", m.Name)
		p.Devices[m.Name] = id
		d, err := sim.Device(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		if d.HardwareReservation != nil {
			p.Reservations[m.Name] = path.Base(d.HardwareReservation.Href)
		}
	}
	Expect(p.Reservations).To(HaveLen(1), "the reserved worker, and only it, runs on a hardware reservation")
	for _, name := range []string{migratedCPEM, migratedEMLB} {
		nodes := &corev1.NodeList{}
		Expect(workloadClient(ctx, ns, name).List(ctx, nodes)).To(Succeed())
		for _, n := range nodes.Items {
			p.Nodes[n.Name] = n.Spec.ProviderID
		}
		c := &clusterv1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
		p.EndpointHosts[name] = c.Spec.ControlPlaneEndpoint.Host
	}
	// The endpoints' Packet objects: CPEM's elastic IP, EMLB's load balancer.
	ips, err := sim.IPReservations(ctx, "")
	Expect(err).NotTo(HaveOccurred())
	for _, ip := range ips {
		if ip.Address == p.EndpointHosts[migratedCPEM] {
			p.ElasticIP = ip.ID
		}
	}
	lbs, err := sim.LoadBalancers(ctx)
	Expect(err).NotTo(HaveOccurred())
	for _, lb := range lbs {
		if slices.Contains(lb.IPs, p.EndpointHosts[migratedEMLB]) {
			p.LoadBalancer = lb.ID
		}
	}
	Expect(p.ElasticIP).NotTo(BeEmpty(), "the CPEM cluster's elastic IP %s is reserved", p.EndpointHosts[migratedCPEM])
	Expect(p.LoadBalancer).NotTo(BeEmpty(), "the EMLB cluster's load balancer answers on %s", p.EndpointHosts[migratedEMLB])
	return p
}

// packetWrites are the requests per write route between two RouteCounts, the token exchange
// (a read of a token, not of Packet's state) left out.
func packetWrites(before, after map[string]int) map[string]int {
	writes := map[string]int{}
	for route, n := range after {
		method, path, _ := strings.Cut(route, " ")
		if method == "GET" || strings.Contains(path, "api-keys/exchange") {
			continue
		}
		if d := n - before[route]; d > 0 {
			writes[route] = d
		}
	}
	return writes
}

// creationsAndDeletions keeps the writes that create or delete something at Packet (or act on a
// device), leaving out the updates of tags and names an adoption may make.
func creationsAndDeletions(writes map[string]int) []string {
	var out []string
	for _, route := range slices.Sorted(maps.Keys(writes)) {
		if method, _, _ := strings.Cut(route, " "); method == "POST" || method == "DELETE" {
			out = append(out, fmt.Sprintf("%s (%d×)", route, writes[route]))
		}
	}
	return out
}

// dayTwo checks that the adopted clusters are this provider's now: the CPEM cluster's workers
// scaled 2 → 3 → 1, its control plane rolled to another Kubernetes version with the endpoint
// probed throughout, and both clusters deleted (testNamespace's cleanup checks nothing is left).
func dayTwo(ctx context.Context, ns string) {
	By("scaling the adopted MachineDeployment 2 → 3 → 1")
	md := migratedCPEM + "-worker-a"
	scaleMachineDeployment(ctx, ns, md, 3)
	waitClusterAvailable(ctx, ns, migratedCPEM, 1, 3+1, 6*time.Minute)
	scaleMachineDeployment(ctx, ns, md, 1)
	waitClusterAvailable(ctx, ns, migratedCPEM, 1, 1+1, 6*time.Minute)
	expectNodesMatchMachines(ctx, ns, migratedCPEM)

	By("rolling the adopted control plane to " + upgradeVersion + " while probing the endpoint")
	wc := workloadClient(ctx, ns, migratedCPEM)
	probe := startEndpointProbe(ctx, wc)
	setControlPlaneVersion(ctx, ns, migratedCPEM, upgradeVersion)
	Eventually(func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{
			clusterv1.ClusterNameLabel: migratedCPEM, clusterv1.MachineControlPlaneLabel: ""})).To(Succeed())
		g.Expect(machines.Items).To(HaveLen(1))
		g.Expect(machines.Items[0].Spec.Version).To(Equal(upgradeVersion))
	}).WithContext(ctx).WithTimeout(8 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	waitClusterAvailable(ctx, ns, migratedCPEM, 1, 1+1, 4*time.Minute)
	longest, failures, total := probe.stop()
	GinkgoWriter.Printf("endpoint during the adopted control plane's rollout: %d of %d probes failed, at most %d in a row\n",
		failures, total, longest)
	Expect(longest).To(BeNumerically("<", 20), "the elastic IP moved to the new control plane without a 10 s outage")

	By("deleting both adopted clusters: no device, elastic IP or load balancer is left at Packet")
	after := takeFleetPicture(ctx, ns)
	for _, name := range []string{migratedCPEM, migratedEMLB} {
		Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	}
	Eventually(func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
		g.Expect(machines.Items).To(BeEmpty(), "Machines")
		left := packetObjectIDs(ctx, g)
		for _, id := range slices.Collect(maps.Values(after.Devices)) {
			g.Expect(left.devices).NotTo(HaveKey(id), "device %s deleted", id)
		}
		// The reclaim policy is Delete by default: the elastic IP and the load balancer go too.
		g.Expect(left.ips).NotTo(ContainElement(after.ElasticIP), "elastic IP released")
		g.Expect(left.lbs).NotTo(ContainElement(after.LoadBalancer), "load balancer deleted")
	}).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Succeed())
}

// packetObjects are the IDs of what the simulator holds (packetObjectIDs).
type packetObjects struct {
	devices  map[string]bool
	ips, lbs []string
}

func packetObjectIDs(ctx context.Context, g Gomega) packetObjects {
	o := packetObjects{devices: map[string]bool{}}
	devices, err := sim.Devices(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())
	for _, d := range devices {
		o.devices[d.ID] = true
	}
	ips, err := sim.IPReservations(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())
	for _, ip := range ips {
		o.ips = append(o.ips, ip.ID)
	}
	lbs, err := sim.LoadBalancers(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	for _, lb := range lbs {
		o.lbs = append(o.lbs, lb.ID)
	}
	return o
}
