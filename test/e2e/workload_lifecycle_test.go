package e2e

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

const upgradeVersion = "v1.36.1"

var _ = Describe("Workload cluster lifecycle", func() {
	It("runs a three-node control plane with three etcd members and rolls it and the workers to another Kubernetes version while the endpoint answers", func(ctx SpecContext) {
		ns := testNamespace(ctx, "ha-upgrade")
		const name = "ha"
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "", "--control-plane-machine-count", "3", "--worker-machine-count", "1"))

		By("KubeadmControlPlane reaches 3/3 with 3 etcd members")
		waitClusterAvailable(ctx, ns, name, 3, 1, 6*time.Minute)
		wc := workloadClient(ctx, ns, name)
		expectEtcdMembers(ctx, wc, 3)
		expectNodesMatchMachines(ctx, ns, name)

		By("upgrading the control plane and the workers to " + upgradeVersion + " while polling the endpoint")
		probe := startEndpointProbe(ctx, wc)
		setControlPlaneVersion(ctx, ns, name, upgradeVersion)
		md := &clusterv1.MachineDeployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-worker-a"}, md)).To(Succeed())
		mdPatch := client.MergeFrom(md.DeepCopy())
		md.Spec.Template.Spec.Version = upgradeVersion
		Expect(k8s.Patch(ctx, md, mdPatch)).To(Succeed())

		By("new devices replace the old ones one by one")
		Eventually(func(g Gomega) {
			machines := &clusterv1.MachineList{}
			g.Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(4))
			for _, m := range machines.Items {
				g.Expect(m.Spec.Version).To(Equal(upgradeVersion), "Machine %s version", m.Name)
			}
			g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(4), "one device per Machine, the old ones deleted")
		}).WithContext(ctx).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		waitClusterAvailable(ctx, ns, name, 3, 1, 4*time.Minute)
		expectEtcdMembers(ctx, wc, 3)
		expectNodesMatchMachines(ctx, ns, name)
		longest, failures, total := probe.stop()
		GinkgoWriter.Printf("endpoint during the rollout: %d of %d probes failed, at most %d in a row\n", failures, total, longest)
		Expect(longest).To(BeNumerically("<", 20),
			"the control-plane endpoint kept answering through the rollout, no outage of 10 s (CPEM moves the elastic IP off a deleted control plane)")

		deleteClusterAndExpectNoDevices(ctx, ns, name)
	})

	It("gives a Machine with broken bootstrap data an active device and no Node, and says why on the device", func(ctx SpecContext) {
		ns := testNamespace(ctx, "broken-bootstrap")
		const name = "broken"
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "", "--control-plane-machine-count", "1", "--worker-machine-count", "0"))
		waitClusterAvailable(ctx, ns, name, 1, 0, 4*time.Minute)

		By("a Machine whose bootstrap data is not valid YAML")
		newMachineWithBootstrap(ctx, ns, name, "broken-0", "#cloud-config\nwrite_files: [\n  - path: /x\n")
		var deviceID string
		Eventually(func(g Gomega) {
			pm := &infrav1.PacketMachine{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broken-0"}, pm)).To(Succeed())
			g.Expect(pm.Spec.ProviderID).NotTo(BeEmpty())
			deviceID = pm.Spec.ProviderID[len(infrav1.ProviderIDPrefix):]
			d, err := sim.Device(ctx, deviceID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.State).To(Equal("active"))
			console, err := sim.Console(ctx, deviceID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(console).To(ContainSubstring("invalid cloud-config"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			m := &clusterv1.Machine{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broken-0"}, m)).To(Succeed())
			g.Expect(m.Status.NodeRef.IsDefined()).To(BeFalse(), "a Machine with broken bootstrap data got a Node")
		}).WithContext(ctx).WithTimeout(15 * time.Second).Should(Succeed())

		deleteClusterAndExpectNoDevices(ctx, ns, name)
	})

	It("gets no initialized control plane while the elastic IP cannot be attached, and recovers once it can", func(ctx SpecContext) {
		ns := testNamespace(ctx, "no-eip")
		const name = "no-eip"
		// Packet failing every assignment (503): the provider keeps retrying, with backoff.
		fault, err := sim.InjectFault(ctx, Fault{Kind: "http_error", Route: "POST /devices/{id}/ips", Status: 503})
		Expect(err).NotTo(HaveOccurred())
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "", "--control-plane-machine-count", "1", "--worker-machine-count", "0"))
		Eventually(func(g Gomega) {
			devices := devicesOf(ctx, g, ns)
			g.Expect(devices).To(HaveLen(1))
			g.Expect(devices[0].State).To(Equal("active"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			kcp := &controlplanev1.KubeadmControlPlane{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-control-plane"}, kcp)).To(Succeed())
			g.Expect(ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false)).To(BeFalse(),
				"the control plane initialized although Packet routes its endpoint nowhere")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("lifting the fault: the provider attaches the elastic IP and the cluster comes up")
		Expect(sim.RemoveFault(ctx, fault)).To(Succeed())
		waitClusterAvailable(ctx, ns, name, 1, 0, 4*time.Minute)
		deleteClusterAndExpectNoDevices(ctx, ns, name)
	})
})

func expectEtcdMembers(ctx context.Context, wc client.Client, n int) {
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(wc.List(ctx, pods, client.InNamespace("kube-system"), client.MatchingLabels{"component": "etcd"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(n), "etcd members")
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}

// newMachineWithBootstrap creates a worker Machine of cluster whose bootstrap data is data.
func newMachineWithBootstrap(ctx context.Context, ns, cluster, name, data string) {
	newMachineWith(ctx, ns, cluster, name, data,
		infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", BillingCycle: "hourly", SSHKeys: []string{sshKey}})
}

// newMachineWith creates a Machine with bootstrap data ready and its PacketMachine of spec.
func newMachineWith(ctx context.Context, ns, cluster, name, data string, spec infrav1.PacketMachineSpec) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-bootstrap", Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Data:       map[string][]byte{"value": []byte(data), "format": []byte("cloud-config")},
		Type:       clusterv1.ClusterSecretType,
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	Expect(k8s.Create(ctx, &infrav1.PacketMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec:       spec,
	})).To(Succeed())
	Expect(k8s.Create(ctx, &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec: clusterv1.MachineSpec{ClusterName: cluster, Version: "v1.36.0",
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(secret.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PacketMachine", Name: name}},
	})).To(Succeed())
}

// endpointProbe lists the workload cluster's Nodes twice a second and counts the failures, and
// the longest run of them.
type endpointProbe struct {
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	longest, inARow int
	failures, total int
}

func startEndpointProbe(ctx context.Context, wc client.Client) *endpointProbe {
	p := &endpointProbe{}
	ctx, p.cancel = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := wc.List(reqCtx, &corev1.NodeList{})
			cancel()
			if ctx.Err() != nil {
				return
			}
			p.total++
			if err != nil {
				p.failures++
				p.inARow++
				p.longest = max(p.longest, p.inARow)
				continue
			}
			p.inARow = 0
		}
	}()
	return p
}

// setControlPlaneVersion sets the Kubernetes version of a cluster's KubeadmControlPlane, which
// rolls its machines.
func setControlPlaneVersion(ctx context.Context, ns, cluster, version string) {
	kcp := &controlplanev1.KubeadmControlPlane{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster + "-control-plane"}, kcp)).To(Succeed())
	patch := client.MergeFrom(kcp.DeepCopy())
	kcp.Spec.Version = version
	Expect(k8s.Patch(ctx, kcp, patch)).To(Succeed())
}

func (p *endpointProbe) stop() (longest, failures, total int) {
	p.cancel()
	p.wg.Wait()
	return p.longest, p.failures, p.total
}
