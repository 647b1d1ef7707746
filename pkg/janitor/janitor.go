// Package janitor finds the Packet objects this provider created whose owner is gone from the
// management cluster (a finalizer removed by hand, a namespace deleted around a stuck cluster, a
// manager killed between a create and recording it) and reports them; with an explicit opt-in it
// deletes them. It only ever looks at objects that carry the provider's tags or names (see
// api/v1beta1/tags.go) and never at one younger than its grace period, so a create in flight,
// whose owner may not be visible yet, is never touched.
package janitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Kind is the kind of a Packet object the janitor looks at; it is the metric's kind label.
type Kind string

// The kinds, in the order the janitor deletes them: what refers to another object goes first.
const (
	KindLoadBalancer     Kind = "load-balancer"
	KindLoadBalancerPool Kind = "load-balancer-pool"
	KindBGPSession       Kind = "bgp-session"
	KindDevice           Kind = "device"
	KindIPReservation    Kind = "ip-reservation"
	KindVLAN             Kind = "vlan"
	KindSSHKey           Kind = "ssh-key"
)

// Kinds are every kind, in deletion order.
var Kinds = []Kind{KindLoadBalancer, KindLoadBalancerPool, KindBGPSession, KindDevice, KindIPReservation, KindVLAN, KindSSHKey}

// DefaultGracePeriod is how old an object must be before the janitor reports it.
const DefaultGracePeriod = 30 * time.Minute

// Target is a project to sweep and the client (API key) to sweep it with.
type Target struct {
	ProjectID string
	Client    packet.Client
}

// Orphan is a Packet object carrying the provider's tags whose owner is gone.
type Orphan struct {
	Kind      Kind
	ProjectID string
	ID        string
	// Name is what people recognise the object by: hostname, address, label, description, name.
	Name string
	// Owner is the provider tag (or name) that names the missing owner.
	Owner     string
	CreatedAt time.Time
	// Deleted is set once the janitor deleted the object; Err when deleting it failed; Waiting
	// says why an orphan was not deleted (yet) although deleting was asked for.
	Deleted bool
	Err     error
	Waiting string

	namespace string // of the cluster the object's tags name
}

// Janitor sweeps projects for orphans.
type Janitor struct {
	// Reader reads PacketClusters, Clusters and PacketMachines from the management cluster. Give
	// an uncached reader (the manager's APIReader): a cache that lags would make owners look gone.
	Reader client.Reader
	// GracePeriod protects objects younger than it; 0 means DefaultGracePeriod.
	GracePeriod time.Duration
	// Delete deletes the orphans found; otherwise they are only reported.
	Delete bool
	// Now is the clock objects are aged by; nil means time.Now.
	Now func() time.Time
	// ManagementCluster is this management cluster's identity (scope.ManagementClusterIdentity).
	// Only what it made is swept: devices and IP reservations carrying its tag, and the VLANs,
	// SSH keys and load balancers of the clusters they name. Sweep fails without it.
	ManagementCluster string
	// ConfirmAfter is how long an orphan must stay one before it is deleted: by the first sweep
	// at least that long after the one that found it, and only if it still carries this
	// management cluster's tag then. A cluster moved away by clusterctl gets the target's tag
	// within moments of arriving there. 0 deletes at first sight (the command: a person runs it
	// and reads its table).
	ConfirmAfter time.Duration

	// found is when a sweep first found each orphan (kind/ID) that the last sweep still found;
	// attributed are the clusters (namespace/name) seen on this management cluster's devices or
	// IP reservations. Sweep is not for concurrent use.
	found      map[string]time.Time
	attributed map[string]bool
}

// owners is what exists in the management cluster, as the tags its Packet objects would carry.
type owners struct {
	// clusters are the cluster and control-plane-endpoint tags of every PacketCluster and Cluster.
	clusters map[string]bool
	// creating are the cluster tags of PacketClusters not yet provisioned: their machines may
	// not all exist yet (a cluster being created, or being moved by clusterctl).
	creating map[string]bool
	// machines are the machine identity tags of every PacketMachine: the identity
	// annotation's and the UID's (devices created before the annotation carry the latter).
	machines map[string]bool
	// devices are the device IDs PacketMachines name in spec.providerID.
	devices map[string]bool
	// paused are the namespaces with a paused Cluster or PacketCluster: clusterctl move pauses
	// what it moves, and nothing of theirs is deleted until that is over.
	paused map[string]bool
}

// listOwners reads the management cluster. It must run after the Packet objects were listed: an
// object's owner exists before the object is created, so every owner of a listed object that
// still exists is seen.
func (j *Janitor) listOwners(ctx context.Context) (*owners, error) {
	o := &owners{clusters: map[string]bool{}, creating: map[string]bool{}, machines: map[string]bool{}, devices: map[string]bool{},
		paused: map[string]bool{}}
	addCluster := func(namespace, name string, creating bool) {
		o.clusters[infrav1.ClusterTag(namespace, name)] = true
		o.clusters[infrav1.ControlPlaneEndpointTag(namespace, name)] = true
		if creating {
			o.creating[infrav1.ClusterTag(namespace, name)] = true
		}
	}
	pcs := &infrav1.PacketClusterList{}
	if err := j.Reader.List(ctx, pcs); err != nil {
		return nil, fmt.Errorf("listing PacketClusters: %w", err)
	}
	for i := range pcs.Items {
		pc := &pcs.Items[i]
		creating := pc.Status.Initialization.Provisioned == nil || !*pc.Status.Initialization.Provisioned
		if annotations.HasPaused(pc) {
			o.paused[pc.Namespace] = true
		}
		// Tags name the Cluster; the PacketCluster usually has the same name, but not always.
		addCluster(pc.Namespace, pc.Name, creating)
		if name := pc.Labels[clusterv1.ClusterNameLabel]; name != "" {
			addCluster(pc.Namespace, name, creating)
		}
		for _, ref := range pc.OwnerReferences {
			if ref.Kind == "Cluster" {
				addCluster(pc.Namespace, ref.Name, creating)
			}
		}
	}
	clusters := &clusterv1.ClusterList{}
	if err := j.Reader.List(ctx, clusters); err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	for i := range clusters.Items {
		// A Cluster whose PacketCluster is not there yet (or any more) still owns its objects.
		c := &clusters.Items[i]
		addCluster(c.Namespace, c.Name, false)
		if ptr.Deref(c.Spec.Paused, false) || annotations.HasPaused(c) {
			o.paused[c.Namespace] = true
		}
	}
	pms := &infrav1.PacketMachineList{}
	if err := j.Reader.List(ctx, pms); err != nil {
		return nil, fmt.Errorf("listing PacketMachines: %w", err)
	}
	for i := range pms.Items {
		pm := &pms.Items[i]
		o.machines[infrav1.MachineIdentityTag(pm)] = true
		o.machines[infrav1.MachineUIDTag(string(pm.UID))] = true
		if pm.Spec.ProviderID != "" {
			if id, err := infrav1.ParseProviderID(pm.Spec.ProviderID); err == nil {
				o.devices[strings.ToLower(id)] = true
			}
		}
	}
	return o, nil
}

// clusterOwned reports whether any of the object's cluster-naming tags names a live cluster, and
// whether it carries any at all.
func (o *owners) clusterOwned(tags []string) (owned, tagged bool, owner string) {
	for _, t := range tags {
		if strings.HasPrefix(t, infrav1.ClusterTagPrefix) || strings.HasPrefix(t, infrav1.ControlPlaneEndpointTagPrefix) {
			tagged = true
			if owner == "" {
				owner = t
			}
			if o.clusters[t] {
				return true, true, t
			}
		}
	}
	return false, tagged, owner
}

// candidate is a Packet object with the provider's tags, before its owner is checked.
type candidate struct {
	Orphan
	tags []string
}

// listed are a project's Packet objects with the provider's tags or names: the devices and IP
// reservations carrying mine (this management cluster's tag) and every VLAN, SSH key, load
// balancer and pool; and the clusters named by devices and IP reservations with and without it.
type listed struct {
	devices, ips, vlans, keys, lbs, pools []candidate
	mine, foreign                         map[string]bool
}

func list(ctx context.Context, t Target, mine string) (*listed, error) {
	l := &listed{mine: map[string]bool{}, foreign: map[string]bool{}}
	if err := l.listTagged(ctx, t, mine); err != nil {
		return nil, err
	}
	if err := l.listNamed(ctx, t); err != nil {
		return nil, err
	}
	return l, nil
}

// sort reports whether tags carry mine, noting the clusters they name as this management
// cluster's or another's.
func (l *listed) sort(tags []string, mine string) bool {
	ours := slices.Contains(tags, mine)
	for _, t := range tags {
		if key := clusterKey(t); key != "" {
			if ours {
				l.mine[key] = true
			} else {
				l.foreign[key] = true
			}
		}
	}
	return ours
}

// listTagged lists the devices and IP reservations with the provider's tags and mine.
func (l *listed) listTagged(ctx context.Context, t Target, mine string) error {
	devices, err := t.Client.FindDevicesByTags(ctx, t.ProjectID)
	if err != nil {
		return fmt.Errorf("listing devices: %w", err)
	}
	for _, d := range devices {
		if d.State == packet.DeviceStateDeprovisioning {
			continue // being deleted already
		}
		if (machineTag(d.Tags) != "" || hasTagPrefix(d.Tags, infrav1.ClusterTagPrefix)) && l.sort(d.Tags, mine) {
			l.devices = append(l.devices, candidate{Orphan{Kind: KindDevice, ID: d.ID, Name: d.Hostname, CreatedAt: d.CreatedAt}, d.Tags})
		}
	}
	ips, err := t.Client.FindIPReservationsByTags(ctx, t.ProjectID)
	if err != nil {
		return fmt.Errorf("listing IP reservations: %w", err)
	}
	for _, ip := range ips {
		if (hasTagPrefix(ip.Tags, infrav1.ClusterTagPrefix) || hasTagPrefix(ip.Tags, infrav1.ControlPlaneEndpointTagPrefix)) && l.sort(ip.Tags, mine) {
			l.ips = append(l.ips, candidate{Orphan{Kind: KindIPReservation, ID: ip.ID, Name: ip.Address, CreatedAt: ip.CreatedAt}, ip.Tags})
		}
	}
	return nil
}

// listNamed lists the VLANs, SSH keys, load balancers and pools the provider's names mark.
func (l *listed) listNamed(ctx context.Context, t Target) error {
	vlans, err := t.Client.ListVLANs(ctx, t.ProjectID, "")
	if err != nil {
		return fmt.Errorf("listing VLANs: %w", err)
	}
	for _, vn := range vlans {
		// The provider describes its VLANs with the cluster tag and nothing else.
		if strings.HasPrefix(vn.Description, infrav1.ClusterTagPrefix) {
			l.vlans = append(l.vlans, candidate{Orphan{Kind: KindVLAN, ID: vn.ID, Name: vn.Description, CreatedAt: vn.CreatedAt},
				[]string{vn.Description}})
		}
	}
	keys, err := t.Client.ListProjectSSHKeys(ctx, t.ProjectID)
	if err != nil {
		return fmt.Errorf("listing SSH keys: %w", err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k.Label, infrav1.ClusterTagPrefix) {
			l.keys = append(l.keys, candidate{Orphan{Kind: KindSSHKey, ID: k.ID, Name: k.Label, CreatedAt: k.CreatedAt}, []string{k.Label}})
		}
	}
	lbs, err := t.Client.ListLoadBalancers(ctx, t.ProjectID)
	if err != nil {
		return fmt.Errorf("listing load balancers: %w", err)
	}
	for _, lb := range lbs {
		if strings.HasPrefix(lb.Name, infrav1.ControlPlaneEndpointTagPrefix) {
			l.lbs = append(l.lbs, candidate{Orphan{Kind: KindLoadBalancer, ID: lb.ID, Name: lb.Name, CreatedAt: lb.CreatedAt}, []string{lb.Name}})
		}
	}
	pools, err := t.Client.ListLoadBalancerPools(ctx, t.ProjectID)
	if err != nil {
		return fmt.Errorf("listing load balancer pools: %w", err)
	}
	for _, p := range pools {
		if strings.HasPrefix(p.Name, infrav1.ControlPlaneEndpointTagPrefix) {
			l.pools = append(l.pools, candidate{Orphan{Kind: KindLoadBalancerPool, ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt}, []string{p.Name}})
		}
	}
	return nil
}

func hasTagPrefix(tags []string, prefix string) bool {
	return slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, prefix) })
}

// machineTag is the device's machine identity tag, of either kind, "" if it has none.
func machineTag(tags []string) string {
	if t := tagWithPrefix(tags, infrav1.MachineTagPrefix); t != "" {
		return t
	}
	return tagWithPrefix(tags, infrav1.MachineUIDTagPrefix)
}

func tagWithPrefix(tags []string, prefix string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, prefix) {
			return t
		}
	}
	return ""
}

// Sweep lists every target's objects, reports the orphans among them (a log line each, and the
// metric) and, with Delete, deletes those confirmed (ConfirmAfter). It returns the orphans
// found, in deletion order; an error means a target could not be swept whole (the others were).
func (j *Janitor) Sweep(ctx context.Context, targets []Target) ([]Orphan, error) {
	if j.ManagementCluster == "" {
		return nil, errors.New("the janitor needs the management cluster's identity: it sweeps only what this management cluster made")
	}
	log := ctrl.LoggerFrom(ctx).WithName("janitor")
	now := time.Now
	if j.Now != nil {
		now = j.Now
	}
	var all []Orphan
	var errs []error
	found := map[string]time.Time{}
	for _, t := range targets {
		orphans, err := j.sweepProject(ctx, log.WithValues("project", t.ProjectID), t, now(), found)
		all = append(all, orphans...)
		if err != nil {
			errs = append(errs, fmt.Errorf("project %s: %w", t.ProjectID, err))
		}
	}
	j.found = found // what no sweep finds any more starts over if it is found again
	recordMetric(all)
	return all, errors.Join(errs...)
}

func (j *Janitor) sweepProject(ctx context.Context, log logr.Logger, t Target, now time.Time, found map[string]time.Time) ([]Orphan, error) {
	l, err := list(ctx, t, infrav1.ManagementClusterTag(j.ManagementCluster))
	if err != nil {
		return nil, err
	}
	o, err := j.listOwners(ctx)
	if err != nil {
		return nil, err
	}
	j.attribute(l)
	grace := j.GracePeriod
	if grace <= 0 {
		grace = DefaultGracePeriod
	}
	// old reports whether the object is past the grace period. An object without a creation
	// time is never old: its age is unknown.
	old := func(c *candidate) bool {
		return !c.CreatedAt.IsZero() && now.Sub(c.CreatedAt) >= grace
	}
	orphans := map[Kind][]Orphan{}
	add := func(c candidate, owner string) {
		c.ProjectID, c.Owner, c.namespace = t.ProjectID, owner, namespaceOf(c.tags)
		orphans[c.Kind] = append(orphans[c.Kind], c.Orphan)
	}
	for _, c := range l.devices {
		if owner, orphaned := o.deviceOwner(c); old(&c) && orphaned {
			add(c, owner)
			if err := addBGPSessions(ctx, t, c, owner, add); err != nil {
				return nil, err
			}
		}
	}
	for _, group := range [][]candidate{l.ips, l.vlans, l.keys, l.lbs, l.pools} {
		for _, c := range group {
			if owned, tagged, owner := o.clusterOwned(c.tags); old(&c) && tagged && !owned && j.made(l, c) {
				add(c, owner)
			}
		}
	}
	return j.report(ctx, log, t, orphans, o, now, found)
}

// addBGPSessions adds an orphaned device's BGP sessions: orphans with it.
func addBGPSessions(ctx context.Context, t Target, c candidate, owner string, add func(candidate, string)) error {
	sessions, err := t.Client.ListDeviceBGPSessions(ctx, c.ID)
	if err != nil && !packet.IsNotFound(err) {
		return fmt.Errorf("listing BGP sessions of device %s: %w", c.ID, err)
	}
	for _, s := range sessions {
		add(candidate{Orphan: Orphan{Kind: KindBGPSession, ID: s.ID, Name: "device " + c.ID + " " + s.AddressFamily,
			CreatedAt: c.CreatedAt}, tags: c.tags}, owner)
	}
	return nil
}

// deviceOwner returns the tag of the device's owner (its machine identity, or its cluster's for
// a device without one) and whether that owner is gone.
func (o *owners) deviceOwner(c candidate) (string, bool) {
	machine := machineTag(c.tags)
	clusterTag := tagWithPrefix(c.tags, infrav1.ClusterTagPrefix)
	switch {
	case o.devices[strings.ToLower(c.ID)], machine != "" && o.machines[machine]:
		return machine, false // its PacketMachine exists
	case o.creating[clusterTag]:
		return machine, false // its cluster is being created: the machine may not be visible yet
	case machine == "" && o.clusters[clusterTag]:
		return clusterTag, false // no machine identity: only the cluster can own it
	case machine == "":
		return clusterTag, true
	}
	return machine, true
}

// report logs the project's orphans, kind by kind, deleting the confirmed ones first when asked
// to.
func (j *Janitor) report(ctx context.Context, log logr.Logger, t Target, orphans map[Kind][]Orphan, o *owners, now time.Time,
	found map[string]time.Time) ([]Orphan, error) {
	var out []Orphan
	var errs []error
	for _, kind := range Kinds {
		for _, orphan := range orphans[kind] {
			// confirm runs in a report-only sweep too: it records when the orphan was found.
			waiting := j.confirm(&orphan, o, now, found)
			switch {
			case !j.Delete:
			case waiting != "":
				orphan.Waiting = waiting
			default:
				orphan.Err = deleteObject(ctx, t.Client, orphan)
				orphan.Deleted = orphan.Err == nil
				if orphan.Err != nil {
					errs = append(errs, fmt.Errorf("deleting %s %s: %w", orphan.Kind, orphan.ID, orphan.Err))
				}
			}
			log.Info("Orphaned Packet object", "kind", orphan.Kind, "id", orphan.ID, "name", orphan.Name,
				"owner", orphan.Owner, "age", now.Sub(orphan.CreatedAt).Round(time.Second).String(),
				"deleted", orphan.Deleted, "waiting", orphan.Waiting, "error", orphan.Err)
			out = append(out, orphan)
		}
	}
	return out, errors.Join(errs...)
}

func deleteObject(ctx context.Context, c packet.Client, o Orphan) error {
	switch o.Kind {
	case KindLoadBalancer:
		return c.DeleteLoadBalancer(ctx, o.ID)
	case KindLoadBalancerPool:
		return c.DeleteLoadBalancerPool(ctx, o.ID)
	case KindBGPSession:
		return c.DeleteBGPSession(ctx, o.ID)
	case KindDevice:
		return c.DeleteDevice(ctx, o.ID)
	case KindIPReservation:
		return c.ReleaseIP(ctx, o.ID)
	case KindVLAN:
		return c.DeleteVLAN(ctx, o.ID)
	case KindSSHKey:
		return c.DeleteSSHKey(ctx, o.ID)
	}
	return fmt.Errorf("unknown kind %q", o.Kind)
}
