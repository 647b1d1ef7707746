package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// testNamespace creates a namespace for one spec and registers its cleanup: delete every Cluster
// (and any Machine left), check that the simulator holds nothing the spec created, dump artifacts
// if the spec failed, and remove the namespace.
func testNamespace(ctx context.Context, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + prefix + "-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	name := ns.Name
	By("using namespace " + name)
	DeferCleanup(func(ctx SpecContext) {
		cleanupErr := deleteClusters(ctx, name)
		leakErr := checkLeaks(ctx, name)
		if CurrentSpecReport().Failed() || cleanupErr != nil || leakErr != nil {
			dumpArtifacts(ctx, name)
		}
		Expect(cleanupErr).NotTo(HaveOccurred(), "deleting the clusters of %s", name)
		Expect(leakErr).NotTo(HaveOccurred(), "leak check of %s", name)
		_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		Expect(sb.WaitNamespaceDeleted(ctx, name, 2*time.Minute)).To(Succeed())
	}, NodeTimeout(6*time.Minute))
	return name
}

// clusterTagPart matches the tags of every Packet object of every cluster in namespace ns.
func clusterTagPart(ns string) string { return infrav1.ClusterTagPrefix + ns + "/" }

// deleteClusters deletes every Cluster and standalone Machine in ns and waits until they are gone.
func deleteClusters(ctx context.Context, ns string) error {
	if sb == nil {
		return nil
	}
	if err := k8s.DeleteAllOf(ctx, &clusterv1.Cluster{}, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	deadline := time.Now().Add(4 * time.Minute)
	for {
		clusters := &clusterv1.ClusterList{}
		machines := &clusterv1.MachineList{}
		pms := &infrav1.PacketMachineList{}
		pcs := &infrav1.PacketClusterList{}
		if err := errors.Join(k8s.List(ctx, clusters, client.InNamespace(ns)), k8s.List(ctx, machines, client.InNamespace(ns)),
			k8s.List(ctx, pms, client.InNamespace(ns)), k8s.List(ctx, pcs, client.InNamespace(ns))); err != nil {
			return err
		}
		if len(clusters.Items)+len(machines.Items)+len(pms.Items)+len(pcs.Items) == 0 {
			return nil
		}
		if len(clusters.Items) == 0 || time.Until(deadline) < 3*time.Minute {
			// Cluster API deletes only the Machines the Cluster owns; one that never got its owner
			// (a failed spec) would block the Cluster's deletion. Do not leak them.
			_ = k8s.DeleteAllOf(ctx, &clusterv1.Machine{}, client.InNamespace(ns))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 4m, %d clusters, %d machines, %d packetmachines and %d packetclusters are left in %s",
				len(clusters.Items), len(machines.Items), len(pms.Items), len(pcs.Items), ns)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// checkLeaks asserts that the simulator holds nothing of namespace ns's clusters; see
// SimClient.CheckLeaks.
func checkLeaks(ctx context.Context, ns string) error {
	if sim == nil {
		return nil
	}
	return sim.CheckLeaks(ctx, ns)
}

// dumpArtifacts writes the namespace's objects (with their conditions), the simulator's view and
// the last 200 lines of every component's log into <artifacts>/<spec>/.
func dumpArtifacts(ctx context.Context, ns string) {
	dir := filepath.Join(artifacts, slug(CurrentSpecReport().FullText())+"-"+ns)
	_ = os.MkdirAll(dir, 0o755)
	for _, gvk := range []schema.GroupVersionKind{
		clusterv1.GroupVersion.WithKind("ClusterList"), clusterv1.GroupVersion.WithKind("MachineList"),
		clusterv1.GroupVersion.WithKind("MachineSetList"), clusterv1.GroupVersion.WithKind("MachineDeploymentList"),
		controlplanev1.GroupVersion.WithKind("KubeadmControlPlaneList"), bootstrapv1.GroupVersion.WithKind("KubeadmConfigList"),
		infrav1.GroupVersion.WithKind("PacketClusterList"), infrav1.GroupVersion.WithKind("PacketMachineList"),
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			continue
		}
		var b strings.Builder
		for _, o := range l.Items {
			o.SetManagedFields(nil)
			data, _ := yaml.Marshal(o.Object)
			b.WriteString("---\n")
			b.Write(data)
		}
		_ = os.WriteFile(filepath.Join(dir, strings.TrimSuffix(gvk.Kind, "List")+".yaml"), []byte(b.String()), 0o644)
	}
	var sims strings.Builder
	if devices, err := sim.Devices(ctx, ""); err == nil {
		for _, d := range devices {
			fmt.Fprintf(&sims, "device %s %s %s tags=%v\n", d.ID, d.Hostname, d.State, d.Tags)
		}
	}
	if ips, err := sim.IPReservations(ctx, ""); err == nil {
		for _, ip := range ips {
			fmt.Fprintf(&sims, "ip %s %s %s tags=%v assignments=%d\n", ip.ID, ip.Type, ip.Address, ip.Tags, len(ip.Assignments))
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "packetsim.txt"), []byte(sims.String()), 0o644)
	dumpComponentLogs(dir)
	fmt.Fprintf(GinkgoWriter, "Artifacts of %s in %s\n", ns, dir)
}

func dumpComponentLogs(dir string) {
	if sb == nil {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	for _, c := range sb.Components {
		lines := sandbox.Tail(c.LogFile, 200)
		_ = os.WriteFile(filepath.Join(dir, c.Name+".log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// newCluster creates a Cluster with no control plane and its PacketCluster on the simulator.
func newCluster(ctx context.Context, ns, name string) *clusterv1.Cluster {
	pc := &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       infrav1.PacketClusterSpec{ProjectID: sandbox.SimProjectID, Metro: "sv", VIPManager: infrav1.CPEMVIPManager},
	}
	Expect(k8s.Create(ctx, pc)).To(Succeed())
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: name},
		},
	}
	Expect(k8s.Create(ctx, cluster)).To(Succeed())
	return cluster
}

// waitClusterProvisioned waits for the PacketCluster to be provisioned with an endpoint.
func waitClusterProvisioned(ctx context.Context, ns, name string) *infrav1.PacketCluster {
	pc := &infrav1.PacketCluster{}
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pc)).To(Succeed())
		g.Expect(pc.Status.Initialization.Provisioned).To(HaveValue(BeTrue()), "PacketCluster %s/%s provisioned", ns, name)
		g.Expect(pc.Spec.ControlPlaneEndpoint.Host).NotTo(BeEmpty())
	}).WithContext(ctx).Should(Succeed())
	return pc
}

// newMachine creates a worker Machine with a ready bootstrap data secret and its PacketMachine.
// The data joins no cluster: these specs are about devices, not Nodes.
func newMachine(ctx context.Context, ns, cluster, name string) {
	newMachineWithBootstrap(ctx, ns, cluster, name, "#cloud-config\nruncmd:\n- echo no kubeadm here\n")
}

// machinesProvisioned returns how many Machines in ns report infrastructure provisioned with a
// providerID, and how many Machines there are.
func machinesProvisioned(ctx context.Context, g Gomega, ns string) (provisioned, total int) {
	machines := &clusterv1.MachineList{}
	g.Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
	for _, m := range machines.Items {
		if ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false) && m.Spec.ProviderID != "" {
			provisioned++
		}
	}
	return provisioned, len(machines.Items)
}

// devicesOf lists the simulator's devices of the clusters in ns.
func devicesOf(ctx context.Context, g Gomega, ns string) []Device {
	devices, err := sim.Devices(ctx, clusterTagPart(ns))
	g.Expect(err).NotTo(HaveOccurred())
	return devices
}

// applyYAML creates every object of a multi-document YAML stream in ns.
func applyYAML(ctx context.Context, ns string, data []byte) {
	applyYAMLEditingPacketCluster(ctx, ns, data, nil)
}

// applyYAMLEditingPacketCluster is applyYAML with the PacketCluster changed by edit first (the
// fields a spec sets by hand, as a user would after rendering).
func applyYAMLEditingPacketCluster(ctx context.Context, ns string, data []byte, edit func(pc map[string]any) error) {
	objs, err := sandbox.DecodeYAML(data)
	Expect(err).NotTo(HaveOccurred())
	Expect(objs).NotTo(BeEmpty())
	for _, o := range objs {
		if o.GetNamespace() == "" && o.GetKind() != "Namespace" {
			o.SetNamespace(ns)
		}
		if o.GetKind() == "PacketCluster" && edit != nil {
			Expect(edit(o.Object)).To(Succeed())
		}
		Eventually(func() error { return sb.Apply(ctx, o) }).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(),
			"applying %s %s", o.GetKind(), o.GetName())
	}
}

// generateCluster runs `clusterctl generate cluster` for a flavour of the installed provider's
// repository (the release artifacts) into ns.
func generateCluster(ctx context.Context, ns, name, flavor string, extra ...string) []byte {
	args := []string{"generate", "cluster", name, "--infrastructure", "packet", "--target-namespace", ns,
		"--kubernetes-version", "v1.36.0", "--kubeconfig", sb.Kubeconfig}
	if flavor != "" {
		args = append(args, "--flavor", flavor)
	}
	args = append(args, extra...)
	out, err := sb.Clusterctl(ctx, args...)
	Expect(err).NotTo(HaveOccurred(), string(out))
	return out
}
