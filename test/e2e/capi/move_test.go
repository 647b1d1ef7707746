package capi

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/test/e2e"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// targetPortBase is the second management plane's: the move's target.
const targetPortBase = 17800

// Cluster API's SelfHostedSpec moves a cluster into itself, which needs the providers running in
// the workload cluster; the emulated nodes run no Pods. This spec moves a running cluster
// between two management planes in front of one Packet project instead: the sandbox and a
// second one (its own kube-apiserver, etcd, Cluster API and this provider, installed by the real
// `clusterctl init`) that uses the first one's simulator.
var _ = Describe("clusterctl move of a running cluster to another management cluster", Label(ciLabel), func() {
	var (
		namespace     *corev1.Namespace
		cancelWatches func()
		target        *sandbox.Sandbox
		targetProxy   framework.ClusterProxy
		cluster       *clusterv1.Cluster
		moved         bool
	)

	BeforeEach(func() {
		namespace, cancelWatches = framework.SetupSpecNamespace(ctx, "move", bootstrapClusterProxy, artifactFolder, nil)
	})

	AfterEach(func() {
		// Wherever the cluster is (the target once moved), delete it there; then the leak check.
		owner := bootstrapClusterProxy
		if moved {
			owner = targetProxy
		}
		if cluster != nil {
			framework.DumpAllResourcesAndLogs(ctx, owner, clusterctlConfigPath, artifactFolder, namespace, cluster)
		}
		framework.DeleteAllClustersAndWait(ctx, framework.DeleteAllClustersAndWaitInput{ClusterProxy: owner,
			ClusterctlConfigPath: clusterctlConfigPath, Namespace: namespace.Name, ArtifactFolder: artifactFolder},
			e2eConfig.GetIntervals("move", "wait-delete-cluster")...)
		framework.DeleteNamespace(ctx, framework.DeleteNamespaceInput{Deleter: bootstrapClusterProxy.GetClient(), Name: namespace.Name})
		cancelWatches()
		if targetProxy != nil {
			targetProxy.Dispose(ctx)
		}
		if target != nil {
			target.Stop()
		}
		expectNoLeaks()
	})

	It("keeps every device, IP and the credentials, writes nothing to Packet, and the moved cluster scales and deletes", func() {
		name := "move-" + util.RandomString(6)
		ns := namespace.Name

		By("a cluster with its own credentials Secret on the source")
		// The Secret's owner labels it for clusterctl move: the provider never moves a Secret
		// that other workloads may share.
		Expect(bootstrapClusterProxy.GetClient().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-packet", Labels: map[string]string{clusterctlv1.ClusterctlMoveLabel: ""}},
			StringData: map[string]string{"apiKey": sandbox.SimToken},
		})).To(Succeed())
		yaml := clusterctl.ConfigCluster(ctx, clusterctl.ConfigClusterInput{
			LogFolder: filepath.Join(artifactFolder, "clusters", "sandbox"), ClusterctlConfigPath: clusterctlConfigPath,
			KubeconfigPath: bootstrapClusterProxy.GetKubeconfigPath(), InfrastructureProvider: "packet",
			Flavor: clusterctl.DefaultFlavor, Namespace: ns, ClusterName: name,
			KubernetesVersion:        e2eConfig.MustGetVariable("KUBERNETES_VERSION"),
			ControlPlaneMachineCount: ptr.To[int64](1), WorkerMachineCount: ptr.To[int64](1),
		})
		withCredentials := strings.Replace(string(yaml), "  vipManager: CPEM\n",
			"  vipManager: CPEM\n  credentialsRef:\n    name: "+name+"-packet\n", 1)
		Expect(withCredentials).NotTo(Equal(string(yaml)), "the default flavour's PacketCluster has vipManager: CPEM")
		result := &clusterctl.ApplyCustomClusterTemplateAndWaitResult{}
		clusterctl.ApplyCustomClusterTemplateAndWait(ctx, clusterctl.ApplyCustomClusterTemplateAndWaitInput{
			ClusterProxy: bootstrapClusterProxy, CustomTemplateYAML: []byte(withCredentials), ClusterName: name, Namespace: ns,
			WaitForClusterIntervals:      e2eConfig.GetIntervals("move", "wait-cluster"),
			WaitForControlPlaneIntervals: e2eConfig.GetIntervals("move", "wait-control-plane"),
			WaitForMachineDeployments:    e2eConfig.GetIntervals("move", "wait-worker-nodes"),
		}, result)
		cluster = result.Cluster
		framework.VerifyClusterAvailable(ctx, framework.VerifyClusterAvailableInput{Getter: bootstrapClusterProxy.GetClient(), Name: name, Namespace: ns})
		before := packetMachines(bootstrapClusterProxy.GetClient(), ns)
		Expect(before).To(HaveLen(2))
		devicesBefore, ipsBefore, sessionsBefore := packetObjects(ns)

		By("a second management plane in front of the same Packet project")
		var err error
		start := time.Now()
		target, err = e2e.StartSandbox(ctx, repoRoot(), filepath.Join(artifactFolder, "move-target", "sandbox"), targetPortBase, "", // no simulator of its own
			func(format string, args ...any) { fmt.Fprintf(GinkgoWriter, "[target] "+format+"\n", args...) },
			func(cfg *sandbox.Config) {
				cfg.ExternalSimulator = sb.SimURL
				cfg.ProviderComponents = sb.Config().ProviderComponents
			})
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "Target ready in %s\n", time.Since(start).Round(100*time.Millisecond))
		targetProxy = framework.NewClusterProxy("target", target.Kubeconfig, proxyScheme(),
			framework.WithMachineLogCollector(deviceLogCollector{sim: sim}))

		By("clusterctl move")
		countsBefore, err := sim.RouteCounts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(countsBefore).To(HaveKey("POST /projects/{id}/devices"), "the simulator counts the cluster's creates")
		moveStart := time.Now()
		clusterctl.Move(ctx, clusterctl.MoveInput{LogFolder: filepath.Join(artifactFolder, "move-target"),
			ClusterctlConfigPath: clusterctlConfigPath, FromKubeconfigPath: sb.Kubeconfig, ToKubeconfigPath: target.Kubeconfig, Namespace: ns})
		moveTook := time.Since(moveStart)
		moved = true
		countsAfter, err := sim.RouteCounts(ctx)
		Expect(err).NotTo(HaveOccurred())
		reads, written := callsBetween(countsBefore, countsAfter)
		// The target, unpaused at the end of the move, may already be tagging what it now
		// manages; nothing else is written.
		delete(written, "PUT /devices/{id}")
		delete(written, "PATCH /ips/{id}")
		Expect(written).To(BeEmpty(), "no Packet write while the cluster moves but the target's management-cluster tags")
		fmt.Fprintf(GinkgoWriter, "clusterctl move took %s; %d Packet reads meanwhile, no other write\n", moveTook.Round(100*time.Millisecond), reads)

		By("the source holds nothing of the cluster, the target all of it")
		src := bootstrapClusterProxy.GetClient()
		for _, l := range []client.ObjectList{&clusterv1.ClusterList{}, &clusterv1.MachineList{}, &infrav1.PacketClusterList{}, &infrav1.PacketMachineList{}} {
			Expect(src.List(ctx, l, client.InNamespace(ns))).To(Succeed())
			Expect(meta.LenList(l)).To(BeZero(), "%T left on the source", l)
		}
		Expect(src.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-packet"}, &corev1.Secret{})).NotTo(Succeed(),
			"the credentials Secret moved with the cluster (its owner gave it clusterctl's move label)")
		dst := targetProxy.GetClient()
		Expect(dst.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-packet"}, &corev1.Secret{})).To(Succeed())
		framework.VerifyClusterAvailable(ctx, framework.VerifyClusterAvailableInput{Getter: dst, Name: name, Namespace: ns})
		Eventually(func(g Gomega) {
			after := packetMachines(dst, ns)
			g.Expect(after).To(Equal(before), "every PacketMachine keeps its device")
		}, "2m", "2s").Should(Succeed())
		By("the devices and the elastic IP carry the target's management-cluster tag, not the source's: the source's janitor leaves them alone")
		sourceID, err := scope.ManagementClusterIdentity(ctx, src)
		Expect(err).NotTo(HaveOccurred())
		targetID, err := scope.ManagementClusterIdentity(ctx, dst)
		Expect(err).NotTo(HaveOccurred())
		Expect(targetID).NotTo(Equal(sourceID))
		Eventually(func(g Gomega) {
			ds, err := sim.Devices(ctx, infrav1.ClusterTag(ns, ""))
			g.Expect(err).NotTo(HaveOccurred())
			ips, err := sim.IPReservations(ctx, infrav1.ClusterTag(ns, ""))
			g.Expect(err).NotTo(HaveOccurred())
			tags := [][]string{}
			for _, d := range ds {
				tags = append(tags, d.Tags)
			}
			for _, ip := range ips {
				tags = append(tags, ip.Tags)
			}
			g.Expect(tags).To(HaveLen(len(devicesBefore) + len(ipsBefore)))
			g.Expect(tags).To(HaveEach(And(ContainElement(infrav1.ManagementClusterTag(targetID)),
				Not(ContainElement(infrav1.ManagementClusterTag(sourceID))))))
		}, "2m", "2s").Should(Succeed())
		devicesAfter, ipsAfter, sessionsAfter := packetObjects(ns)
		Expect(devicesAfter).To(Equal(devicesBefore))
		Expect(ipsAfter).To(Equal(ipsBefore))
		Expect(sessionsAfter).To(Equal(sessionsBefore))

		By("the moved cluster scales on the target")
		framework.ScaleAndWaitMachineDeployment(ctx, framework.ScaleAndWaitMachineDeploymentInput{
			ClusterProxy: targetProxy, Cluster: cluster, MachineDeployment: result.MachineDeployments[0], Replicas: 2,
			WaitForMachineDeployments: e2eConfig.GetIntervals("move", "wait-worker-nodes"),
		})
		Expect(packetMachines(dst, ns)).To(HaveLen(3))
		// The AfterEach deletes it from the target and checks that nothing is left at Packet.
	})
})

// packetMachines maps each PacketMachine of ns to its providerID.
func packetMachines(c client.Client, ns string) map[string]string {
	l := &infrav1.PacketMachineList{}
	Expect(c.List(ctx, l, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, pm := range l.Items {
		out[pm.Name] = pm.Spec.ProviderID
	}
	return out
}

// packetObjects are the IDs of the devices and IP reservations tagged for ns's clusters, and the
// project's BGP sessions.
func packetObjects(ns string) (devices, ips, sessions []string) {
	part := infrav1.ClusterTag(ns, "")
	ds, err := sim.Devices(ctx, part)
	Expect(err).NotTo(HaveOccurred())
	for _, d := range ds {
		devices = append(devices, d.ID)
	}
	is, err := sim.IPReservations(ctx, part)
	Expect(err).NotTo(HaveOccurred())
	for _, ip := range is {
		ips = append(ips, ip.ID)
	}
	ss, err := sim.BGPSessions(ctx)
	Expect(err).NotTo(HaveOccurred())
	for _, s := range ss {
		sessions = append(sessions, s.ID)
	}
	return devices, ips, sessions
}

// callsBetween counts the reads between two snapshots of the simulator's route counts and lists
// the writes (any route but GET) with how many of each.
func callsBetween(before, after map[string]int) (reads int, writes map[string]int) {
	writes = map[string]int{}
	for route, n := range after {
		d := n - before[route]
		switch {
		case d == 0:
		case strings.HasPrefix(route, "GET "):
			reads += d
		default:
			writes[route] = d
		}
	}
	return reads, writes
}

func proxyScheme() *k8sruntime.Scheme {
	scheme := k8sruntime.NewScheme()
	framework.TryAddDefaultSchemes(scheme)
	Expect(infrav1.AddToScheme(scheme)).To(Succeed())
	return scheme
}
