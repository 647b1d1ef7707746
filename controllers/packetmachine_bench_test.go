package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// BenchmarkPacketMachineLifecycle measures the Packet API calls one machine costs from create
// to provisioned to deleted, and the delay between its device turning active and the machine
// being reported provisioned, with the default poll settings and 5 minutes of provisioning.
//
// It is a discrete-event simulation on the simulator's virtual clock, which is also the
// reconciler's clock: each reconcile runs when the manager would run it — at RequeueAfter, or at
// once after a change the controller's watch predicates let through — and the clock jumps
// there. The figures are those of the policy, without watch latency or workqueue jitter.
//
//	make test TEST_PKGS=./controllers/... GO_TEST_FLAGS='-run ^$ -bench PacketMachineLifecycle -benchtime 1x -v'
func BenchmarkPacketMachineLifecycle(b *testing.B) {
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log)
	env, err := helpers.Start(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()

	for range b.N {
		res := runLifecycle(ctx, b, env, 3, 20)
		b.ReportMetric(res.callsPerMachine, "calls/machine")
		b.ReportMetric(res.p50.Seconds(), "active-to-provisioned-p50-s")
		b.ReportMetric(res.p99.Seconds(), "active-to-provisioned-p99-s")
		b.Log("\n" + res.table)
	}
}

type lifecycleResult struct {
	callsPerMachine float64
	p50, p99        time.Duration
	table           string
}

// benchMachine is one machine's place in the event queue.
type benchMachine struct {
	key           client.ObjectKey
	controlPlane  bool
	next          time.Time
	idle          bool
	activeAt      time.Time
	provisionedAt time.Time
}

func runLifecycle(ctx context.Context, b *testing.B, env *helpers.TestEnvironment, controlPlanes, workers int) lifecycleResult {
	b.Helper()
	clock := packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	timing := packetsim.TimingRealistic
	timing.Provisioning = 5 * time.Minute
	s, err := packetsim.New(packetsim.Options{Clock: clock, Timing: &timing})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	f := packet.NewFactory(packet.Options{APIURL: srv.URL + "/metal/v1/", QPS: 1e6, Burst: 1e6})
	r := &PacketMachineReconciler{Client: env.Client, Packet: f, DefaultAPIKey: packetsim.DefaultToken,
		Now: clock.Now, progress: device.NewProgress(), credentials: credentialsSource(env.Client, f, packetsim.DefaultToken, nil)}
	c := env.Client

	// The cluster, as Cluster API and the PacketCluster controller leave it: provisioned, with a
	// reserved, tagged elastic IP as the endpoint (CPEM).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	must(b, c.Create(ctx, ns))
	pcl, _ := f.ClientFor("", packetsim.DefaultToken)
	eip, err := pcl.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: simProject, Metro: "sv",
		Tags: []string{infrav1.ControlPlaneEndpointTag(ns.Name, "c1")}})
	must(b, err)
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns.Name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: "c1"}}}
	must(b, c.Create(ctx, cluster))
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	must(b, c.Status().Update(ctx, cluster))
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns.Name,
		Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: infrav1.PacketClusterSpec{ProjectID: simProject, Metro: "sv", VIPManager: infrav1.CPEMVIPManager,
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: eip.Address, Port: 6443}}}
	must(b, c.Create(ctx, pc))
	pc.Status.Initialization.Provisioned = ptr.To(true)
	must(b, c.Status().Update(ctx, pc))
	must(b, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: ns.Name},
		Data: map[string][]byte{"value": []byte("#cloud-config\n")}}))

	start := clock.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	var machines []*benchMachine
	for i := range controlPlanes + workers {
		name := fmt.Sprintf("m%02d", i)
		labels := map[string]string{clusterv1.ClusterNameLabel: "c1"}
		if i < controlPlanes {
			labels[clusterv1.MachineControlPlaneLabel] = ""
		}
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: labels},
			Spec: clusterv1.MachineSpec{ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PacketMachine", Name: name}}}
		must(b, c.Create(ctx, m))
		// The identity is given up front (as a moved PacketMachine brings it) so the fault below
		// can name the device's tag before the device exists.
		identity := fmt.Sprintf("bench-%s-%d", ns.Name, i)
		pm := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: labels,
			Annotations:     map[string]string{infrav1.MachineIdentityAnnotation: identity},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: name, UID: m.UID}}},
			Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"}}
		must(b, c.Create(ctx, pm))
		// Real devices wait in the queue for different times; hold each for 0-60 s more than
		// the profile's 30 s, so polls fall at different phases of provisioning.
		s.InjectFault(packetsim.Fault{Kind: packetsim.FaultDeviceStuck, State: "queued", Count: 1,
			Tag: infrav1.MachineTag(identity), Duration: timing.Queued + time.Duration(rng.Int64N(int64(time.Minute)))})
		// Machines arrive 7 s apart.
		machines = append(machines, &benchMachine{key: client.ObjectKeyFromObject(pm), controlPlane: i < controlPlanes,
			next: start.Add(time.Duration(i) * 7 * time.Second)})
	}

	before := s.Counters()
	runUntil(ctx, b, r, s, clock, machines, func(m *benchMachine, pm *infrav1.PacketMachine) bool {
		if ptr.Deref(pm.Status.Initialization.Provisioned, false) && m.provisionedAt.IsZero() {
			m.provisionedAt = clock.Now()
			id, _ := infrav1.ParseProviderID(pm.Spec.ProviderID)
			d, _ := s.Device(id)
			for _, e := range d.Events {
				if strings.Contains(e.Body, "Provision complete") {
					m.activeAt = e.CreatedAt
				}
			}
		}
		return !m.provisionedAt.IsZero()
	})
	for _, m := range machines {
		pm := &infrav1.PacketMachine{}
		must(b, c.Get(ctx, m.key, pm))
		must(b, c.Delete(ctx, pm))
		m.next, m.idle = clock.Now(), false
	}
	runUntil(ctx, b, r, s, clock, machines, nil)
	after := s.Counters()

	total := 0
	var routes []string
	for route, n := range after {
		if d := n - before[route]; d > 0 {
			total += d
			routes = append(routes, fmt.Sprintf("  %-32s %6.2f", route, float64(d)/float64(len(machines))))
		}
	}
	sort.Strings(routes)
	var delays []time.Duration
	var perMachine []string
	for _, m := range machines {
		delays = append(delays, m.provisionedAt.Sub(m.activeAt))
		perMachine = append(perMachine, fmt.Sprintf("%s active %s provisioned %s", m.key.Name,
			m.activeAt.Sub(start).Round(time.Millisecond), m.provisionedAt.Sub(start).Round(time.Millisecond)))
	}
	b.Log(strings.Join(perMachine, "\n"))
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	res := lifecycleResult{callsPerMachine: float64(total) / float64(len(machines)),
		p50: percentile(delays, 50), p99: percentile(delays, 99)}
	res.table = fmt.Sprintf("%d machines (%d CPEM control planes), queued %s-%s + provisioning %s, deprovisioning %s\n"+
		"Packet API calls per machine, create -> provisioned -> deleted: %.2f\n%s\n"+
		"device active -> machine provisioned: p50 %s, p99 %s, max %s",
		len(machines), controlPlanes, timing.Queued, timing.Queued+time.Minute, timing.Provisioning, timing.Deprovisioning, res.callsPerMachine,
		strings.Join(routes, "\n"), res.p50, res.p99, delays[len(delays)-1])
	return res
}

// runUntil reconciles the machines in virtual-time order until each is done (done nil: until
// the PacketMachine is gone) or idle.
func runUntil(ctx context.Context, b *testing.B, r *PacketMachineReconciler, s *packetsim.Server, clock *packetsim.VirtualClock,
	machines []*benchMachine, done func(*benchMachine, *infrav1.PacketMachine) bool) {
	b.Helper()
	pred := changedByOthers()
	for steps := 0; ; steps++ {
		if steps > 100000 {
			b.Fatal("machines never settled")
		}
		var m *benchMachine
		for _, cand := range machines {
			if !cand.idle && (m == nil || cand.next.Before(m.next)) {
				m = cand
			}
		}
		if m == nil {
			return
		}
		if d := m.next.Sub(clock.Now()); d > 0 {
			s.Advance(d)
		}
		before := &infrav1.PacketMachine{}
		if err := r.Client.Get(ctx, m.key, before); err != nil {
			m.idle = true // deleted
			continue
		}
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: m.key})
		after := &infrav1.PacketMachine{}
		if getErr := r.Client.Get(ctx, m.key, after); getErr != nil {
			m.idle = true
			continue
		}
		if done != nil && done(m, after) {
			m.idle = true
			continue
		}
		switch {
		case err != nil:
			m.next = clock.Now().Add(time.Second)
		case res.RequeueAfter > 0:
			m.next = clock.Now().Add(res.RequeueAfter)
		case pred.Update(event.UpdateEvent{ObjectOld: before, ObjectNew: after}):
			m.next = clock.Now() // the manager would get a watch event at once
		default:
			if done != nil {
				b.Fatalf("%s went idle before it was done: %+v", m.key, after.Status.Conditions)
			}
			m.idle = true
		}
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
