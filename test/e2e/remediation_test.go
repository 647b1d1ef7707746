package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// The remediation flavour's timeouts, shortened for the simulator's fast timing (10 s to
// provision, 10 s to reinstall, 10 s for an emulated reboot).
var remediationVariables = map[string]string{
	"NODE_UNHEALTHY_TIMEOUT_SECONDS": "10",
	"REMEDIATION_REBOOT_TIMEOUT":     "30s",
	"REMEDIATION_REINSTALL_TIMEOUT":  "30s",
	// Two of two workers are failed on purpose at once.
	"MAX_UNHEALTHY_WORKERS": "100%",
}

var _ = Describe("Remediation", func() {
	It("repairs a hung control plane by reboot while the cluster stays Available, a powered-off worker by reboot, and replaces a worker that keeps failing after reboot and reinstall", func(ctx SpecContext) {
		ns := testNamespace(ctx, "remediation")
		const name = "remediation"
		for k, v := range remediationVariables {
			Expect(os.Setenv(k, v)).To(Succeed())
			DeferCleanup(os.Unsetenv, k)
		}
		DeferCleanup(func(ctx SpecContext) { Expect(sim.ClearFaults(ctx)).To(Succeed()) })

		By("applying the remediation flavour: 3 control planes and 2 workers, each pool with a MachineHealthCheck naming a PacketRemediationTemplate")
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "remediation", "--control-plane-machine-count", "3", "--worker-machine-count", "2"))
		waitClusterAvailable(ctx, ns, name, 3, 2, 6*time.Minute)
		expectNodesMatchMachines(ctx, ns, name)
		wc := workloadClient(ctx, ns, name)
		pc := waitClusterProvisioned(ctx, ns, name)

		By("(c) a control plane whose host stops answering is rebooted; the Cluster stays Available throughout")
		cp := controlPlaneWithoutEndpoint(ctx, ns, name, pc.Spec.ControlPlaneEndpoint.Host)
		cpDevice := machineDeviceID(cp)
		controlPlanes := machineNames(ctx, ns, name, true)
		_, err := sim.InjectFault(ctx, Fault{Kind: "host_down", ResourceID: cpDevice, Count: 1})
		Expect(err).NotTo(HaveOccurred())
		failed := time.Now()
		unavailable := ""
		waitRepaired(ctx, wc, cp, func(g Gomega) {
			c := &clusterv1.Cluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
			if cond := conditions.Get(c, clusterv1.AvailableCondition); unavailable == "" && (cond == nil || cond.Status != metav1.ConditionTrue) {
				unavailable = fmt.Sprintf("%v", cond)
			}
		})
		GinkgoWriter.Printf("remediation: hung control plane to Node Ready again by reboot in %s\n", time.Since(failed).Round(time.Second))
		Expect(unavailable).To(BeEmpty(), "the Cluster was not Available at some point while a control plane was being repaired")
		Expect(remediationEvents(ctx, ns, cp.Name)).To(ContainElement(infrav1.RebootRequestedReason))
		Expect(machineNames(ctx, ns, name, true)).To(Equal(controlPlanes), "the control plane was repaired, not replaced")
		Expect(providerIDOf(ctx, cp)).To(Equal(cp.Spec.ProviderID), "same device")

		By("(a) a worker powered off through the Packet API and (b) a worker whose host keeps failing")
		workers := workerMachines(ctx, ns, name)
		Expect(workers).To(HaveLen(2))
		off, broken := workers[0], workers[1]
		offDevice := machineDeviceID(off)
		brokenDevice := machineDeviceID(broken)
		Expect(sim.DeviceAction(ctx, offDevice, "power_off")).To(Succeed())
		_, err = sim.InjectFault(ctx, Fault{Kind: "host_down", ResourceID: brokenDevice})
		Expect(err).NotTo(HaveOccurred())
		failed = time.Now()

		By("(a) the powered-off worker is powered on by its remediation: same device, same Machine")
		waitRepaired(ctx, wc, off, nil)
		rebootRepair := time.Since(failed)
		GinkgoWriter.Printf("remediation: powered-off worker to Node Ready again by reboot in %s\n", rebootRepair.Round(time.Second))
		Expect(remediationEvents(ctx, ns, off.Name)).To(ContainElement(infrav1.RebootRequestedReason))
		Expect(providerIDOf(ctx, off)).To(Equal(off.Spec.ProviderID), "same device")
		Eventually(func(g Gomega) {
			m := &clusterv1.Machine{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(off), m)).To(Succeed())
			g.Expect(conditions.Get(m, clusterv1.MachineExternallyRemediatedCondition)).To(BeNil(),
				"the provider removes ExternallyRemediated from a repaired Machine")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("(b) the failing worker goes through reboot and reinstall to replace; its device is deleted")
		var replaced time.Time
		Eventually(func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(broken), &clusterv1.Machine{})
			if replaced.IsZero() && slices.Contains(remediationEvents(ctx, ns, broken.Name), infrav1.MachineReplacementRequestedReason) {
				replaced = time.Now()
			}
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Machine %s is replaced", broken.Name)
		}).WithContext(ctx).WithTimeout(4 * time.Minute).Should(Succeed())
		Expect(remediationEvents(ctx, ns, broken.Name)).To(ContainElements(infrav1.RebootRequestedReason,
			infrav1.ReinstallRequestedReason, infrav1.MachineReplacementRequestedReason))
		Eventually(func(g Gomega) {
			_, err := sim.Device(ctx, brokenDevice)
			g.Expect(err).To(MatchError(ContainSubstring("404")), "the replaced worker's device is deleted")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		waitClusterAvailable(ctx, ns, name, 3, 2, 4*time.Minute)
		expectNodesMatchMachines(ctx, ns, name)
		if !replaced.IsZero() {
			GinkgoWriter.Printf("remediation: worker replacement (Replace requested to the new Node Ready) in %s; failure to Node Ready by reboot %s\n",
				time.Since(replaced).Round(time.Second), rebootRepair.Round(time.Second))
		}
		Expect(machineNames(ctx, ns, name, false)).To(ContainElement(off.Name), "the rebooted worker is still there")
		Expect(devicesOf(ctx, Default, ns)).To(HaveLen(5), "one device per Machine, no leftovers")

		By("deleting the Cluster leaves nothing behind")
		deleteClusterAndExpectNoDevices(ctx, ns, name)
	})
})

// controlPlaneWithoutEndpoint returns a control-plane Machine whose device does not hold the
// endpoint's elastic IP: hanging it tests the repair, not CPEM's failover.
func controlPlaneWithoutEndpoint(ctx context.Context, ns, cluster, endpoint string) *clusterv1.Machine {
	machines := &clusterv1.MachineList{}
	Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster},
		client.HasLabels{clusterv1.MachineControlPlaneLabel})).To(Succeed())
	for i := range machines.Items {
		m := &machines.Items[i]
		if m.Spec.ProviderID == "" {
			continue
		}
		d, err := sim.Device(ctx, machineDeviceID(m))
		Expect(err).NotTo(HaveOccurred())
		if !slices.ContainsFunc(d.Network, func(ip IP) bool { return ip.Address == endpoint }) {
			return m
		}
	}
	Fail("every control plane holds the endpoint")
	return nil
}

// workerMachines returns the cluster's worker Machines, sorted by name.
func workerMachines(ctx context.Context, ns, cluster string) []*clusterv1.Machine {
	machines := &clusterv1.MachineList{}
	Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster},
		client.HasLabels{clusterv1.MachineDeploymentNameLabel})).To(Succeed())
	var out []*clusterv1.Machine
	for i := range machines.Items {
		out = append(out, &machines.Items[i])
	}
	slices.SortFunc(out, func(a, b *clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// machineNames lists the names of the cluster's control-plane or worker Machines, sorted.
func machineNames(ctx context.Context, ns, cluster string, controlPlane bool) []string {
	machines := &clusterv1.MachineList{}
	Expect(k8s.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster})).To(Succeed())
	var out []string
	for _, m := range machines.Items {
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok == controlPlane {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

func providerIDOf(ctx context.Context, m *clusterv1.Machine) string {
	cur := &clusterv1.Machine{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), cur)).To(Succeed())
	return cur.Spec.ProviderID
}

func nodeReadyOf(ctx context.Context, g Gomega, wc client.Client, m *clusterv1.Machine) corev1.ConditionStatus {
	n := &corev1.Node{}
	g.Expect(wc.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, n)).To(Succeed())
	return nodeReady(*n)
}

// remediationEvents lists the reasons of the events of the PacketRemediation named name (the
// Machine's name), oldest first. Events outlive the request, which Cluster API deletes.
func remediationEvents(ctx context.Context, ns, name string) []string {
	events := &corev1.EventList{}
	Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	slices.SortFunc(events.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PacketRemediation" && e.InvolvedObject.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// waitRepaired waits until the MachineHealthCheck has asked for a PacketRemediation of m and
// deleted it again, and m's Node is Ready. also, when not nil, runs first on every look.
func waitRepaired(ctx context.Context, wc client.Client, m *clusterv1.Machine, also func(Gomega)) {
	seen := false
	Eventually(func(g Gomega) {
		if also != nil {
			also(g)
		}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(m), &infrav1.PacketRemediation{})
		seen = seen || err == nil
		g.Expect(seen).To(BeTrue(), "the MachineHealthCheck asks for a PacketRemediation of %s", m.Name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the MachineHealthCheck deletes the request once %s is healthy again", m.Name)
		g.Expect(nodeReadyOf(ctx, g, wc, m)).To(Equal(corev1.ConditionTrue))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
}

// machineDeviceID is the device UUID in the Machine's providerID.
func machineDeviceID(m *clusterv1.Machine) string {
	id, err := infrav1.ParseProviderID(m.Spec.ProviderID)
	Expect(err).NotTo(HaveOccurred())
	return id
}
