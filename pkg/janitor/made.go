package janitor

import (
	"fmt"
	"strings"
	"time"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// Which management cluster made an object. Devices and IP reservations carry the tag of the
// management cluster that manages them (infrav1.ManagementClusterTag); list keeps only this
// one's. VLANs, SSH keys, load balancers and pools carry no tags (packngo's VLAN and SSH key
// creates take none, the Load Balancer API has names only), so they are taken as this
// management cluster's only when the cluster they name is: its devices or IP reservations carry
// this management cluster's tag, now or in an earlier sweep, and none carries another's (or
// none). A VLAN or load balancer left alone, whose cluster had nothing taggable, is not swept.

// clusterKey is the namespace/name a cluster or control-plane endpoint tag names, "" for other
// tags. Cluster API keeps namespace and name short enough that these tags are never shortened
// by a hash (boundedTag), so the two prefixes name a cluster the same way.
func clusterKey(tag string) string {
	if v, ok := infrav1.TagValue(tag, infrav1.ClusterTagPrefix); ok {
		return v
	}
	if v, ok := infrav1.TagValue(tag, infrav1.ControlPlaneEndpointTagPrefix); ok {
		return v
	}
	return ""
}

// namespaceOf is the namespace of the first cluster the tags name, "" if none.
func namespaceOf(tags []string) string {
	for _, t := range tags {
		if ns, _, ok := strings.Cut(clusterKey(t), "/"); ok {
			return ns
		}
	}
	return ""
}

// attribute remembers the clusters that this sweep saw on this management cluster's objects.
func (j *Janitor) attribute(l *listed) {
	if j.attributed == nil {
		j.attributed = map[string]bool{}
	}
	for key := range l.mine {
		j.attributed[key] = true
	}
}

// made reports whether a cluster-wide candidate is this management cluster's: an IP reservation
// (list kept only those carrying its tag), or an untagged object of a cluster attributed to it
// and not seen on another's objects. Devices are kept by list alone.
func (j *Janitor) made(l *listed, c candidate) bool {
	if c.Kind == KindIPReservation {
		return true
	}
	for _, t := range c.tags {
		if key := clusterKey(t); key != "" && !l.foreign[key] && j.attributed[key] {
			return true
		}
	}
	return false
}

// confirm records when the orphan was first found and says why it may not be deleted yet, ""
// when it may: its namespace has a paused cluster (clusterctl move pauses what it moves), or it
// has been an orphan for less than ConfirmAfter.
func (j *Janitor) confirm(o *Orphan, owners *owners, now time.Time, found map[string]time.Time) string {
	key := string(o.Kind) + "/" + o.ID
	first, ok := j.found[key]
	if !ok {
		first = now
	}
	found[key] = first
	if owners.paused[o.namespace] {
		return fmt.Sprintf("a cluster of namespace %s is paused, perhaps being moved by clusterctl", o.namespace)
	}
	if until := first.Add(j.ConfirmAfter); now.Before(until) {
		return fmt.Sprintf("found %s; deleted if still an orphan of this management cluster at %s",
			first.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	return ""
}
