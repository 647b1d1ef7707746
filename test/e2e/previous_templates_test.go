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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
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
		type applied struct {
			file, ns, name string
			ownKey         bool // the PacketCluster exposes its own key, as the event told to do
		}
		var clusters []applied
		start := time.Now()
		render := func(file, ns, name string) []byte {
			By("rendering " + filepath.Base(file) + " with clusterctl (variables only) into " + ns)
			out, err := sb.Clusterctl(ctx, "generate", "cluster", name, "--from", file, "--target-namespace", ns,
				"--kubernetes-version", "v1.36.0", "--control-plane-machine-count", "1", "--worker-machine-count", "1",
				"--kubeconfig", sb.Kubeconfig)
			Expect(err).NotTo(HaveOccurred(), string(out))
			return out
		}
		for _, file := range templates {
			flavour := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "cluster-template"), ".yaml")
			flavour = strings.TrimPrefix(flavour, "-")
			if flavour == "" {
				flavour = "default"
			}
			ns := testNamespace(ctx, "v090-"+flavour)
			name := "v090-" + flavour
			applyYAML(ctx, ns, render(file, ns, name))
			clusters = append(clusters, applied{file: filepath.Base(file), ns: ns, name: name})
		}

		// Their user-data asks for {{ .apiKey }} (CPEM's key), which this provider never fills
		// with the manager's. An eighth cluster does what the Warning event says: the default
		// template, its PacketCluster given its own key (a Secret that allows it) and
		// exposeAPIKeyInUserData.
		ns := testNamespace(ctx, "v090-own-key")
		const ownKey = "v090-own-key"
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "packet-credentials",
			Annotations: map[string]string{infrav1.ExposeInUserDataAnnotation: "true"}},
			Data: map[string][]byte{credentials.APIKeySecretKey: []byte(sandbox.SimToken)}})).To(Succeed())
		defaultTemplate := templates[slices.IndexFunc(templates, func(f string) bool { return filepath.Base(f) == "cluster-template.yaml" })]
		applyYAMLEditingPacketCluster(ctx, ns, render(defaultTemplate, ns, ownKey), func(pc map[string]any) error {
			if err := unstructured.SetNestedField(pc, "packet-credentials", "spec", "credentialsRef", "name"); err != nil {
				return err
			}
			return unstructured.SetNestedField(pc, true, "spec", "exposeAPIKeyInUserData")
		})
		clusters = append(clusters, applied{file: "cluster-template.yaml with its own key", ns: ns, name: ownKey, ownKey: true})

		for _, c := range clusters {
			By(c.file + ": the Cluster becomes Available with 1 control plane and 1 worker, a Ready Node each")
			waitClusterAvailable(ctx, c.ns, c.name, 1, 1, 6*time.Minute)
			expectNodesMatchMachines(ctx, c.ns, c.name)
			expectHostsRanTheirCommands(ctx, c.ns, c.name)
			expectCPEMKey(ctx, c.ns, c.name, c.ownKey)
			GinkgoWriter.Printf("%s: kubectl apply to Cluster Available within %s\n", c.file, time.Since(start).Round(time.Second))
		}

		By("deleting the eight Clusters; each namespace's cleanup checks that nothing is left")
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

// expectCPEMKey checks the key the host gave CPEM (the workload cluster's metal-cloud-config,
// which the templates' kubectl writes from {{ .apiKey }}) and what the provider said about it:
// without the cluster's own exposed key, nothing, and a Warning event on the control plane's
// PacketMachine naming what to set; with it, that key, and no warning.
func expectCPEMKey(ctx context.Context, ns, name string, ownKey bool) {
	wc := workloadClient(ctx, ns, name)
	s := &corev1.Secret{}
	Eventually(func() error {
		return wc.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "metal-cloud-config"}, s)
	}).WithContext(ctx).Should(Succeed(), "the host's kubectl created CPEM's Secret")
	var config struct {
		APIKey string `json:"apiKey"`
	}
	Expect(json.Unmarshal(s.Data["cloud-sa.json"], &config)).To(Succeed())

	events := &corev1.EventList{}
	Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	warned := slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.Reason == infrav1.APIKeyNotInUserDataReason && e.Type == corev1.EventTypeWarning &&
			strings.Contains(e.Message, "spec.exposeAPIKeyInUserData")
	})
	if ownKey {
		Expect(config.APIKey).To(Equal(sandbox.SimToken), "cloud-sa.json has the cluster's own key")
		Expect(warned).To(BeFalse(), "no warning once the cluster's own key is exposed")
		return
	}
	Expect(config.APIKey).To(BeEmpty(), "cloud-sa.json has no apiKey: the manager's key is never put in user-data")
	Expect(warned).To(BeTrue(), "a Warning event says {{ .apiKey }} rendered empty and what to set")
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
