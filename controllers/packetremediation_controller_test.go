package controllers

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

func init() {
	suiteReconcilers = append(suiteReconcilers, func(c context.Context, mgr ctrl.Manager) error {
		return (&PacketRemediationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Packet: factory,
			DefaultAPIKey: packetsim.DefaultToken, WatchFilterValue: machineSuiteFilter,
			Poll: testPollMin, Now: simClock.Now}).SetupWithManager(c, mgr, testOptions)
	})
}

// The MachineHealthCheck is not running: the tests set the Machine's HealthCheckSucceeded
// condition as it would, and create the PacketRemediation as it does (the Machine's name, owned
// by the Machine).
var _ = Describe("PacketRemediation", func() {
	var mc *machineCluster
	BeforeEach(func() { mc = newMachineCluster(infrav1.PacketClusterSpec{}) })

	// unhealthyMachine provisions a machine, gives it a MachineSet owner and fails its health
	// check.
	unhealthyMachine := func(name string, o machineOpts) (*infrav1.PacketMachine, packetsim.Device) {
		pm := mc.createMachine(name, o)
		isProvisioned(pm)
		dev := oneDevice(pm)
		m := getMachine(mc.ns, name)
		orig := m.DeepCopy()
		if !o.controlPlane {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(),
				Kind: "MachineSet", Name: "ms-" + name, UID: "6b1d6c52-8d6e-4f0f-9a53-000000000001", Controller: ptr.To(true)})
			Expect(k8sClient.Patch(ctx, m, client.MergeFrom(orig))).To(Succeed())
		}
		setHealthCheck(mc.ns, name, metav1.ConditionFalse)
		return pm, dev
	}

	It("reboots a worker whose node recovers and succeeds on the same device", func() {
		pm, dev := unhealthyMachine("w1", machineOpts{})
		rem := createRemediation(mc, "w1", nil)
		Eventually(func() int32 { return getRemediation(rem).Status.Reboots }, eventually).Should(Equal(int32(1)))
		Expect(actionCalls(dev.ID, "reboot")).To(Equal(1))
		Eventually(eventReasons(rem), eventually).Should(ContainElement(infrav1.RebootRequestedReason))
		Eventually(externallyRemediatedReason(mc.ns, "w1"), eventually).Should(Equal(infrav1.RebootRequestedReason),
			"the Machine's ExternallyRemediated condition follows the step")

		setHealthCheck(mc.ns, "w1", metav1.ConditionTrue)
		Eventually(func() infrav1.RemediationPhase { return getRemediation(rem).Status.Phase }, eventually).
			Should(Equal(infrav1.RemediationPhaseSucceeded))
		Eventually(externallyRemediatedReason(mc.ns, "w1"), eventually).Should(BeEmpty(), "removed once the Machine is healthy")
		got := getRemediation(rem)
		Expect(got.Status.Reboots).To(Equal(int32(1)))
		Expect(got.Status.Reinstalls).To(BeZero())
		Expect(got.Status.DeviceID).To(Equal(dev.ID))
		Expect(conditions.IsTrue(got, infrav1.RemediationSucceededCondition)).To(BeTrue())
		Expect(conditions.IsTrue(got, infrav1.StepSucceededCondition)).To(BeTrue())
		Expect(devicesOf(pm)).To(HaveLen(1))
		Expect(devicesOf(pm)[0].ID).To(Equal(dev.ID))
		Expect(actionCalls(dev.ID, "reboot")).To(Equal(1))
		Expect(actionCalls(dev.ID, "reinstall")).To(BeZero())
	})

	It("clears the Machine's ExternallyRemediated condition when the MachineHealthCheck deletes the request first", func() {
		unhealthyMachine("w4", machineOpts{})
		rem := createRemediation(mc, "w4", nil)
		Eventually(externallyRemediatedReason(mc.ns, "w4"), eventually).Should(Equal(infrav1.RebootRequestedReason))
		// What Cluster API's MachineHealthCheck does for a healthy Machine: delete the request,
		// then mark the Machine healthy.
		Expect(k8sClient.Delete(ctx, rem)).To(Succeed())
		Consistently(externallyRemediatedReason(mc.ns, "w4"), 2*time.Second).Should(Equal(infrav1.RebootRequestedReason),
			"not cleared while the Machine is unhealthy")
		setHealthCheck(mc.ns, "w4", metav1.ConditionTrue)
		Eventually(externallyRemediatedReason(mc.ns, "w4"), eventually).Should(BeEmpty())
	})

	It("powers on a worker whose device was powered off, as its reboot", func() {
		_, dev := unhealthyMachine("w3", machineOpts{})
		Expect(sim.SetDeviceState(dev.ID, packetsim.StateInactive)).To(Succeed())
		rem := createRemediation(mc, "w3", nil)
		Eventually(func() int32 { return getRemediation(rem).Status.Reboots }, eventually).Should(Equal(int32(1)))
		Expect(actionCalls(dev.ID, "power_on")).To(Equal(1))
		Expect(actionCalls(dev.ID, "reboot")).To(BeZero())
		setHealthCheck(mc.ns, "w3", metav1.ConditionTrue)
		Eventually(func() infrav1.RemediationPhase { return getRemediation(rem).Status.Phase }, eventually).
			Should(Equal(infrav1.RemediationPhaseSucceeded))
	})

	It("escalates a worker that never recovers from reboot to reinstall to replace", func() {
		pm, dev := unhealthyMachine("w2", machineOpts{})
		// The bootstrap data the reinstall must boot: the Secret's current value.
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: "w2-bootstrap"}, secret)).To(Succeed())
		secret.Data["value"] = []byte("#cloud-config\nruncmd: [echo rejoin]\n")
		Expect(k8sClient.Update(ctx, secret)).To(Succeed())

		rem := createRemediation(mc, "w2", nil)
		Eventually(func() int32 { return getRemediation(rem).Status.Reboots }, eventually).Should(Equal(int32(1)))
		// The reboot's 5 minutes pass without the Machine recovering.
		Eventually(func() int32 {
			sim.Advance(time.Minute)
			return getRemediation(rem).Status.Reinstalls
		}, eventually, 200*time.Millisecond).Should(Equal(int32(1)))
		d, _ := sim.Device(dev.ID)
		Expect(d.UserData).To(Equal("#cloud-config\nruncmd: [echo rejoin]\n"))
		Expect(d.OS).To(Equal("ubuntu_24_04"))
		// The reinstall's 20 minutes pass too.
		advanceUntilPhase(rem, 2*time.Minute, infrav1.RemediationPhaseReplacing)

		got := getRemediation(rem)
		Expect(got.Status.Reboots).To(Equal(int32(1)))
		Expect(got.Status.Reinstalls).To(Equal(int32(1)))
		Expect(*got.Status.CurrentStep).To(Equal(int32(2)))
		Expect(conditions.GetReason(got, infrav1.RemediationSucceededCondition)).To(Equal(infrav1.MachineReplacementRequestedReason))
		Expect(actionCalls(dev.ID, "reboot")).To(Equal(1))
		Expect(actionCalls(dev.ID, "reinstall")).To(Equal(1))
		Expect(apiCallsTo("PUT", dev.ID)).To(Equal(1)) // the user-data, before the reinstall
		// The Machine is handed to its MachineSet as the MachineHealthCheck would without
		// external remediation; the device itself is left to the Machine's deletion.
		m := getMachine(mc.ns, "w2")
		Expect(conditions.IsFalse(m, clusterv1.MachineOwnerRemediatedCondition)).To(BeTrue())
		Expect(conditions.GetReason(m, clusterv1.MachineOwnerRemediatedCondition)).To(Equal(clusterv1.MachineOwnerRemediatedWaitingForRemediationReason))
		Expect(conditions.GetReason(m, clusterv1.MachineExternallyRemediatedCondition)).To(Equal(infrav1.MachineReplacementRequestedReason))
		Expect(devicesOf(pm)).To(HaveLen(1))
		Eventually(eventReasons(rem), eventually).Should(ContainElements(infrav1.RebootRequestedReason, infrav1.StepTimedOutReason,
			infrav1.ReinstallRequestedReason, infrav1.MachineReplacementRequestedReason))
	})

	It("reboots a control plane but never reinstalls or replaces it", func() {
		_, dev := unhealthyMachine("cp1", machineOpts{controlPlane: true})
		rem := createRemediation(mc, "cp1", []infrav1.RemediationStep{
			{Type: infrav1.RemediationStepReboot, Timeout: &metav1.Duration{Duration: time.Minute}, Attempts: ptr.To[int32](2)},
			{Type: infrav1.RemediationStepReinstall, Timeout: &metav1.Duration{Duration: 10 * time.Minute}},
			{Type: infrav1.RemediationStepReplace},
		})
		advanceUntilPhase(rem, 30*time.Second, infrav1.RemediationPhaseStopped)
		got := getRemediation(rem)
		Expect(got.Status.Reboots).To(Equal(int32(2)))
		Expect(got.Status.Reinstalls).To(BeZero(), "a reinstall would wipe an etcd member the others still count")
		Expect(conditions.GetReason(got, infrav1.RemediationSucceededCondition)).To(Equal(infrav1.ControlPlaneNotReplacedReason))
		Eventually(externallyRemediatedReason(mc.ns, "cp1"), eventually).Should(Equal(infrav1.ControlPlaneNotReplacedReason))
		Eventually(eventReasons(rem), eventually).Should(ContainElement(infrav1.ControlPlaneNotReinstalledReason))
		Expect(actionCalls(dev.ID, "reboot")).To(Equal(2))
		Expect(actionCalls(dev.ID, "reinstall")).To(BeZero())
		Expect(apiCallsTo("PUT", dev.ID)).To(BeZero(), "its user-data is left alone")
		Expect(conditions.Get(getMachine(mc.ns, "cp1"), clusterv1.MachineOwnerRemediatedCondition)).To(BeNil())
	})

	It("never reboots nor reinstalls a device of another cluster named in the PacketMachine's providerID", func() {
		// The attack of a tenant: a Machine whose PacketMachine names another team's device, and a
		// hand-made PacketRemediation that reinstalls it with the tenant's user-data.
		pk, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		victim, err := pk.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: simProject, Hostname: "victim", Plan: "c3.small.x86",
			OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly", Tags: []string{infrav1.ClusterTag("other-team", "c1")}})
		Expect(err).NotTo(HaveOccurred())
		sim.Advance(time.Minute)
		DeferCleanup(func() { Expect(pk.DeleteDevice(ctx, victim.ID)).To(Succeed()) })

		mc.createMachine("thief", machineOpts{spec: infrav1.PacketMachineSpec{ProviderID: infrav1.ProviderIDPrefix + victim.ID}})
		setHealthCheck(mc.ns, "thief", metav1.ConditionFalse)
		rem := createRemediation(mc, "thief", []infrav1.RemediationStep{
			{Type: infrav1.RemediationStepReboot, Timeout: &metav1.Duration{Duration: time.Minute}},
			{Type: infrav1.RemediationStepReinstall},
		})
		advanceUntilPhase(rem, 30*time.Second, infrav1.RemediationPhaseStopped)
		got := getRemediation(rem)
		Expect(conditions.Get(got, infrav1.RemediationSucceededCondition)).To(And(
			HaveField("Reason", infrav1.DeviceNotOwnedReason),
			HaveField("Message", ContainSubstring("does not carry the cluster's tag "+infrav1.ClusterTag(mc.ns, mc.name)))))
		Expect(got.Status.Reboots + got.Status.Reinstalls).To(BeZero())
		Expect(actionCalls(victim.ID, "reboot")+actionCalls(victim.ID, "power_on")+actionCalls(victim.ID, "reinstall")).To(BeZero(),
			"no action reached the other team's device")
		Expect(apiCallsTo("PUT", victim.ID)).To(BeZero(), "its user-data is untouched")
	})

	It("ends cleanly when its Machine is gone", func() {
		rem := createRemediation(mc, "vanished", nil)
		// The patch helper writes the conditions and the rest of status in two requests.
		Eventually(func() infrav1.RemediationPhase { return getRemediation(rem).Status.Phase }, eventually).
			Should(Equal(infrav1.RemediationPhaseStopped))
		got := getRemediation(rem)
		Expect(conditions.GetReason(got, infrav1.RemediationSucceededCondition)).To(Equal(infrav1.MachineNotFoundReason))
		Expect(got.Status.Reboots).To(BeZero())
		Consistently(func() string { return getRemediation(rem).ResourceVersion }, time.Second).Should(Equal(got.ResourceVersion))
	})
})

// externallyRemediatedReason returns the reason of the Machine's ExternallyRemediated condition,
// "" when it has none.
func externallyRemediatedReason(ns, name string) func() string {
	return func() string {
		if c := conditions.Get(getMachine(ns, name), clusterv1.MachineExternallyRemediatedCondition); c != nil {
			return c.Reason
		}
		return ""
	}
}

func getMachine(ns, name string) *clusterv1.Machine {
	m := &clusterv1.Machine{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)).To(Succeed())
	return m
}

// setHealthCheck sets the Machine's HealthCheckSucceeded condition as a MachineHealthCheck would.
func setHealthCheck(ns, name string, status metav1.ConditionStatus) {
	m := getMachine(ns, name)
	orig := m.DeepCopy()
	reason := clusterv1.MachineHealthCheckSucceededReason
	if status != metav1.ConditionTrue {
		reason = "UnhealthyNode"
	}
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: status, Reason: reason})
	Expect(k8sClient.Status().Patch(ctx, m, client.MergeFrom(orig))).To(Succeed())
}

// createRemediation creates the PacketRemediation the MachineHealthCheck would: the Machine's
// name, owned by the Machine when it exists.
func createRemediation(mc *machineCluster, name string, strategy []infrav1.RemediationStep) *infrav1.PacketRemediation {
	rem := &infrav1.PacketRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mc.ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: mc.name, clusterv1.WatchLabel: mc.filter}},
		Spec: infrav1.PacketRemediationSpec{Strategy: strategy},
	}
	m := &clusterv1.Machine{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: name}, m); err == nil {
		rem.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine",
			Name: m.Name, UID: m.UID}}
	}
	Expect(k8sClient.Create(ctx, rem)).To(Succeed())
	return rem
}

// advanceUntilPhase moves the simulator's clock on by step until the remediation reaches phase.
func advanceUntilPhase(rem *infrav1.PacketRemediation, step time.Duration, phase infrav1.RemediationPhase) {
	GinkgoHelper()
	Eventually(func() infrav1.RemediationPhase {
		sim.Advance(step)
		return getRemediation(rem).Status.Phase
	}, eventually, 200*time.Millisecond).Should(Equal(phase))
}

func getRemediation(rem *infrav1.PacketRemediation) *infrav1.PacketRemediation {
	out := &infrav1.PacketRemediation{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(rem), out)).To(Succeed())
	return out
}

// actionCalls counts the successful device actions of one type sent for a device.
func actionCalls(deviceID, action string) int {
	n := 0
	for _, r := range sim.Requests() {
		if r.Route == "POST /devices/{id}/actions" && strings.Contains(r.Path, deviceID) && r.Status < 300 &&
			strings.Contains(r.Body, `"type":"`+action+`"`) {
			n++
		}
	}
	return n
}

// apiCallsTo counts the requests of one method to a device's own path.
func apiCallsTo(method, deviceID string) int {
	n := 0
	for _, r := range sim.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, "/devices/"+deviceID) {
			n++
		}
	}
	return n
}
