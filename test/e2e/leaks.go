package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// CheckLeaks asserts (with a short grace for in-flight deletions) that the simulator holds no
// device, IP reservation, BGP session, SSH key, VLAN, load balancer or pool (with its origins)
// created for a cluster of namespace ns.
func (c *SimClient) CheckLeaks(ctx context.Context, ns string) error {
	var last error
	// Each check gets the caller's ctx, not the poll's: one under way when the grace ends
	// completes, so the error names what leaked rather than the deadline.
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 60*time.Second, true, func(context.Context) (bool, error) {
		last = c.leaks(ctx, ns)
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case wait.Interrupted(err) && ctx.Err() == nil: // the grace is over: report what is left
		return last
	default:
		return errors.Join(last, err)
	}
}

func (c *SimClient) leaks(ctx context.Context, ns string) error {
	var st simState
	var err error
	if st.devices, err = c.Devices(ctx, ""); err != nil {
		return err
	}
	if st.ips, err = c.IPReservations(ctx, ""); err != nil {
		return err
	}
	if st.sessions, err = c.BGPSessions(ctx); err != nil {
		return err
	}
	if st.keys, err = c.SSHKeys(ctx); err != nil {
		return err
	}
	if st.vlans, err = c.VLANs(ctx); err != nil {
		return err
	}
	if st.loadBalancers, err = c.LoadBalancers(ctx); err != nil {
		return err
	}
	if st.pools, err = c.LoadBalancerPools(ctx); err != nil {
		return err
	}
	if problems := leakedIn(st, ns); len(problems) > 0 {
		return fmt.Errorf("the simulator still holds: %s", strings.Join(problems, "; "))
	}
	return nil
}

// simState is what the leak check reads from the simulator.
type simState struct {
	devices  []Device
	ips      []IP
	sessions []BGPSession
	keys     []SSHKey
	vlans    []VLAN
	// EMLB clusters' load balancers and pools, named with the cluster's endpoint tag.
	loadBalancers []LoadBalancer
	pools         []LoadBalancerPool
}

// leakedIn lists what st still holds of namespace ns's clusters: devices and IP reservations
// tagged for them, SSH keys labelled for them, and BGP sessions of devices that are gone.
func leakedIn(st simState, ns string) []string {
	var problems []string
	existing := map[string]bool{}
	for _, d := range st.devices {
		existing[d.ID] = true
		if taggedFor(d.Tags, ns) {
			problems = append(problems, fmt.Sprintf("device %s (%s, %s)", d.ID, d.Hostname, d.State))
		}
	}
	for _, ip := range st.ips {
		if taggedFor(ip.Tags, ns) {
			problems = append(problems, fmt.Sprintf("IP reservation %s (%s, tags %v)", ip.ID, ip.Address, ip.Tags))
		}
	}
	for _, s := range st.sessions {
		id := s.Device.Href[strings.LastIndex(s.Device.Href, "/")+1:]
		if !existing[id] {
			problems = append(problems, fmt.Sprintf("BGP session %s of deleted device %s", s.ID, id))
		}
	}
	for _, k := range st.keys {
		if taggedFor([]string{k.Label}, ns) {
			problems = append(problems, fmt.Sprintf("SSH key %s (%s)", k.ID, k.Label))
		}
	}
	for _, vn := range st.vlans {
		if taggedFor([]string{vn.Description}, ns) {
			problems = append(problems, fmt.Sprintf("VLAN %s (%d, %s)", vn.ID, vn.VXLAN, vn.Description))
		}
	}
	for _, lb := range st.loadBalancers {
		if taggedFor([]string{lb.Name}, ns) {
			problems = append(problems, fmt.Sprintf("load balancer %s (%v, %s)", lb.ID, lb.IPs, lb.Name))
		}
	}
	for _, p := range st.pools {
		if taggedFor([]string{p.Name}, ns) {
			problems = append(problems, fmt.Sprintf("load-balancer pool %s (%s, %d origins)", p.ID, p.Name, len(p.Origins)))
		}
	}
	return problems
}

// taggedFor reports whether one of the tags (or SSH key labels) names a cluster of namespace
// ns (of any namespace when ns is ""): capp:cluster:<ns>/<name> or
// capp:control-plane-endpoint:<ns>/<name>, or the previous provider's capp:namespace:<ns>.
func taggedFor(tags []string, ns string) bool {
	for _, t := range tags {
		if v, ok := infrav1.TagValue(t, infrav1.PreviousNamespaceTagPrefix); ok && (ns == "" || v == ns) {
			return true
		}
		for _, prefix := range []string{infrav1.ClusterTagPrefix, infrav1.ControlPlaneEndpointTagPrefix} {
			if v, ok := infrav1.TagValue(t, prefix); ok && (ns == "" || strings.HasPrefix(v, ns+"/")) {
				return true
			}
		}
	}
	return false
}
