package janitor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const project = packetsim.DefaultProjectID

// identity is this test's management cluster; mine the tag of the objects it manages.
const identity = "5a7c1f2e-0000-4000-8000-00000000000a"

var mine = infrav1.ManagementClusterTag(identity)

var (
	testEnv  *helpers.TestEnvironment
	sim      *packetsim.Server
	simClock *packetsim.VirtualClock
	factory  *packet.Factory
)

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	if testEnv, err = helpers.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	simClock = packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if sim, err = packetsim.New(packetsim.Options{Clock: simClock}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := httptest.NewServer(sim.Handler())
	factory = packet.NewFactory(packet.Options{APIURL: srv.URL + "/metal/v1/", QPS: 1000, Burst: 1000,
		LBaaSURL: srv.URL + "/lbaas/", TokenExchangeURL: srv.URL + "/iam/api-keys/exchange",
		UserAgent: "capp-test", Timeout: 5 * time.Second, Now: simClock.Now})
	// Devices get BGP sessions, which the janitor deletes with them.
	c, err := factory.ClientFor("", packetsim.DefaultToken)
	if err == nil {
		err = c.EnableBGP(ctx, project, packet.BGPConfigRequest{DeploymentType: "local", ASN: 65000})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Close()
	_ = sim.Close()
	_ = testEnv.Stop()
	os.Exit(code)
}

// world is what one test puts in the management cluster and in Packet.
type world struct {
	t      *testing.T
	g      Gomega
	ctx    context.Context
	c      packet.Client
	ns     string
	orphan map[Kind][]string // IDs the janitor must report
	kept   map[Kind][]string // IDs it must leave alone
}

func (w *world) device(expectOrphan bool, name string, tags ...string) string {
	d, err := w.c.CreateDevice(w.ctx, packet.CreateDeviceRequest{ProjectID: project, Hostname: name, Plan: "c3.small.x86",
		OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly", Tags: tags})
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.c.EnsureBGPSession(w.ctx, d.ID)).To(Succeed())
	sessions, err := w.c.ListDeviceBGPSessions(w.ctx, d.ID)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(sessions).To(HaveLen(1))
	w.record(expectOrphan, KindDevice, d.ID)
	w.record(expectOrphan, KindBGPSession, sessions[0].ID)
	return d.ID
}

func (w *world) ip(expectOrphan bool, tags ...string) string {
	ip, err := w.c.ReserveIP(w.ctx, packet.ReserveIPRequest{ProjectID: project, Metro: "sv", Tags: tags})
	w.g.Expect(err).NotTo(HaveOccurred())
	w.record(expectOrphan, KindIPReservation, ip.ID)
	return ip.ID
}

func (w *world) vlan(expectOrphan bool, description string) {
	vn, err := w.c.CreateVLAN(w.ctx, project, "sv", description)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.record(expectOrphan, KindVLAN, vn.ID)
}

func (w *world) sshKey(expectOrphan bool, label string) {
	k, err := w.c.CreateProjectSSHKey(w.ctx, project, label, publicKey(len(w.orphan[KindSSHKey])+len(w.kept[KindSSHKey]), label))
	w.g.Expect(err).NotTo(HaveOccurred())
	w.record(expectOrphan, KindSSHKey, k.ID)
}

// publicKey is a well-formed ed25519 public key, distinct for every n.
func publicKey(n int, comment string) string {
	blob := binary.BigEndian.AppendUint32(nil, uint32(len("ssh-ed25519")))
	blob = append(blob, "ssh-ed25519"...)
	blob = binary.BigEndian.AppendUint32(blob, 32)
	key := make([]byte, 32)
	key[0], key[31] = byte(n), 0x5a
	blob = append(blob, key...)
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob) + " " + comment
}

func (w *world) loadBalancer(expectOrphan bool, name string) {
	lb, err := w.c.CreateLoadBalancer(w.ctx, packet.CreateLoadBalancerRequest{ProjectID: project, Name: name,
		LocationID: packetsim.LBaaSLocations["sv"].ID})
	w.g.Expect(err).NotTo(HaveOccurred())
	pool, err := w.c.CreateLoadBalancerPool(w.ctx, project, name)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.record(expectOrphan, KindLoadBalancer, lb)
	w.record(expectOrphan, KindLoadBalancerPool, pool)
}

func (w *world) record(expectOrphan bool, kind Kind, id string) {
	if expectOrphan {
		w.orphan[kind] = append(w.orphan[kind], id)
	} else {
		w.kept[kind] = append(w.kept[kind], id)
	}
}

// present returns the IDs of every kind the simulator holds in the project.
func present() map[Kind][]string {
	out := map[Kind][]string{}
	for _, d := range sim.Devices(project) {
		if d.State == packetsim.StateDeprovisioning {
			continue // deleted: Packet takes a while to let it go
		}
		out[KindDevice] = append(out[KindDevice], d.ID)
	}
	for _, s := range sim.BGPSessions(project) {
		out[KindBGPSession] = append(out[KindBGPSession], s.ID)
	}
	for _, ip := range sim.IPReservations(project) {
		out[KindIPReservation] = append(out[KindIPReservation], ip.ID)
	}
	for _, vn := range sim.VirtualNetworks(project) {
		out[KindVLAN] = append(out[KindVLAN], vn.ID)
	}
	for _, k := range sim.SSHKeys(project) {
		out[KindSSHKey] = append(out[KindSSHKey], k.ID)
	}
	for _, lb := range sim.LoadBalancers(project) {
		out[KindLoadBalancer] = append(out[KindLoadBalancer], lb.ID)
	}
	for _, p := range sim.LoadBalancerPools(project) {
		out[KindLoadBalancerPool] = append(out[KindLoadBalancerPool], p.ID)
	}
	return out
}

func byKind(orphans []Orphan) map[Kind][]string {
	out := map[Kind][]string{}
	for _, o := range orphans {
		out[o.Kind] = append(out[o.Kind], o.ID)
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

func sorted(m map[Kind][]string) map[Kind][]string {
	out := map[Kind][]string{}
	for k, v := range m {
		out[k] = slices.Sorted(slices.Values(v))
	}
	return out
}

func (w *world) createCluster(name string, provisioned bool) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name + "-cluster", Namespace: w.ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: name}}}
	w.g.Expect(testEnv.Client.Create(w.ctx, cluster)).To(Succeed())
	// The PacketCluster's name differs from its Cluster's, which names the tags: the janitor
	// must find the owner through the label.
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns,
		Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: infrav1.PacketClusterSpec{ProjectID: project, Metro: "sv"}}
	w.g.Expect(testEnv.Client.Create(w.ctx, pc)).To(Succeed())
	pc.Status.Initialization.Provisioned = ptr.To(provisioned)
	w.g.Expect(testEnv.Client.Status().Update(w.ctx, pc)).To(Succeed())
	if provisioned {
		// Cluster deleted: only the PacketCluster keeps the tags alive.
		w.g.Expect(testEnv.Client.Delete(w.ctx, cluster)).To(Succeed())
	}
}

func TestSweepReportsAndDeletesExactlyTheOrphans(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, err := factory.ClientFor("", packetsim.DefaultToken)
	g.Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "janitor-"}}
	g.Expect(testEnv.Client.Create(ctx, ns)).To(Succeed())
	w := &world{t: t, g: g, ctx: ctx, c: c, ns: ns.Name, orphan: map[Kind][]string{}, kept: map[Kind][]string{}}
	t.Cleanup(func() { w.deleteAll() })

	w.createCluster("alive", true)     // tags name alive-cluster
	w.createCluster("building", false) // not provisioned: its machines may still come
	pm := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: w.ns,
		Annotations: map[string]string{infrav1.MachineIdentityAnnotation: "id-m"}},
		Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"}}
	g.Expect(testEnv.Client.Create(ctx, pm)).To(Succeed())

	// Orphans: a machine and a whole cluster whose owners are gone.
	w.device(true, "gone-cp", infrav1.ClusterTag(w.ns, "gone"), infrav1.MachineUIDTag("uid-gone"), infrav1.RoleTag(true), mine)
	w.device(true, "alive-deleted-worker", infrav1.ClusterTag(w.ns, "alive-cluster"), infrav1.MachineUIDTag("uid-deleted"), infrav1.RoleTag(false), mine)
	w.device(true, "alive-deleted-new-worker", infrav1.ClusterTag(w.ns, "alive-cluster"), infrav1.MachineTag("id-deleted"), infrav1.RoleTag(false), mine)
	w.ip(true, infrav1.ClusterTag(w.ns, "gone"), infrav1.ControlPlaneEndpointTag(w.ns, "gone"), mine)
	w.vlan(true, infrav1.ClusterTag(w.ns, "gone"))
	w.sshKey(true, infrav1.SSHKeyLabel(w.ns, "gone"))
	w.loadBalancer(true, infrav1.ControlPlaneEndpointTag(w.ns, "gone"))

	// Owned: the provider's tags, owners present.
	w.device(false, "alive-m", infrav1.ClusterTag(w.ns, "alive-cluster"), infrav1.MachineTag("id-m"), infrav1.RoleTag(false), mine)
	// Created before the identity annotation existed: still the PacketMachine's by its UID.
	w.device(false, "alive-m-legacy", infrav1.ClusterTag(w.ns, "alive-cluster"), infrav1.MachineUIDTag(string(pm.UID)), infrav1.RoleTag(false), mine)
	w.device(false, "building-cp", infrav1.ClusterTag(w.ns, "building-cluster"), infrav1.MachineUIDTag("uid-not-yet"), infrav1.RoleTag(true), mine)
	w.ip(false, infrav1.ClusterTag(w.ns, "alive-cluster"), infrav1.ControlPlaneEndpointTag(w.ns, "alive-cluster"), mine)
	w.vlan(false, infrav1.ClusterTag(w.ns, "alive-cluster"))
	w.sshKey(false, infrav1.SSHKeyLabel(w.ns, "alive-cluster"))
	w.loadBalancer(false, infrav1.ControlPlaneEndpointTag(w.ns, "building-cluster"))

	// Another tool's objects: no provider tags.
	w.device(false, "other", "team:db", "cluster:"+w.ns+"/gone")
	w.ip(false, "team:db")
	w.vlan(false, "storage network")
	w.sshKey(false, "alice@laptop")
	w.loadBalancer(false, "grafana")

	simClock.Advance(DefaultGracePeriod + time.Minute)

	// In flight: created within the grace period, owners not visible yet.
	w.device(false, "new-cp", infrav1.ClusterTag(w.ns, "new"), infrav1.MachineUIDTag("uid-new"), infrav1.RoleTag(true), mine)
	w.ip(false, infrav1.ClusterTag(w.ns, "new"), infrav1.ControlPlaneEndpointTag(w.ns, "new"), mine)
	w.vlan(false, infrav1.ClusterTag(w.ns, "new"))
	w.sshKey(false, infrav1.SSHKeyLabel(w.ns, "new"))
	w.loadBalancer(false, infrav1.ControlPlaneEndpointTag(w.ns, "new"))

	before := sorted(present())
	targets, err := Targets(ctx, &credentials.Source{Reader: testEnv.Client, Clients: factory, Default: credentials.Default{APIKey: packetsim.DefaultToken}}, []string{project})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(targets).To(HaveLen(1), "the listed project and the PacketClusters' project are one target")

	j := &Janitor{Reader: testEnv.Client, Now: simClock.Now, ManagementCluster: identity}
	orphans, err := j.Sweep(ctx, targets)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byKind(orphans)).To(Equal(sorted(w.orphan)))
	for _, o := range orphans {
		g.Expect(o.Deleted).To(BeFalse())
		g.Expect(o.Owner).NotTo(BeEmpty())
	}
	g.Expect(sorted(present())).To(Equal(before), "a report-only sweep deletes nothing")
	g.Expect(testutil.ToFloat64(orphanedResources.WithLabelValues(string(KindDevice)))).To(Equal(3.0))
	g.Expect(testutil.ToFloat64(orphanedResources.WithLabelValues(string(KindSSHKey)))).To(Equal(1.0))

	var table bytes.Buffer
	g.Expect(WriteTable(&table, orphans, simClock.Now())).To(Succeed())
	g.Expect(table.String()).To(ContainSubstring("uid-gone"))
	g.Expect(table.String()).NotTo(ContainSubstring("ssh-ed25519"), "no key material in the report")
	t.Logf("report:\n%s", table.String())

	j.Delete = true
	orphans, err = j.Sweep(ctx, targets)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byKind(orphans)).To(Equal(sorted(w.orphan)))
	for _, o := range orphans {
		g.Expect(o.Deleted).To(BeTrue(), "%s %s", o.Kind, o.ID)
	}
	after := present()
	for kind, ids := range w.orphan {
		g.Expect(after[kind]).NotTo(ContainElements(ids), "orphaned %ss are deleted", kind)
	}
	for kind, ids := range w.kept {
		g.Expect(after[kind]).To(ContainElements(ids), "other %ss are kept", kind)
	}
	g.Expect(testutil.ToFloat64(orphanedResources.WithLabelValues(string(KindDevice)))).To(Equal(0.0))

	orphans, err = j.Sweep(ctx, targets)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(orphans).To(BeEmpty())
}

// TestSweepDeletesOnlyThisManagementClustersConfirmedOrphans is the threat model's attack on the
// janitor: two management clusters on one project, a cluster moved away by clusterctl, a
// namespace being moved, an address kept by its reclaim policy. Only this management cluster's
// orphans go, and only once they stayed orphans for ConfirmAfter.
func TestSweepDeletesOnlyThisManagementClustersConfirmedOrphans(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, err := factory.ClientFor("", packetsim.DefaultToken)
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "janitor-"}}
	g.Expect(testEnv.Client.Create(ctx, ns)).To(Succeed())
	moving := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "janitor-moving-"}}
	g.Expect(testEnv.Client.Create(ctx, moving)).To(Succeed())
	w := &world{t: t, g: g, ctx: ctx, c: c, ns: ns.Name, orphan: map[Kind][]string{}, kept: map[Kind][]string{}}
	t.Cleanup(func() { w.deleteAll() })
	// clusterctl move pauses the Clusters of the namespace it moves.
	paused := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "being-moved", Namespace: moving.Name},
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(true)}}
	g.Expect(testEnv.Client.Create(ctx, paused)).To(Succeed())
	other := infrav1.ManagementClusterTag("another-management-cluster")

	cluster := func(name string) []string { return []string{infrav1.ClusterTag(w.ns, name), infrav1.RoleTag(true)} }
	endpoint := func(name string) []string {
		return []string{infrav1.ClusterTag(w.ns, name), infrav1.ControlPlaneEndpointTag(w.ns, name)}
	}
	// Another management cluster's running cluster: its owners are not here.
	w.device(false, "theirs-cp", append(cluster("theirs"), infrav1.MachineTag("theirs-cp"), other)...)
	w.ip(false, append(endpoint("theirs"), other)...)
	w.vlan(false, infrav1.ClusterTag(w.ns, "theirs"))
	w.loadBalancer(false, infrav1.ControlPlaneEndpointTag(w.ns, "theirs"))
	// Made before the management-cluster tag existed, and an address kept by Retain: no one's.
	w.device(false, "untagged-cp", append(cluster("untagged"), infrav1.MachineTag("untagged-cp"))...)
	w.ip(false, endpoint("retained")...)
	// Moved away by clusterctl: found orphaned here, then tagged by the target.
	movedDevice := w.device(false, "moved-cp", append(cluster("moved"), infrav1.MachineTag("moved-cp"), mine)...)
	movedIP := w.ip(false, append(endpoint("moved"), mine)...)
	w.loadBalancer(false, infrav1.ControlPlaneEndpointTag(w.ns, "moved"))
	// This management cluster's orphans.
	w.device(true, "gone-cp", append(cluster("gone"), infrav1.MachineTag("gone-cp"), mine)...)
	w.ip(true, append(endpoint("gone"), mine)...)
	w.vlan(true, infrav1.ClusterTag(w.ns, "gone"))
	// An orphan of a namespace being moved: reported, not deleted.
	left, err := c.CreateDevice(ctx, packet.CreateDeviceRequest{ProjectID: project, Hostname: "left-cp", Plan: "c3.small.x86",
		OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly",
		Tags: []string{infrav1.ClusterTag(moving.Name, "left"), infrav1.MachineTag("left-cp"), mine}})
	g.Expect(err).NotTo(HaveOccurred())
	w.record(false, KindDevice, left.ID)
	simClock.Advance(DefaultGracePeriod + time.Minute)

	j := &Janitor{Reader: testEnv.Client, Now: simClock.Now, ManagementCluster: identity, Delete: true, ConfirmAfter: 10 * time.Minute}
	target := []Target{{ProjectID: project, Client: c}}
	first, err := j.Sweep(ctx, target)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(first)).To(ConsistOf("gone-cp", "device "+w.orphan[KindDevice][0]+" ipv4", endpointAddress(first, "gone"),
		infrav1.ClusterTag(w.ns, "gone"), "moved-cp", "device "+movedDevice+" ipv4", endpointAddress(first, "moved"),
		infrav1.ControlPlaneEndpointTag(w.ns, "moved"), infrav1.ControlPlaneEndpointTag(w.ns, "moved"), "left-cp"),
		"this management cluster's orphans, and only those, are reported")
	for _, o := range first {
		g.Expect(o.Deleted).To(BeFalse(), "%s %s is deleted at first sight", o.Kind, o.Name)
		g.Expect(o.Waiting).NotTo(BeEmpty())
	}

	// The target of the move tags what it now manages.
	g.Expect(c.TagDevice(ctx, movedDevice, infrav1.WithManagementCluster(append(cluster("moved"), infrav1.MachineTag("moved-cp")), "target"))).To(Succeed())
	g.Expect(c.TagIPReservation(ctx, movedIP, infrav1.WithManagementCluster(endpoint("moved"), "target"))).To(Succeed())
	simClock.Advance(11 * time.Minute)
	second, err := j.Sweep(ctx, target)
	g.Expect(err).NotTo(HaveOccurred())
	deleted := map[Kind][]string{}
	for _, o := range second {
		if o.Deleted {
			deleted[o.Kind] = append(deleted[o.Kind], o.ID)
		} else {
			g.Expect(o.ID).To(Equal(left.ID), "only the paused namespace's orphan waits")
			g.Expect(o.Waiting).To(ContainSubstring("paused"))
		}
	}
	g.Expect(sorted(deleted)).To(Equal(sorted(w.orphan)))
	after := present()
	for kind, ids := range w.kept {
		g.Expect(after[kind]).To(ContainElements(ids), "%ss not this management cluster's orphans are kept", kind)
	}
}

// names are the orphans' names.
func names(orphans []Orphan) []string {
	out := make([]string, 0, len(orphans))
	for _, o := range orphans {
		out = append(out, o.Name)
	}
	return out
}

// endpointAddress is the address of the reported reservation of the cluster's endpoint.
func endpointAddress(orphans []Orphan, cluster string) string {
	for _, o := range orphans {
		if o.Kind == KindIPReservation && strings.HasSuffix(o.Owner, "/"+cluster) {
			return o.Name
		}
	}
	return "no reservation reported for " + cluster
}

// deleteAll deletes what the test made, so that later tests sweep a clean project.
func (w *world) deleteAll() {
	for _, m := range []map[Kind][]string{w.orphan, w.kept} {
		for kind, ids := range m {
			for _, id := range ids {
				_ = deleteObject(w.ctx, w.c, Orphan{Kind: kind, ID: id})
			}
		}
	}
}

// TestRunnableSweepsUntilStopped runs the manager's runnable: it sweeps right away and again
// every interval, and returns nil when the manager stops it.
func TestRunnableSweepsUntilStopped(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sweeps := make(chan struct{}, 10)
	j := &Janitor{Reader: testEnv.Client, Now: simClock.Now}
	run := j.Runnable(10*time.Millisecond, func(context.Context) ([]Target, error) {
		sweeps <- struct{}{}
		return nil, nil
	})
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	for range 2 {
		g.Eventually(sweeps).WithTimeout(5 * time.Second).Should(Receive())
	}
	cancel()
	g.Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
}
