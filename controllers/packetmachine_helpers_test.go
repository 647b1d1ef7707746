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
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// The PacketMachine reconciler of the suite only handles objects labelled for it, so that a test
// can run its own managers (a restart) on objects the suite's leaves alone.
const machineSuiteFilter = "machine-suite"

// Real-time poll bounds for the suite: tests advance the simulator's virtual clock, which is the
// reconciler's clock too, so short real intervals are enough.
const (
	testPollMin = 100 * time.Millisecond
	testPollMax = 400 * time.Millisecond
	// testConfirmWindow is virtual time: tests that lose a create advance the clock past it.
	testConfirmWindow = 30 * time.Second
)

func newTestMachineReconciler(filter string) *PacketMachineReconciler {
	return &PacketMachineReconciler{Client: nil, Packet: factory, DefaultAPIKey: packetsim.DefaultToken,
		WatchFilterValue: filter, PollMin: testPollMin, PollMax: testPollMax,
		CreateConfirmWindow: testConfirmWindow, Now: simClock.Now}
}

func init() {
	suiteReconcilers = append(suiteReconcilers,
		func(c context.Context, mgr ctrl.Manager) error {
			r := newTestMachineReconciler(machineSuiteFilter)
			r.Client, r.APIReader = mgr.GetClient(), mgr.GetAPIReader()
			identity, err := scope.ManagementClusterIdentity(c, mgr.GetAPIReader())
			if err != nil {
				return err
			}
			r.ManagementCluster = identity
			r.LegacyAdoptionNamespaces = []string{legacyNamespace}
			return r.SetupWithManager(c, mgr, testOptions)
		},
		func(c context.Context, mgr ctrl.Manager) error {
			return (&PacketMachineTemplateReconciler{Client: mgr.GetClient(), Packet: factory,
				DefaultAPIKey: packetsim.DefaultToken, WatchFilterValue: machineSuiteFilter}).SetupWithManager(c, mgr, testOptions)
		})
}

// machineCluster is a provisioned Cluster with its PacketCluster, as Cluster API would have it.
type machineCluster struct {
	ns, name, filter string
	cluster          *clusterv1.Cluster
}

// newMachineCluster creates a cluster in a fresh namespace and waits until Cluster API would
// consider its infrastructure provisioned.
func newMachineCluster(spec infrav1.PacketClusterSpec) *machineCluster {
	return newFilteredMachineCluster(spec, machineSuiteFilter)
}

func newFilteredMachineCluster(spec infrav1.PacketClusterSpec, filter string) *machineCluster {
	return newMachineClusterIn(newNamespace(), "c1", spec, filter)
}

// newMachineClusterIn is newFilteredMachineCluster in an existing namespace.
func newMachineClusterIn(ns, name string, spec infrav1.PacketClusterSpec, filter string) *machineCluster {
	if spec.Metro == "" && spec.Facility == "" {
		spec.Metro = "sv"
	}
	cluster, _ := createCluster(ns, name, spec)
	Eventually(provisioned(ns, name), eventually).Should(Succeed())
	pc := getPacketCluster(ns, name)
	patchLabels(pc, filter)
	patchLabels(cluster, filter)
	mc := &machineCluster{ns: ns, name: name, filter: filter, cluster: cluster}
	// Cluster API's Cluster controller would now set this from the PacketCluster.
	mc.setInfrastructureProvisioned(true)
	if filter == machineSuiteFilter {
		// Machines left provisioning would be polled for the rest of the suite by its single
		// worker, and a slow machine then starves the specs that come after.
		DeferCleanup(mc.deleteMachines)
	}
	return mc
}

// deleteMachines deletes the cluster's PacketMachines and waits until they are gone.
func (mc *machineCluster) deleteMachines() {
	list := &infrav1.PacketMachineList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(mc.ns))).To(Succeed())
	for i := range list.Items {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &list.Items[i]))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		sim.Advance(2 * time.Second)
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(mc.ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}, eventually, 200*time.Millisecond).Should(Succeed())
}

func patchLabels(obj client.Object, filter string) {
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	base := obj.DeepCopyObject().(client.Object)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[clusterv1.WatchLabel] = filter
	obj.SetLabels(labels)
	Expect(k8sClient.Patch(ctx, obj, client.MergeFrom(base))).To(Succeed())
}

// machineOpts describe a Machine and its PacketMachine.
type machineOpts struct {
	controlPlane bool
	bootstrap    string
	format       string
	spec         infrav1.PacketMachineSpec
	noBootstrap  bool
	// failureDomain is the Machine's spec.failureDomain.
	failureDomain string
}

// createMachine creates a bootstrap Secret, a Machine and its PacketMachine ("pm-<name>", not
// the Machine's name) linked as Cluster API links them.
func (mc *machineCluster) createMachine(name string, o machineOpts) *infrav1.PacketMachine {
	if o.bootstrap == "" {
		o.bootstrap = "#cloud-config\nruncmd: [echo " + name + "]\n"
	}
	secretName := name + "-bootstrap"
	data := map[string][]byte{"value": []byte(o.bootstrap)}
	if o.format != "" {
		data["format"] = []byte(o.format)
	}
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: mc.ns}, Data: data})).To(Succeed())

	labels := map[string]string{clusterv1.ClusterNameLabel: mc.name, clusterv1.WatchLabel: mc.filter}
	if o.controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mc.ns, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName:   mc.name,
			Version:       "v1.33.1",
			Bootstrap:     clusterv1.Bootstrap{DataSecretName: ptr.To(secretName)},
			FailureDomain: o.failureDomain,
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "PacketMachine", Name: "pm-" + name},
		},
	}
	if o.noBootstrap {
		machine.Spec.Bootstrap = clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfig", Name: name}}
	}
	Expect(k8sClient.Create(ctx, machine)).To(Succeed())

	spec := o.spec
	if spec.OS == "" {
		spec.OS = "ubuntu_24_04"
	}
	if spec.MachineType == "" {
		spec.MachineType = "c3.small.x86"
	}
	pm := &infrav1.PacketMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "pm-" + name, Namespace: mc.ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: mc.name, clusterv1.WatchLabel: mc.filter},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine",
				Name: machine.Name, UID: machine.UID, Controller: ptr.To(true)}}},
		Spec: spec,
	}
	Expect(k8sClient.Create(ctx, pm)).To(Succeed())
	return pm
}

func getPM(pm *infrav1.PacketMachine) *infrav1.PacketMachine {
	out := &infrav1.PacketMachine{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), out)).To(Succeed())
	return out
}

// identityTag is the tag of the PacketMachine's device, read from its current copy while it
// exists: the identity annotation is written just before the first create.
func identityTag(pm *infrav1.PacketMachine) string {
	cur := &infrav1.PacketMachine{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), cur); err == nil {
		pm = cur
	}
	return infrav1.MachineIdentityTag(pm)
}

// devicesOf returns the simulator's devices tagged for the PacketMachine.
func devicesOf(pm *infrav1.PacketMachine) []packetsim.Device {
	var out []packetsim.Device
	tag := identityTag(pm)
	for _, d := range sim.Devices(simProject) {
		for _, t := range d.Tags {
			if t == tag {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// oneDevice waits until the PacketMachine has a device and returns it, checking it has one only.
func oneDevice(pm *infrav1.PacketMachine) packetsim.Device {
	var devs []packetsim.Device
	Eventually(func() []packetsim.Device { devs = devicesOf(pm); return devs }, eventually).ShouldNot(BeEmpty())
	Expect(devs).To(HaveLen(1))
	return devs[0]
}

// machineCondition reads one condition of the PacketMachine.
func machineCondition(pm *infrav1.PacketMachine, conditionType string) func() *metav1.Condition {
	return func() *metav1.Condition {
		out := &infrav1.PacketMachine{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), out); err != nil {
			return nil
		}
		return conditions.Get(out, conditionType)
	}
}

// isProvisioned waits for status.initialization.provisioned, advancing the virtual clock so the
// simulator moves the device along.
func isProvisioned(pm *infrav1.PacketMachine) {
	Eventually(func(g Gomega) {
		sim.Advance(5 * time.Second)
		g.Expect(getPM(pm).Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually, 200*time.Millisecond).Should(Succeed())
}

// deleteAndWait deletes the PacketMachine and waits until it is gone, advancing the clock.
func deleteAndWait(pm *infrav1.PacketMachine) {
	Expect(k8sClient.Delete(ctx, getPM(pm))).To(Succeed())
	Eventually(func() bool {
		sim.Advance(2 * time.Second)
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), &infrav1.PacketMachine{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}, eventually, 200*time.Millisecond).Should(BeTrue())
}

// eventReasons lists the reasons of the events recorded for an object.
func eventReasons(obj client.Object) func() []string {
	return func() []string {
		events := &corev1.EventList{}
		if err := k8sClient.List(ctx, events, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		var out []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == obj.GetName() {
				out = append(out, e.Reason)
			}
		}
		return out
	}
}

// setInfrastructureProvisioned sets what Cluster API's Cluster controller would.
func (mc *machineCluster) setInfrastructureProvisioned(v bool) {
	cluster := &clusterv1.Cluster{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: mc.name}, cluster)).To(Succeed())
	orig := cluster.DeepCopy()
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(v)
	Expect(k8sClient.Status().Patch(ctx, cluster, client.MergeFrom(orig))).To(Succeed())
}

// createsFor counts the create calls made for one PacketMachine (its tag is in the body), so
// machines of other tests cannot disturb the count.
func createsFor(pm *infrav1.PacketMachine) int {
	tag := identityTag(pm)
	n := 0
	for _, r := range sim.Requests() {
		if r.Route == "POST /projects/{id}/devices" && strings.Contains(r.Body, tag) {
			n++
		}
	}
	return n
}
