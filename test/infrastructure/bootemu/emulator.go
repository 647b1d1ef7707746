package bootemu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/packethost/packngo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// Options tune the emulation.
type Options struct {
	// MetalURL is the Packet API the emulated CPEM calls to move an elastic IP (the simulator's
	// own, e.g. http://127.0.0.1:4000/metal/v1/), with the key it finds in the workload cluster
	// (cpem.go); without it CPEM never moves one.
	MetalURL string
	// Interval is how often devices are looked at (default 500ms).
	Interval time.Duration
	// JoinTimeout is how long kubeadm join's discovery retries (kubeadm's default: 5m).
	JoinTimeout time.Duration
	// RebootTime is how long a rebooted host's Node stays NotReady (default 10s).
	RebootTime time.Duration
	// MoveRetry is how soon the emulated CPEM tries again to move an elastic IP (default 5s).
	MoveRetry time.Duration
	// RunScripts are the paths of scripts a payload writes that the emulated host runs, with
	// bash on this machine, when its runcmd calls them before kubeadm; kubeadm waits for them.
	// Cluster API's KCP remediation spec holds bootstrap with such a script (/wait-signal.sh)
	// until the test signals it through the management cluster. Others are not run: our
	// templates' scripts configure a real host.
	RunScripts []string
	Log        logr.Logger
}

// Emulator boots the simulator's devices into workload clusters.
type Emulator struct {
	sim  *packetsim.Server
	opts Options
	log  logr.Logger
	mgr  inmemoryruntime.Manager

	// hosts and clusters are touched by Step only.
	hosts    map[string]*host            // by device ID
	clusters map[string]*workloadCluster // by endpoint
}

// New returns an emulation of the devices of sim; Run starts it.
func New(sim *packetsim.Server, opts Options) (*Emulator, error) {
	if opts.Interval <= 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.JoinTimeout <= 0 {
		opts.JoinTimeout = 5 * time.Minute
	}
	if opts.RebootTime <= 0 {
		opts.RebootTime = 10 * time.Second
	}
	if opts.MoveRetry <= 0 {
		opts.MoveRetry = 5 * time.Second
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return &Emulator{sim: sim, opts: opts, log: opts.Log, mgr: inmemoryruntime.NewManager(scheme),
		hosts: map[string]*host{}, clusters: map[string]*workloadCluster{}}, nil
}

// Start starts the in-memory runtime that holds the workload clusters' objects; Run calls it.
func (e *Emulator) Start(ctx context.Context) error { return e.mgr.Start(ctx) }

// Close closes every endpoint.
func (e *Emulator) Close() {
	for _, h := range e.hosts {
		h.stopScript()
	}
	for _, c := range e.clusters {
		c.stop()
	}
}

// Run emulates until ctx ends, then closes every endpoint.
func (e *Emulator) Run(ctx context.Context) error {
	if err := e.Start(ctx); err != nil {
		return err
	}
	t := time.NewTicker(e.opts.Interval)
	defer t.Stop()
	defer e.Close()
	for {
		e.Step(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step looks at every device once: boots new ones, follows power states, removes what is gone,
// and routes each cluster's endpoint. Run calls it; tests may call it directly.
func (e *Emulator) Step(ctx context.Context) {
	now := e.sim.Now()
	devices := map[string]*packetsim.Device{}
	for _, d := range e.sim.Devices("") {
		devices[d.ID] = &d
		e.observe(ctx, e.hosts[d.ID], &d, now)
	}
	for id, h := range e.hosts {
		if devices[id] == nil {
			e.console(h, "power: device deleted")
			h.stopScript()
			e.shutdown(ctx, h)
			delete(e.hosts, id)
		}
	}
	e.route(ctx, devices, now)
}

func (e *Emulator) observe(ctx context.Context, h *host, d *packetsim.Device, now time.Time) {
	if h == nil {
		if d.State != packetsim.StateActive {
			return
		}
		h = e.firstBoot(d)
		e.hosts[d.ID] = h
	}
	h = e.power(h, d, now)
	if h.failed != "" || h.boot == nil {
		return
	}
	if !h.joined {
		if h.up(d, now) && e.scriptsFinished(h) {
			e.runKubeadm(ctx, h, d, now)
		}
		return
	}
	wc := e.mgr.GetResourceGroup(h.cluster.endpoint).GetClient()
	if err := setNodeReady(ctx, wc, h.boot.NodeName, h.up(d, now)); err != nil {
		e.log.Error(err, "Updating node readiness", "node", h.boot.NodeName)
	}
}

// power follows what happened to the device since the last look. A reboot event, or the device
// turning active again (powered on, reinstalled), is a boot: it counts against a host_down fault,
// which decides whether the host comes up. A reinstall rewrote the disk, so its boot reads the
// device's user-data again and runs kubeadm again (the Node, if any, is still in the cluster,
// NotReady, as the kubelet left it). It returns the host to go on with.
func (e *Emulator) power(h *host, d *packetsim.Device, now time.Time) *host {
	booted := false
	for _, ev := range d.Events[min(h.events, len(d.Events)):] {
		switch ev.Type {
		case "power.reboot":
			h.downUntil, booted = now.Add(e.opts.RebootTime), true
			e.console(h, "reboot: system is going down; back in %s", e.opts.RebootTime)
		case "reinstall.101":
			h.reinstalling = true
			e.console(h, "reinstall: the operating system is being written again; the next boot reads the user-data")
		}
	}
	h.events = len(d.Events)
	if d.State == packetsim.StateActive && h.state != packetsim.StateActive {
		booted = true
	}
	h.state = d.State
	if booted {
		hung := e.sim.BootHostDown(*d)
		if hung {
			e.console(h, "boot: no login prompt; the host does not answer")
		}
		if h.reinstalling && d.State == packetsim.StateActive {
			h.stopScript()
			h = e.firstBoot(d)
			e.hosts[d.ID] = h
		}
		h.hung = hung
	} else if !h.hung && e.sim.HostDown(*d) {
		h.hung = true
		e.console(h, "watchdog: BUG: soft lockup - the host stops answering")
	}
	return h
}

// addresses are the Node's addresses: the device's management IPs, as CPEM reports them.
func (e *Emulator) addresses(d *packetsim.Device) []corev1.NodeAddress {
	types := map[string]string{}
	for _, r := range e.sim.IPReservations(d.ProjectID) {
		types[r.ID] = r.Type
	}
	out := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: d.Hostname}}
	for _, a := range e.sim.IPAssignments(d.ProjectID) {
		if a.DeviceID != d.ID || !a.Management {
			continue
		}
		switch types[a.ReservationID] {
		case "private_ipv4":
			out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.Address})
		default:
			out = append(out, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a.Address})
		}
	}
	return out
}

// route decides, for each cluster, whether Packet delivers traffic for its endpoint to a live
// control plane, opens or closes the endpoint accordingly, and lets the emulated CPEM move the
// elastic IP when its holder is gone. A cluster without control planes left is dropped.
func (e *Emulator) route(ctx context.Context, devices map[string]*packetsim.Device, now time.Time) {
	for endpoint, c := range e.clusters {
		var live []*host
		members, projectID := 0, ""
		for _, h := range e.hosts {
			if h.cluster != c || !h.joined || !h.controlPlane() {
				continue
			}
			members, projectID = members+1, h.projectID
			if h.up(devices[h.deviceID], now) {
				live = append(live, h)
			}
		}
		if members == 0 {
			c.stop()
			e.mgr.DeleteResourceGroup(endpoint)
			delete(e.clusters, endpoint)
			e.log.Info("Workload cluster gone: no control plane left", "endpoint", endpoint)
			continue
		}
		slices.SortFunc(live, func(a, b *host) int { return strings.Compare(a.boot.NodeName, b.boot.NodeName) })
		if lb, ok := e.loadBalancerOf(projectID, c.host()); ok {
			// The load-balancer service routes this endpoint, not an elastic IP: CPEM has
			// nothing to move, and must not try to claim the load balancer's address.
			e.open(c, e.balanced(lb, c, live))
			continue
		}
		holder, routed := e.routedTo(c, live, now)
		e.open(c, routed)
		if !routed && len(live) > 0 && c.cloudProvider && !c.kubeVIP && c.everServed {
			e.moveElasticIP(ctx, c, holder, live[0], now)
		}
	}
}

// open opens the endpoint while it is routed and closes it otherwise.
func (e *Emulator) open(c *workloadCluster, routed bool) {
	if !routed {
		c.stop()
		return
	}
	if err := c.serve(); err != nil {
		e.log.Error(err, "Opening the control-plane endpoint")
	}
}

// routedTo reports whether the endpoint reaches a live control plane, and which assignment of
// the address exists (nil when none).
func (e *Emulator) routedTo(c *workloadCluster, live []*host, now time.Time) (*packetsim.IPAssignment, bool) {
	if len(live) == 0 {
		return nil, false
	}
	projectID := live[0].projectID
	if c.kubeVIP {
		if !e.reserved(projectID, c.host()) {
			return nil, false
		}
		for _, s := range e.sim.BGPSessions(projectID) {
			for _, h := range live {
				if s.DeviceID == h.deviceID {
					return nil, true
				}
			}
		}
		return nil, false
	}
	for _, a := range e.sim.IPAssignments(projectID) {
		if a.Address != c.host() || a.Management {
			continue
		}
		if now.Before(a.VisibleAt) {
			return nil, false
		}
		for _, h := range live {
			if a.DeviceID == h.deviceID {
				return nil, true
			}
		}
		return &a, false
	}
	return nil, false
}

func (e *Emulator) reserved(projectID, address string) bool {
	for _, r := range e.sim.IPReservations(projectID) {
		if r.Network == address && !r.Management {
			return true
		}
	}
	return false
}

// moveElasticIP is what CPEM does when the control plane holding the elastic IP is gone: assign
// the address to a live one, through the Packet API, with the key it reads from the cluster.
// What stops it is said once on the console of the host it runs on.
func (e *Emulator) moveElasticIP(ctx context.Context, c *workloadCluster, stale *packetsim.IPAssignment, to *host, now time.Time) {
	if e.opts.MetalURL == "" || now.Sub(c.lastMove) < e.opts.MoveRetry {
		return
	}
	c.lastMove = now
	fail := func(what string, err error) {
		if msg := fmt.Sprintf("cloud-provider-equinix-metal: %s: %v; will retry", what, err); msg != c.cpemSaid {
			c.cpemSaid = msg
			e.console(to, "%s", msg)
		}
		e.log.Info("CPEM cannot move the elastic IP; will retry", "step", what, "endpoint", c.endpoint, "error", err.Error())
	}
	metal, err := e.cpemClient(ctx, c)
	if err != nil {
		fail("reading its configuration", err)
		return
	}
	if stale != nil {
		if _, err := metal.DeviceIPs.Unassign(stale.ID); err != nil {
			fail("unassigning the elastic IP", err)
			return
		}
	}
	if _, _, err := metal.DeviceIPs.Assign(to.deviceID, &packngo.AddressStruct{Address: c.host() + "/32"}); err != nil {
		fail("assigning the elastic IP to "+to.deviceID, err)
		return
	}
	c.cpemSaid = ""
	e.console(to, "cloud-provider-equinix-metal: assigned the elastic IP %s to this device", c.host())
	e.log.Info("CPEM: moved the elastic IP to a live control plane", "endpoint", c.endpoint, "device", to.deviceID, "node", to.boot.NodeName)
}
