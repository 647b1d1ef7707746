package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// previousProviderModule is the release whose templates users bring: the previous Packet
// provider's last one, read from the module cache as clusterctl users read its release.
const previousProviderModule = "sigs.k8s.io/cluster-api-provider-packet@v0.9.0"

var _ = Describe("The previous provider's templates", func() {
	It("bring each v0.9.0 flavour, rendered unchanged, to Available with a Ready Node per Machine, and delete it cleanly", func(ctx SpecContext) {
		templates := previousProviderTemplates(ctx)
		Expect(templates).To(HaveLen(7), "v0.9.0 ships seven flavours")

		// All seven come up at once, as seven teams' clusters would: each in its namespace, so
		// each namespace's cleanup checks that nothing of it is left on the simulator.
		type applied struct{ file, ns, name string }
		var clusters []applied
		start := time.Now()
		for _, file := range templates {
			flavour := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "cluster-template"), ".yaml")
			flavour = strings.TrimPrefix(flavour, "-")
			if flavour == "" {
				flavour = "default"
			}
			ns := testNamespace(ctx, "v090-"+flavour)
			name := "v090-" + flavour
			By("rendering " + filepath.Base(file) + " with clusterctl (variables only) into " + ns)
			out, err := sb.Clusterctl(ctx, "generate", "cluster", name, "--from", file, "--target-namespace", ns,
				"--kubernetes-version", "v1.36.0", "--control-plane-machine-count", "1", "--worker-machine-count", "1",
				"--kubeconfig", sb.Kubeconfig)
			Expect(err).NotTo(HaveOccurred(), string(out))
			applyYAML(ctx, ns, out)
			clusters = append(clusters, applied{file: filepath.Base(file), ns: ns, name: name})
		}

		for _, c := range clusters {
			By(c.file + ": the Cluster becomes Available with 1 control plane and 1 worker, a Ready Node each")
			waitClusterAvailable(ctx, c.ns, c.name, 1, 1, 6*time.Minute)
			expectNodesMatchMachines(ctx, c.ns, c.name)
			expectHostsRanTheirCommands(ctx, c.ns, c.name)
			GinkgoWriter.Printf("%s: kubectl apply to Cluster Available within %s\n", c.file, time.Since(start).Round(time.Second))
		}

		By("deleting the seven Clusters; each namespace's cleanup checks that nothing is left")
		for _, c := range clusters {
			Expect(k8s.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: c.name}})).To(Succeed())
		}
	})
})

// expectHostsRanTheirCommands checks what the control plane's host made of its user-data: the
// programs it was told to run are reported as taken for succeeded, and with kube-vip (the
// PacketCluster's vipManager, whatever writes the manifest) the host announces the endpoint over
// its BGP session rather than holding an assignment of the address.
func expectHostsRanTheirCommands(ctx context.Context, ns, name string) {
	pc := &infrav1.PacketCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pc)).To(Succeed())
	var cp Device
	Eventually(func(g Gomega) {
		for _, d := range devicesOf(ctx, g, ns) {
			if slices.Contains(d.Tags, infrav1.RoleTag(true)) {
				cp = d
			}
		}
		g.Expect(cp.ID).NotTo(BeEmpty(), "a control-plane device")
	}).WithContext(ctx).Should(Succeed())
	console, err := sim.Console(ctx, cp.ID)
	Expect(err).NotTo(HaveOccurred())
	Expect(console).To(MatchRegexp(`runcmd: not emulated, taken as succeeded: .*\bapt-get\b`))
	if pc.Spec.VIPManager != infrav1.KubeVIPVIPManager {
		Expect(console).NotTo(ContainSubstring("kube-vip:"))
		return
	}
	Expect(console).To(ContainSubstring("kube-vip: a static pod announces the control-plane endpoint over BGP"))
	sessions, err := sim.BGPSessions(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(slices.ContainsFunc(sessions, func(s BGPSession) bool { return strings.HasSuffix(s.Device.Href, "/"+cp.ID) })).
		To(BeTrue(), "the control plane %s has a BGP session", cp.ID)
	d, err := sim.Device(ctx, cp.ID)
	Expect(err).NotTo(HaveOccurred())
	Expect(slices.ContainsFunc(d.Network, func(ip IP) bool { return ip.Address == pc.Spec.ControlPlaneEndpoint.Host })).
		To(BeFalse(), "kube-vip announces %s: no assignment of it to the device", pc.Spec.ControlPlaneEndpoint.Host)
}

// previousProviderTemplates are the cluster templates of the previous provider's release.
func previousProviderTemplates(ctx context.Context) []string {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", previousProviderModule).Output()
	Expect(err).NotTo(HaveOccurred(), "downloading %s", previousProviderModule)
	var mod struct{ Dir string }
	Expect(json.Unmarshal(out, &mod)).To(Succeed())
	files, err := filepath.Glob(filepath.Join(mod.Dir, "templates", "cluster-template*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	return files
}
