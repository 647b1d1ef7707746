package bootemu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// host is the emulated operating system of one device, from its first boot on.
type host struct {
	deviceID, projectID string
	boot                *Boot
	cluster             *workloadCluster
	// failed is why the boot stopped (cloud-init or kubeadm's last words); terminal.
	failed string
	// joined is set once kubeadm finished: the Node is registered (and a control plane runs).
	joined bool
	// joinSince is the first join attempt: kubeadm's discovery gives up JoinTimeout later.
	joinSince time.Time
	waiting   string
	// downUntil is the end of a reboot: the kubelet is back and the Node Ready again.
	downUntil time.Time
	// hung is set while the operating system does not answer (the simulator's host_down fault):
	// the device is active, the Node is not Ready. Only a boot may end it.
	hung bool
	// reinstalling is set from Packet's reinstall until the device is active again: the disk is
	// rewritten, and the next boot reads the user-data as a first boot does.
	reinstalling bool
	// state is the device's state at the last look: turning active again is a boot.
	state string
	// events is how many of the device's events were seen (a new power.reboot means a reboot).
	events int
	// nextScript is the index in boot.Scripts of the script to run next, script the one running.
	nextScript int
	script     *scriptRun
}

func (h *host) controlPlane() bool { return h.boot != nil && h.boot.Role != RoleWorkerJoin }

// providerID is the kubelet's --provider-id or, when there is none, what CPEM sets in a cluster
// that runs it; in a cluster without a cloud provider the Node has none.
func (h *host) providerID() string {
	if v := h.boot.KubeletExtraArgs["provider-id"]; v != "" {
		return v
	}
	if h.cluster == nil || !h.cluster.cloudProvider {
		return ""
	}
	return "equinixmetal://" + h.deviceID
}

// up reports whether the host runs: its device is active, not in the middle of a reboot, and its
// operating system answers.
func (h *host) up(d *packetsim.Device, now time.Time) bool {
	return d.State == packetsim.StateActive && !now.Before(h.downUntil) && !h.hung
}

// console writes what the host prints to its serial console.
func (e *Emulator) console(h *host, format string, args ...any) {
	e.sim.AppendConsole(h.deviceID, fmt.Sprintf(format, args...))
}

// fail ends a boot: the reason goes to the console and, as on Packet where a provisioning
// problem shows among the device's events, to a device event.
func (e *Emulator) fail(h *host, err error) {
	h.failed = err.Error()
	var be *BootError
	if !errors.As(err, &be) {
		h.failed = "emulation: " + h.failed
	}
	e.console(h, "%s", h.failed)
	e.console(h, "cloud-init: the node did not join a cluster")
	e.sim.AddDeviceEvent(h.deviceID, "boot.failed", "Boot failed: "+h.failed)
	e.log.Info("Boot failed", "device", h.deviceID, "reason", h.failed)
}

// notRun are the programs the emulation does not run: all but the scripts it was allowed to.
func notRun(programs []string, run []Script) []string {
	return slices.DeleteFunc(slices.Clone(programs), func(p string) bool {
		return slices.ContainsFunc(run, func(s Script) bool { return strings.Fields(s.Command)[0] == p })
	})
}

// firstBoot reads the user-data of a device that just became active.
func (e *Emulator) firstBoot(d *packetsim.Device) *host {
	h := &host{deviceID: d.ID, projectID: d.ProjectID, events: len(d.Events), state: d.State}
	e.mounts(h, d)
	e.console(h, "cloud-init: reading user-data (%d bytes)", len(d.UserData))
	b, err := ParseUserData(d.UserData, Identity{DeviceID: d.ID, Hostname: d.Hostname})
	if err != nil {
		e.fail(h, err)
		return h
	}
	b.Scripts = allowedScripts(b.Scripts, e.opts.RunScripts)
	h.boot = b
	for _, line := range b.Console {
		e.console(h, "%s", line)
	}
	if noOps := notRun(b.Programs, b.Scripts); len(noOps) > 0 {
		e.console(h, "cloud-init: runcmd: not emulated, taken as succeeded: %s", strings.Join(noOps, ", "))
	}
	e.console(h, "cloud-init: runcmd: kubeadm %s (node %s, endpoint %s)", b.Role, b.NodeName, b.Endpoint)
	return h
}

// runKubeadm is kubeadm init or join, retried on each step until it succeeds or gives up.
func (e *Emulator) runKubeadm(ctx context.Context, h *host, d *packetsim.Device, now time.Time) {
	var err error
	switch h.boot.Role {
	case RoleInit:
		err = e.kubeadmInit(ctx, h, d)
	default:
		err = e.kubeadmJoin(ctx, h, d, now)
	}
	if err != nil {
		e.fail(h, err)
	}
}

// kubeadmInit founds the cluster. kubeadm init itself talks to the endpoint on the host (our
// templates put the elastic IP on the loopback first), so it needs no route from outside;
// whether anyone else reaches the cluster is the routing's business.
func (e *Emulator) kubeadmInit(ctx context.Context, h *host, d *packetsim.Device) error {
	b := h.boot
	if c := e.clusters[b.Endpoint]; c != nil {
		return bootErrorf("kubeadm init: [preflight] %s already serves a control plane of another cluster", b.Endpoint)
	}
	c, err := newWorkloadCluster(e.mgr, b, e.log.WithValues("endpoint", b.Endpoint))
	if err != nil {
		return err
	}
	e.clusters[b.Endpoint] = c
	h.cluster = c
	wc := e.mgr.GetResourceGroup(c.endpoint).GetClient()
	if err := e.startNode(ctx, h, d, b.KubernetesVersion); err != nil {
		return err
	}
	for _, obj := range kubeadmInitObjects(b) {
		if err := createIfMissing(ctx, wc, obj); err != nil {
			return err
		}
	}
	e.console(h, "kubeadm: Your Kubernetes control-plane has initialized successfully!")
	return e.createHostSecrets(ctx, h, wc)
}

// kubeadmJoin waits, as kubeadm's discovery does, for the endpoint to answer with a CA that
// matches the pinned hash and to accept the bootstrap token.
func (e *Emulator) kubeadmJoin(ctx context.Context, h *host, d *packetsim.Device, now time.Time) error {
	b := h.boot
	if h.joinSince.IsZero() {
		h.joinSince = now
	}
	c := e.clusters[b.Endpoint]
	wait := func(why string) error {
		if now.Sub(h.joinSince) > e.opts.JoinTimeout {
			return bootErrorf("kubeadm join: couldn't validate the identity of the API Server: %s (gave up after %s)", why, e.opts.JoinTimeout)
		}
		if h.waiting != why {
			h.waiting = why
			e.console(h, "kubeadm join: [discovery] %s; retrying", why)
		}
		return nil
	}
	if c == nil || !c.serving() {
		return wait(fmt.Sprintf("Get \"https://%s/api/v1/namespaces/kube-public/configmaps/cluster-info\": dial tcp %s: connect: connection refused", b.Endpoint, b.Endpoint))
	}
	if !slices.Contains(b.CACertHashes, c.caHash()) {
		return bootErrorf("kubeadm join: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys %q match the pinned hashes %v", c.caHash(), b.CACertHashes)
	}
	if b.Role == RoleControlPlaneJoin && !c.sameCA(b.CA) {
		return bootErrorf("kubeadm join: [preflight] the cluster CA in /etc/kubernetes/pki is not the cluster's")
	}
	wc := e.mgr.GetResourceGroup(c.endpoint).GetClient()
	if !bootstrapTokenValid(ctx, wc, b.Token) {
		id, _, _ := splitToken(b.Token)
		return wait(fmt.Sprintf("token id %q is invalid for this cluster or it has expired", id))
	}
	h.cluster = c
	if err := e.startNode(ctx, h, d, clusterKubernetesVersion(ctx, wc)); err != nil {
		return err
	}
	e.console(h, "kubeadm: This node has joined the cluster")
	if !h.controlPlane() { // a worker has no admin.conf: its kubectl reaches no cluster
		return nil
	}
	return e.createHostSecrets(ctx, h, wc)
}

// startNode is the kubelet registering the Node and, on control planes, starting the static pods.
func (e *Emulator) startNode(ctx context.Context, h *host, d *packetsim.Device, version string) error {
	wc := e.mgr.GetResourceGroup(h.cluster.endpoint).GetClient()
	if err := registerNode(ctx, wc, h, version, e.addresses(d)); err != nil {
		return err
	}
	// A Node from before a reinstall is still there, NotReady: the new kubelet reports it Ready.
	if err := setNodeReady(ctx, wc, h.boot.NodeName, true); err != nil {
		return err
	}
	if h.controlPlane() {
		if err := h.cluster.addEtcdMember("etcd-" + h.boot.NodeName); err != nil {
			return err
		}
		if err := startControlPlane(ctx, wc, h.boot.NodeName); err != nil {
			return err
		}
	}
	h.joined = true
	return nil
}

// shutdown is the device going away: its Node and static pods leave the cluster (the kubelet
// and the node lifecycle controller would remove them; KCP has removed the etcd member first).
func (e *Emulator) shutdown(ctx context.Context, h *host) {
	if !h.joined || h.cluster == nil {
		return
	}
	wc := e.mgr.GetResourceGroup(h.cluster.endpoint).GetClient()
	if h.controlPlane() {
		if err := stopControlPlane(ctx, wc, h.boot.NodeName); err != nil {
			e.log.Error(err, "Removing static pods", "node", h.boot.NodeName)
		}
		h.cluster.removeEtcdMember("etcd-" + h.boot.NodeName)
	}
	if err := wc.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.boot.NodeName}}); err != nil && !apierrors.IsNotFound(err) {
		e.log.Error(err, "Removing node", "node", h.boot.NodeName)
	}
}
