package clusterctl_test

import (
	"fmt"
	"strings"
	"text/template"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

const (
	apiKey  = "test-api-key-7f3a"
	sshKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRY test@example.com"
	project = "a3b8c1d2-0000-4000-8000-000000000001"
	k8sVer  = "v1.36.3"
)

// templateVariables are every clusterctl variable the templates use.
var templateVariables = []string{
	"CLUSTER_NAME", "NAMESPACE", "KUBERNETES_VERSION", "CONTROL_PLANE_MACHINE_COUNT", "WORKER_MACHINE_COUNT",
	"PACKET_API_KEY", "PROJECT_ID", "METRO", "CONTROLPLANE_NODE_TYPE", "WORKER_NODE_TYPE", "NODE_OS", "SSH_KEY",
	"POD_CIDR", "SERVICE_CIDR", "CPEM_VERSION", "KUBE_VIP_VERSION", "CNI_RESOURCES", "CLUSTER_CLASS_NAMESPACE",
}

// templateVars are the values a user exports before `clusterctl generate cluster`.
func templateVars(extra map[string]string) map[string]string {
	vars := map[string]string{
		"PACKET_API_KEY":         apiKey,
		"PROJECT_ID":             project,
		"METRO":                  "da",
		"CONTROLPLANE_NODE_TYPE": "c3.small.x86",
		"WORKER_NODE_TYPE":       "m3.small.x86",
		"SSH_KEY":                sshKey,
		"CNI_RESOURCES":          `{"cni.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cni\n  namespace: kube-system\n"}`,
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

var _ = Describe("clusterctl v1.14.2 with the local repository", func() {
	It("is the version the Makefile stamped, so it compares contracts like the release", func() {
		out, err := runClusterctl(nil, "version", "-o", "short")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal("v1.14.2"))
	})

	It("finds the packet provider through the generated clusterctl.yaml", func() {
		out, err := runClusterctl(nil, "config", "repositories")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^packet\s+InfrastructureProvider\s+file://.*/infrastructure-packet/` + version))
	})

	It("describes the components: target namespace, variables and image", func() {
		out, err := runClusterctl(nil, "generate", "provider", "--infrastructure", "packet:"+version, "--describe")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("TargetNamespace:    cluster-api-provider-packet-system"))
		for _, v := range []string{"PACKET_API_KEY", "PACKET_API_URL", "LBAAS_API_URL", "METAL_TOKEN_EXCHANGE_URL", "CAPP_LOGLEVEL", "CAPP_DIAGNOSTICS_ADDRESS", "CAPP_INSECURE_DIAGNOSTICS"} {
			Expect(out).To(MatchRegexp(`(?m)^\s+- `+v+`$`), "variable %s", v)
		}
		Expect(out).To(ContainSubstring("quay.io/equinix-oss/cluster-api-provider-packet:" + version))
	})

	It("renders components that are well-formed and accepted by the kube-apiserver", func() {
		out, err := runClusterctl(map[string]string{"PACKET_API_KEY": apiKey}, "generate", "provider", "--infrastructure", "packet:"+version)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("${"))
		objs := decode([]byte(out))

		var namespaces []string
		for _, u := range objs {
			Expect(u.GetLabels()).To(HaveKeyWithValue("cluster.x-k8s.io/provider", "infrastructure-packet"), "%s %s", u.GetKind(), u.GetName())
			if u.GetKind() == "Namespace" {
				namespaces = append(namespaces, u.GetName())
			} else if u.GetNamespace() != "" {
				Expect(u.GetNamespace()).To(Equal("cluster-api-provider-packet-system"), "%s %s", u.GetKind(), u.GetName())
			}
		}
		Expect(namespaces).To(Equal([]string{"cluster-api-provider-packet-system"}))

		dep := find(objs, "Deployment", "capp-controller-manager")
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		Expect(containers).To(HaveLen(1))
		manager := containers[0].(map[string]any)
		Expect(manager["name"]).To(Equal("manager"))
		sc := manager["securityContext"].(map[string]any)
		Expect(sc).To(HaveKeyWithValue("readOnlyRootFilesystem", true))
		Expect(sc).To(HaveKeyWithValue("allowPrivilegeEscalation", false))
		Expect(sc["capabilities"]).To(HaveKeyWithValue("drop", ConsistOf("ALL")))
		podSC, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec", "securityContext")
		Expect(podSC).To(HaveKeyWithValue("runAsNonRoot", true))
		Expect(podSC["seccompProfile"]).To(HaveKeyWithValue("type", "RuntimeDefault"))
		Expect(manager).To(HaveKey("readinessProbe"))
		Expect(manager).To(HaveKey("livenessProbe"))
		Expect(manager["resources"]).To(HaveKey("requests"))
		Expect(manager["env"]).To(ContainElements(
			And(HaveKeyWithValue("name", "PACKET_API_URL"), HaveKeyWithValue("value", "https://api.equinix.com/metal/v1/")),
			And(HaveKeyWithValue("name", "LBAAS_API_URL"), HaveKeyWithValue("value", "https://lb.metalctrl.io/")),
			And(HaveKeyWithValue("name", "METAL_TOKEN_EXCHANGE_URL"), HaveKeyWithValue("value", "https://iam.metalctrl.io/api-keys/exchange"))))
		Expect(manager["args"]).To(ContainElements("--webhook-port=9443", "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs"))

		secret := find(objs, "Secret", "capp-manager-bootstrap-credentials")
		Expect(secret.Object["stringData"]).To(HaveKeyWithValue("apiKey", apiKey))

		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			wh := findKind(objs, kind)
			Expect(wh.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", "cluster-api-provider-packet-system/capp-serving-cert"))
			hooks, _, _ := unstructured.NestedSlice(wh.Object, "webhooks")
			Expect(hooks).To(HaveLen(4), kind)
		}
		cert := find(objs, "Certificate", "capp-serving-cert")
		Expect(cert.Object["spec"]).To(HaveKeyWithValue("dnsNames", ConsistOf(
			"capp-webhook-service.cluster-api-provider-packet-system.svc",
			"capp-webhook-service.cluster-api-provider-packet-system.svc.cluster.local")))

		// RBAC review: no wildcard anywhere; Cluster API core gets our kinds through aggregation.
		for _, u := range objs {
			if u.GetKind() != "ClusterRole" && u.GetKind() != "Role" {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			for _, r := range rules {
				for _, key := range []string{"verbs", "resources", "apiGroups", "nonResourceURLs"} {
					if values, ok := r.(map[string]any)[key]; ok {
						Expect(values).NotTo(ContainElement("*"), "%s %s %s", u.GetKind(), u.GetName(), key)
					}
				}
			}
		}
		reader, _, _ := unstructured.NestedSlice(find(objs, "ClusterRole", "capp-metrics-reader").Object, "rules")
		Expect(reader).To(Equal([]any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}),
			"the role a metrics scraper is bound to reads /metrics and nothing else")
		Expect(find(objs, "ClusterRole", "capp-aggregated-manager-role").GetLabels()).To(
			HaveKeyWithValue("cluster.x-k8s.io/aggregate-to-manager", "true"))

		Expect(dryRunApply(objs)).To(BeEmpty())
	})

	It("lists each template's variables, with defaults where they are sensible", func() {
		out, err := runClusterctl(nil, "generate", "cluster", "c1", "--infrastructure", "packet:"+version, "--list-variables", "--target-namespace", "x")
		Expect(err).NotTo(HaveOccurred())
		required := section(out, "Required Variables:")
		// CLUSTER_NAME and NAMESPACE come from the command line.
		Expect(required).To(ConsistOf("CONTROLPLANE_NODE_TYPE", "KUBERNETES_VERSION", "METRO",
			"PACKET_API_KEY", "PROJECT_ID", "SSH_KEY", "WORKER_NODE_TYPE"), out)
		optional := strings.Join(section(out, "Optional Variables:"), "\n")
		for _, v := range []string{"CONTROL_PLANE_MACHINE_COUNT", "WORKER_MACHINE_COUNT", "NODE_OS", "POD_CIDR", "SERVICE_CIDR", "CPEM_VERSION"} {
			Expect(optional).To(ContainSubstring(v))
		}
		out, err = runClusterctl(nil, "generate", "cluster", "c1", "--infrastructure", "packet:"+version, "--flavor", "kube-vip", "--list-variables", "--target-namespace", "x")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Join(section(out, "Optional Variables:"), "\n")).To(ContainSubstring("KUBE_VIP_VERSION"))
		out, err = runClusterctl(nil, "generate", "cluster", "c1", "--infrastructure", "packet:"+version, "--flavor", "emlb", "--list-variables", "--target-namespace", "x")
		Expect(err).NotTo(HaveOccurred())
		Expect(section(out, "Required Variables:")).To(ConsistOf("CONTROLPLANE_NODE_TYPE", "KUBERNETES_VERSION", "METRO",
			"PROJECT_ID", "SSH_KEY", "WORKER_NODE_TYPE"), "the load balancer's metro, and no API key without CPEM: %s", out)
		Expect(strings.Join(section(out, "Optional Variables:"), "\n")).NotTo(ContainSubstring("CPEM_VERSION"))
	})

	DescribeTable("renders every flavour into objects the kube-apiserver and the webhooks accept",
		func(flavor, vipManager string, crsCNI bool) {
			ns := "flavor-" + flavor
			if flavor == "" {
				ns = "flavor-default"
			}
			ensureNamespace(ns)
			args := []string{"generate", "cluster", "c1", "--infrastructure", "packet:" + version,
				"--target-namespace", ns, "--kubernetes-version", k8sVer,
				"--control-plane-machine-count", "3", "--worker-machine-count", "2", "--kubeconfig", kubeconfig}
			if flavor != "" {
				args = append(args, "--flavor", flavor)
			}
			out, err := runClusterctl(templateVars(nil), args...)
			Expect(err).NotTo(HaveOccurred())
			for _, v := range templateVariables {
				Expect(out).NotTo(ContainSubstring("${"+v), "clusterctl left %s unset", v)
			}
			Expect(out).NotTo(ContainSubstring("$$"), "clusterctl must have unescaped every $$")
			objs := decode([]byte(out))
			// EMLB clusters run no CPEM: no API key, no CPEM Secret and no cloud provider.
			cpem := vipManager != "EMLB"

			kinds := map[string]int{}
			for _, u := range objs {
				kinds[u.GetKind()]++
				Expect(u.GetNamespace()).To(Equal(ns), "%s %s", u.GetKind(), u.GetName())
				data, err := yaml.Marshal(u.Object)
				Expect(err).NotTo(HaveOccurred())
				if strings.Contains(string(data), apiKey) {
					// The API key reaches the workload cluster only through the CRS Secret.
					Expect(cpem).To(BeTrue(), "API key in %s %s of a cluster without CPEM", u.GetKind(), u.GetName())
					Expect(u.GetKind()).To(Equal("Secret"), "API key in %s %s", u.GetKind(), u.GetName())
					Expect(u.Object["type"]).To(Equal("addons.cluster.x-k8s.io/resource-set"))
				}
			}
			Expect(kinds).To(HaveKeyWithValue("Cluster", 1))
			crsCount := map[bool]int{false: 0, true: 1}
			Expect(kinds["ClusterResourceSet"]).To(Equal(crsCount[cpem]+crsCount[crsCNI]), "ClusterResourceSets")

			if cpem {
				cpemSecret := find(objs, "Secret", "c1-cpem-secret")
				crsData := cpemSecret.Object["stringData"].(map[string]any)["metal-cloud-config.yaml"].(string)
				Expect(crsData).To(ContainSubstring(`"apiKey": "` + apiKey + `"`))
				Expect(crsData).To(ContainSubstring(`"projectID": "` + project + `"`))
				if vipManager == "CPEM" {
					// The tag the PacketCluster controller puts on the elastic IP, so CPEM finds it.
					Expect(crsData).To(ContainSubstring(`"eipTag": "` + infrav1.ControlPlaneEndpointTag(ns, "c1") + `"`))
				} else {
					Expect(crsData).NotTo(ContainSubstring("eipTag"))
				}
			} else {
				Expect(kinds).NotTo(HaveKey("Secret"))
				Expect(findKind(objs, "Cluster").GetLabels()).To(BeEmpty(), "no ClusterResourceSet selects the Cluster")
			}

			if flavor == "topology" {
				cluster := findKind(objs, "Cluster")
				Expect(cluster.Object["spec"]).To(HaveKeyWithValue("topology", HaveKeyWithValue("classRef",
					map[string]any{"name": "packet", "namespace": ns})))
				// clusterctl appends the ClusterClass, which is not in the cluster yet.
				Expect(kinds).To(HaveKeyWithValue("ClusterClass", 1))
				Expect(kinds).To(HaveKeyWithValue("PacketClusterTemplate", 1))
				Expect(kinds).To(HaveKeyWithValue("KubeadmControlPlaneTemplate", 1))
			} else {
				pc := findKind(objs, "PacketCluster")
				Expect(pc.Object["spec"]).To(HaveKeyWithValue("vipManager", vipManager))
				Expect(pc.Object["spec"]).To(HaveKeyWithValue("metro", "da"))
				kcp := findKind(objs, "KubeadmControlPlane")
				Expect(kcp.Object["spec"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 3)))
				md := findKind(objs, "MachineDeployment")
				Expect(md.Object["spec"]).To(HaveKeyWithValue("replicas", BeNumerically("==", 2)))
			}

			// The bootstrap data the controller receives renders with its Go template values,
			// giving kubelets equinixmetal://<instance id> from cloud-init's instance data.
			for _, u := range objs {
				var spec map[string]any
				switch u.GetKind() {
				case "KubeadmControlPlane":
					spec, _, _ = unstructured.NestedMap(u.Object, "spec", "kubeadmConfigSpec")
				case "KubeadmControlPlaneTemplate", "KubeadmConfigTemplate":
					spec, _, _ = unstructured.NestedMap(u.Object, "spec", "template", "spec")
				default:
					continue
				}
				rendered := renderBootstrap(spec)
				if flavor == "flatcar" {
					// Ignition: no cloud-init instance data; CPEM sets the provider ID.
					Expect(spec).To(HaveKeyWithValue("format", "ignition"), "%s %s", u.GetKind(), u.GetName())
					Expect(rendered).To(ContainSubstring("${COREOS_PACKET_HOSTNAME}"))
				} else {
					Expect(rendered).To(ContainSubstring("equinixmetal://{{ v1.instance_id }}"), "%s %s", u.GetKind(), u.GetName())
				}
				if !cpem {
					// Neither the CPEM install nor cloud-provider: external (a kubelet would wait
					// for a cloud provider to initialise its Node), and no kube-vip.
					Expect(rendered).NotTo(ContainSubstring("cloud-provider"), "%s %s", u.GetKind(), u.GetName())
					Expect(rendered).NotTo(ContainSubstring("kube-vip"), "%s %s", u.GetKind(), u.GetName())
				}
				Expect(rendered).To(ContainSubstring(`K8S_VERSION="` + k8sVer + `"`))
				Expect(rendered).NotTo(ContainSubstring("$$"))
			}

			if flavor == "spot-workers" {
				spot := func(name string) map[string]any {
					spec, _, _ := unstructured.NestedMap(find(objs, "PacketMachineTemplate", name).Object, "spec", "template", "spec")
					return spec
				}
				Expect(spot("c1-worker-a")).To(And(HaveKeyWithValue("spotInstance", true), HaveKeyWithValue("spotPriceMax", "0.50")))
				Expect(spot("c1-control-plane")).NotTo(HaveKey("spotInstance"), "control planes stay on demand")
				mhc := find(objs, "MachineHealthCheck", "c1-worker-a")
				Expect(mhc.Object["spec"]).To(HaveKeyWithValue("selector", HaveKeyWithValue("matchLabels", map[string]any{"pool": "worker-a"})))
			}

			storage := func(name string) map[string]any {
				st, _, _ := unstructured.NestedMap(find(objs, "PacketMachineTemplate", name).Object, "spec", "template", "spec", "storage")
				return st
			}
			if flavor == "raid" {
				mounts := func(name string) []string {
					var points []string
					fss, _, _ := unstructured.NestedSlice(storage(name), "filesystems")
					for _, fs := range fss {
						point, _, _ := unstructured.NestedString(fs.(map[string]any), "mount", "point")
						points = append(points, point)
					}
					return points
				}
				Expect(mounts("c1-control-plane")).To(Equal([]string{"/boot/efi", "/", "/var/lib/etcd"}), "etcd on an array of its own")
				Expect(mounts("c1-worker-a")).To(Equal([]string{"/boot/efi", "/"}))
				raid, _, _ := unstructured.NestedSlice(storage("c1-control-plane"), "raid")
				Expect(raid).To(HaveEach(HaveKeyWithValue("level", "1")))
			} else if flavor != "topology" {
				Expect(storage("c1-control-plane")).To(BeNil(), "the plan's default layout")
			}

			if flavor == "private-network" {
				network := func(name string) map[string]any {
					n, _, _ := unstructured.NestedMap(find(objs, "PacketMachineTemplate", name).Object, "spec", "template", "spec", "network")
					return n
				}
				clusterVLAN := []any{map[string]any{"cluster": true}}
				Expect(network("c1-control-plane")).To(Equal(map[string]any{"portMode": "hybrid-bonded", "vlans": clusterVLAN}),
					"control planes keep their public IPv4 for the elastic IP")
				Expect(network("c1-worker-a")).To(Equal(map[string]any{"portMode": "hybrid-bonded", "vlans": clusterVLAN, "publicIPv4": false}))
				pcNetwork, _, _ := unstructured.NestedMap(findKind(objs, "PacketCluster").Object, "spec", "network")
				Expect(pcNetwork).To(Equal(map[string]any{"vlan": map[string]any{}}), "a VLAN created for the cluster")
			} else {
				// Without it devices keep Packet's defaults: layer 3 with a public IPv4.
				for _, u := range objs {
					path := map[string][]string{"PacketCluster": {"spec", "network"}, "PacketMachineTemplate": {"spec", "template", "spec", "network"}}[u.GetKind()]
					if path != nil {
						_, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
						Expect(found).To(BeFalse(), "%s %s has a network", u.GetKind(), u.GetName())
					}
				}
			}

			warnings.take()
			errs := dryRunApply(objs)
			Expect(errs).To(BeEmpty())
			Expect(warnings.take()).To(BeEmpty())
		},
		Entry("default (CPEM)", "", "CPEM", false),
		Entry("kube-vip", "kube-vip", "KUBE_VIP", false),
		Entry("crs-cni", "crs-cni", "CPEM", true),
		Entry("kube-vip-crs-cni", "kube-vip-crs-cni", "KUBE_VIP", true),
		Entry("topology (ClusterClass packet)", "topology", "CPEM", false),
		Entry("flatcar (Ignition)", "flatcar", "CPEM", false),
		Entry("spot-workers", "spot-workers", "CPEM", false),
		Entry("private-network (cluster VLAN, hybrid-bonded)", "private-network", "CPEM", false),
		Entry("emlb (Equinix Metal Load Balancer, no CPEM)", "emlb", "EMLB", false),
		Entry("raid (RAID 1 root, etcd on an array of its own)", "raid", "CPEM", false),
	)

	It("lets the provider's webhooks reject a bad rendering in the same dry run", func() {
		ensureNamespace("flavor-bad")
		out, err := runClusterctl(templateVars(map[string]string{"NODE_OS": "custom_ipxe"}), "generate", "cluster", "c1",
			"--infrastructure", "packet:"+version, "--target-namespace", "flavor-bad", "--kubernetes-version", k8sVer)
		Expect(err).NotTo(HaveOccurred())
		errs := dryRunApply(decode([]byte(out)))
		Expect(errs).To(HaveLen(2)) // the control-plane and the worker PacketMachineTemplate
		for _, e := range errs {
			Expect(e.Error()).To(ContainSubstring("PacketMachineTemplate"))
			Expect(e.Error()).To(ContainSubstring(`spec.template.spec.ipxeURL: Required value: os "custom_ipxe" boots the iPXE script at ipxeURL`))
		}
	})
})

// renderBootstrap renders the files and commands of a kubeadm config spec the way the
// PacketMachine controller renders bootstrap data: Go text/template with the previous
// provider's keys, unknown keys empty.
func renderBootstrap(spec map[string]any) string {
	GinkgoHelper()
	data, err := yaml.Marshal(spec)
	Expect(err).NotTo(HaveOccurred())
	tmpl, err := template.New("bootstrap").Option("missingkey=zero").Parse(string(data))
	Expect(err).NotTo(HaveOccurred())
	var out strings.Builder
	Expect(tmpl.Execute(&out, map[string]string{
		"kubernetesVersion": k8sVer, "controlPlaneEndpoint": "203.0.113.10", "apiKey": "",
	})).To(Succeed())
	return out.String()
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	Fail(fmt.Sprintf("no %s %s", kind, name))
	return nil
}

func findKind(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, u := range objs {
		if u.GetKind() == kind {
			return u
		}
	}
	Fail("no " + kind)
	return nil
}

// section returns the first word of each indented line under a heading of clusterctl's
// --list-variables output.
func section(out, heading string) []string {
	var names []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, heading):
			in = true
		case in && strings.HasPrefix(line, "  "):
			f := strings.Fields(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "-")))
			if len(f) > 0 {
				names = append(names, f[0])
			}
		case in && strings.TrimSpace(line) == "":
		default:
			in = false
		}
	}
	return names
}
