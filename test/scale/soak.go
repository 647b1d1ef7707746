package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// soakFaults are the Packet API misbehaviours of the soak: 5% 429, 10% 5xx, 5% of device
// creates and half the IP reservations stored but answered with an error, lists 5 s behind, and
// 200–800 ms latency on every call.
func soakFaults() []packetsim.Fault {
	return []packetsim.Fault{
		{Kind: packetsim.FaultRateLimit, Route: "*", Probability: 0.05, RetryAfter: 1},
		{Kind: packetsim.FaultHTTPError, Route: "*", Probability: 0.10, Status: 503},
		{Kind: packetsim.FaultCommitThenFail, Route: "POST /projects/{id}/devices", Probability: 0.05, Status: 500},
		{Kind: packetsim.FaultCommitThenFail, Route: "POST /projects/{id}/ips", Probability: 0.5, Status: 502},
		{Kind: packetsim.FaultListLag, Duration: 5 * time.Second},
		{Kind: packetsim.FaultLatency, Route: "*", Latency: 200 * time.Millisecond, Jitter: 600 * time.Millisecond},
	}
}

type soakResult struct {
	kills, faultResponses, duplicates int
	leaks, violations                 []string
	// namespaceDeletion is how long the second cluster's namespace took to go, 0 without it.
	namespaceDeletion time.Duration
	// takeovers are, with replicas, how long after each SIGKILL of the leader another manager
	// held the lease.
	takeovers []time.Duration
}

// maxTakeover is the longest a standby may take to lead after the leader is killed, with the
// manager's default flags (lease 15 s, retry 2 s). A standby tries every 2 s jittered by up to
// 120% (client-go's leaderelection), so up to 4.4 s apart, and counts the lease's 15 s from when
// it last saw the record change, not from the renewal written in it: it may see the dead
// leader's last renewal up to 4.4 s after the kill, and its first try after the lease ran out
// may come 4.4 s after that. Half a second more covers the metric the harness polls.
const maxTakeover = 15*time.Second + 2*4400*time.Millisecond + 500*time.Millisecond

// runSoak provisions n machines while the Packet API misbehaves and the manager is killed with
// SIGKILL every 15–30 s for the given duration, then checks the invariants: one device per
// machine, nothing left after deletion, no panic and no secret in any log.
func runSoak(ctx context.Context, h *harness, n int, chaosFor time.Duration) (*soakResult, error) {
	res := &soakResult{}
	keysBefore := len(h.sim.SSHKeys(packetsim.DefaultProjectID))
	sessionsBefore := len(h.sim.BGPSessions(packetsim.DefaultProjectID))
	for _, f := range soakFaults() {
		h.sim.InjectFault(f)
	}
	w := &workload{c: h.env.Client, namespace: fmt.Sprintf("soak-%d", time.Now().Unix()), cluster: "soak", n: n,
		sshKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRY soak@example.com"}
	doomed := newDoomedWorkload(h, w)
	if err := createAll(ctx, w, doomed.get()); err != nil {
		return nil, err
	}
	if err := runChaos(ctx, h, doomed, chaosFor, res); err != nil {
		return nil, err
	}
	h.sim.ClearFaults()
	res.faultResponses = countFaultResponses(h.sim)

	if err := checkProvisioned(ctx, h, w, res); err != nil {
		return nil, err
	}
	if err := w.deleteAll(ctx, 10*time.Minute); err != nil {
		res.violations = append(res.violations, err.Error())
	}
	res.leaks = append(res.leaks, leftovers(h.sim, w, keysBefore, sessionsBefore)...)
	if doomed != nil {
		res.leaks = append(res.leaks, checkDoomed(ctx, h, doomed, res)...)
	}
	res.violations = append(res.violations, scanLogs(h.managerLogs, h.apiKey)...)
	return res, nil
}

// newDoomedWorkload is, with a namespace controller, a second cluster (its own credentials
// Secret) whose namespace is deleted halfway through the chaos, as a team leaving would; nil
// without one.
func newDoomedWorkload(h *harness, w *workload) *doomedWorkload {
	if h.controllerManager == nil {
		return nil
	}
	return &doomedWorkload{workload: workload{c: h.env.Client, namespace: w.namespace + "-doomed", cluster: "doomed", n: 3, apiKey: h.apiKey},
		gone: make(chan time.Duration, 1)}
}

// runChaos kills and restarts the manager every 15–30 s until chaosFor has passed, deleting the
// doomed workload's namespace halfway.
func runChaos(ctx context.Context, h *harness, doomed *doomedWorkload, chaosFor time.Duration, res *soakResult) error {
	chaosEnd := time.Now().Add(chaosFor)
	doomAt := time.Now().Add(chaosFor / 2)
	for time.Now().Before(chaosEnd) {
		if time.Now().After(doomAt) {
			if err := doomed.deleteNamespace(ctx); err != nil {
				return err
			}
		}
		wait := 15*time.Second + rand.N(15*time.Second)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(wait, time.Until(chaosEnd))):
		}
		if time.Now().After(chaosEnd) {
			break
		}
		res.kills++
		if err := killManager(ctx, h, res); err != nil {
			return err
		}
	}
	return doomed.deleteNamespace(ctx) // a chaos too short to reach doomAt
}

// killManager SIGKILLs the manager, or with replicas the leader, and starts another.
func killManager(ctx context.Context, h *harness, res *soakResult) error {
	if h.opts.replicas < 2 {
		h.stopManager(syscall.SIGKILL)
		return h.startManager(ctx)
	}
	took, err := h.killLeader(ctx)
	if err != nil {
		return err
	}
	res.takeovers = append(res.takeovers, took)
	if took > maxTakeover {
		res.violations = append(res.violations, fmt.Sprintf("a standby took the lease %s after the leader was killed (at most %s)",
			took.Round(100*time.Millisecond), maxTakeover))
	}
	return nil
}

// countFaultResponses counts the simulator's answers that were throttled or failed.
func countFaultResponses(sim *packetsim.Server) int {
	n := 0
	for _, r := range sim.Requests() {
		if r.Status == 429 || r.Status >= 500 {
			n++
		}
	}
	return n
}

// checkProvisioned waits for every machine of w to be provisioned after the chaos, then records
// a violation for each machine without exactly one device and for duplicate endpoint IPs.
func checkProvisioned(ctx context.Context, h *harness, w *workload, res *soakResult) error {
	n := w.n
	if err := waitFor(ctx, 10*time.Minute, "every machine provisioned after the chaos", func() (bool, error) {
		machines, err := w.machines(ctx)
		if err != nil {
			return false, err
		}
		done := 0
		for _, m := range machines {
			if ptr.Deref(m.Status.Initialization.Provisioned, false) {
				done++
			}
		}
		return done == n, nil
	}); err != nil {
		res.violations = append(res.violations, err.Error())
	}
	machines, err := w.machines(ctx)
	if err != nil {
		return err
	}
	for i := range machines {
		m := &machines[i]
		if got := len(devicesTagged(h.sim, infrav1.MachineIdentityTag(m))); got != 1 {
			res.violations = append(res.violations, fmt.Sprintf("machine %s has %d devices", m.Name, got))
			res.duplicates += max(got-1, 0)
		}
	}
	if got := len(ipsTagged(h.sim, infrav1.ControlPlaneEndpointTag(w.namespace, w.cluster))); got != 1 {
		res.violations = append(res.violations, fmt.Sprintf("the cluster has %d endpoint IP reservations", got))
		res.duplicates += max(got-1, 0)
	}
	if got := len(devicesTagged(h.sim, infrav1.ClusterTag(w.namespace, w.cluster))); got != n {
		res.violations = append(res.violations, fmt.Sprintf("%d devices for %d machines", got, n))
		res.duplicates += max(got-n, 0)
	}
	return nil
}

// leftovers lists what w's deletion left in the simulator: devices and IP reservations tagged
// with its cluster, and BGP sessions and SSH keys beyond those there before the soak.
func leftovers(sim *packetsim.Server, w *workload, keysBefore, sessionsBefore int) []string {
	var leaks []string
	clusterTag := infrav1.ClusterTag(w.namespace, w.cluster)
	if d := devicesTagged(sim, clusterTag); len(d) > 0 {
		leaks = append(leaks, fmt.Sprintf("%d devices", len(d)))
	}
	if ips := ipsTagged(sim, clusterTag); len(ips) > 0 {
		leaks = append(leaks, fmt.Sprintf("%d IP reservations", len(ips)))
	}
	if got := len(sim.BGPSessions(packetsim.DefaultProjectID)); got > sessionsBefore {
		leaks = append(leaks, fmt.Sprintf("%d BGP sessions", got-sessionsBefore))
	}
	if got := len(sim.SSHKeys(packetsim.DefaultProjectID)); got > keysBefore {
		leaks = append(leaks, fmt.Sprintf("%d SSH keys", got-keysBefore))
	}
	return leaks
}

// createAll creates the workloads side by side: each waits for its PacketCluster.
func createAll(ctx context.Context, workloads ...*workload) error {
	errs := make(chan error, len(workloads))
	for _, w := range workloads {
		go func() {
			if w == nil {
				errs <- nil
				return
			}
			errs <- w.create(ctx)
		}()
	}
	var err error
	for range workloads {
		err = errors.Join(err, <-errs)
	}
	return err
}

// doomedWorkload is a workload whose namespace is deleted during the soak.
type doomedWorkload struct {
	workload
	deleted bool
	gone    chan time.Duration
}

func (d *doomedWorkload) get() *workload {
	if d == nil {
		return nil
	}
	return &d.workload
}

// deleteNamespace deletes the namespace, once, and times its deletion. Nothing without a
// doomed workload.
func (d *doomedWorkload) deleteNamespace(ctx context.Context) error {
	if d == nil || d.deleted {
		return nil
	}
	if err := d.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.namespace}}); err != nil {
		return err
	}
	d.deleted = true
	go d.timeNamespaceDeletion(ctx)
	return nil
}

// timeNamespaceDeletion reports on gone how long the namespace takes to go from now, or -1
// if it is still there after 10 minutes.
func (d *doomedWorkload) timeNamespaceDeletion(ctx context.Context) {
	start := time.Now()
	err := waitFor(ctx, 10*time.Minute, "namespace "+d.namespace+" deleted", func() (bool, error) {
		err := d.c.Get(ctx, client.ObjectKey{Name: d.namespace}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		d.gone <- -1
		return
	}
	d.gone <- time.Since(start)
}

// checkDoomed waits for the deleted namespace to be gone and returns what it left at Packet.
func checkDoomed(ctx context.Context, h *harness, doomed *doomedWorkload, res *soakResult) []string {
	select {
	case took := <-doomed.gone:
		if took < 0 {
			res.violations = append(res.violations, "namespace "+doomed.namespace+" is still there 10m after its deletion")
		}
		res.namespaceDeletion = took
	case <-ctx.Done():
		return nil
	}
	var leaks []string
	tag := infrav1.ClusterTag(doomed.namespace, doomed.cluster)
	if d := devicesTagged(h.sim, tag); len(d) > 0 {
		leaks = append(leaks, fmt.Sprintf("%d devices of the deleted namespace", len(d)))
	}
	if ips := ipsTagged(h.sim, tag); len(ips) > 0 {
		leaks = append(leaks, fmt.Sprintf("%d IP reservations of the deleted namespace", len(ips)))
	}
	return leaks
}

func devicesTagged(sim *packetsim.Server, tag string) []packetsim.Device {
	var out []packetsim.Device
	for _, d := range sim.Devices(packetsim.DefaultProjectID) {
		if slices.Contains(d.Tags, tag) && d.State != packetsim.StateGone {
			out = append(out, d)
		}
	}
	return out
}

func ipsTagged(sim *packetsim.Server, tag string) []packetsim.IPReservation {
	var out []packetsim.IPReservation
	for _, ip := range sim.IPReservations(packetsim.DefaultProjectID) {
		if slices.Contains(ip.Tags, tag) {
			out = append(out, ip)
		}
	}
	return out
}

// scanLogs reports panics and leaked secrets in the manager logs.
func scanLogs(paths []string, apiKey string) []string {
	var problems []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, bad := range []struct{ text, what string }{
			{"panic:", "a panic"}, {"Observed a panic", "a recovered panic"},
			{apiKey, "the API key"}, {userDataMarker, "user-data"},
		} {
			if bytes.Contains(data, []byte(bad.text)) {
				problems = append(problems, fmt.Sprintf("%s contains %s", p, bad.what))
			}
		}
	}
	return problems
}

func (r *soakResult) print(w io.Writer, n int, chaosFor time.Duration) {
	fmt.Fprintf(w, "\nSoak: %d machines, %s of chaos\n", n, chaosFor)
	fmt.Fprintf(w, "  manager kills (SIGKILL):   %d\n", r.kills)
	if len(r.takeovers) > 0 {
		fmt.Fprintf(w, "  leader killed, standby leading after: min %s, p50 %s, max %s (lease 15 s, retry 2 s + jitter; bound %s)\n",
			percentile(r.takeovers, 0).Round(100*time.Millisecond), percentile(r.takeovers, 0.5).Round(100*time.Millisecond),
			percentile(r.takeovers, 1).Round(100*time.Millisecond), maxTakeover)
	}
	fmt.Fprintf(w, "  faulty API responses:      %d (429 and 5xx)\n", r.faultResponses)
	fmt.Fprintf(w, "  duplicate devices found:   %d\n", r.duplicates)
	fmt.Fprintf(w, "  leaks after deletion:      %d %v\n", len(r.leaks), r.leaks)
	if r.namespaceDeletion > 0 {
		fmt.Fprintf(w, "  namespace deleted mid-chaos (3 machines, own credentials): gone in %s\n", r.namespaceDeletion.Round(time.Second))
	}
	fmt.Fprintf(w, "  violations:                %d\n", len(r.violations))
	for _, v := range r.violations {
		fmt.Fprintf(w, "    - %s\n", v)
	}
}
