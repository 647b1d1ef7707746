package v1beta1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Tags identify the Packet objects the provider creates. Packet has no labels and no unique
// names, so tags are the only way to find a device or IP again after a lost response or a
// manager restart. Every tag includes the namespace: two clusters of the same name in different
// namespaces never share an object.
const (
	tagPrefix = "capp:"

	// ClusterTagPrefix marks every object of a cluster: capp:cluster:<namespace>/<name>.
	ClusterTagPrefix = tagPrefix + "cluster:"
	// ControlPlaneEndpointTagPrefix marks the elastic IP of a cluster's control-plane endpoint.
	// It is also the eipTag the Cloud Provider for Equinix Metal looks the IP up by.
	ControlPlaneEndpointTagPrefix = tagPrefix + "control-plane-endpoint:"
	// MachineTagPrefix marks the device of one PacketMachine: capp:machine:<id>, the random id
	// of the PacketMachine's MachineIdentityAnnotation.
	MachineTagPrefix = tagPrefix + "machine:"
	// MachineUIDTagPrefix (capp:machine-uid:<uid>) marked devices created before the identity
	// annotation existed. A UID does not survive clusterctl move, so it is only read now: a
	// PacketMachine without the annotation still finds and keeps its device by it.
	MachineUIDTagPrefix = tagPrefix + "machine-uid:"
	// ManagementClusterTagPrefix marks the devices and IP reservations a management cluster
	// manages: capp:management-cluster:<UID of its kube-system namespace>. Two management
	// clusters on one project, or one before and one after clusterctl move, tell their objects
	// apart by it; the orphan janitor sweeps only its own. The controllers put theirs on what
	// they find without it (a moved cluster's, one made before the tag existed) and take it off
	// what they keep behind on purpose (an elastic IP retained by its reclaim policy).
	ManagementClusterTagPrefix = tagPrefix + "management-cluster:"
	// RoleTagPrefix says whether a device is a control plane or a worker.
	RoleTagPrefix = tagPrefix + "role:"

	// LegacyClusterTagPrefix is the elastic IP tag of the previous Packet provider
	// (cluster-api-provider-packet:cluster-id:<name>); reservations carrying it are adopted so
	// migrated clusters keep their address.
	LegacyClusterTagPrefix = "cluster-api-provider-packet:cluster-id:"

	// PreviousClusterIDTagPrefix and PreviousNamespaceTagPrefix are the device tags of the
	// previous provider's last releases (v0.9.0: capp:cluster-id:<cluster name> and
	// capp:namespace:<namespace>, next to capp:machine-uid:<Machine name> and
	// kubernetes.io/role:master|node). Only the pair identifies a cluster (PreviousClusterTags).
	PreviousClusterIDTagPrefix = tagPrefix + "cluster-id:"
	PreviousNamespaceTagPrefix = tagPrefix + "namespace:"

	// ControlPlaneRole and WorkerRole are the values of the role tag.
	ControlPlaneRole = "control-plane"
	WorkerRole       = "worker"

	// MaxTagLength is the longest tag Packet accepts.
	MaxTagLength = 255
)

// ClusterTag is the tag every Packet object of the cluster carries.
func ClusterTag(namespace, name string) string {
	return boundedTag(ClusterTagPrefix, namespace+"/"+name)
}

// DescribedForAnotherNamespace reports whether a VLAN's description says a cluster of another
// namespace made it (its ClusterTag): a VLAN a cluster names by ID or VXLAN must be a hand-made
// one or one of its own namespace's, never another tenant's private layer 2.
func DescribedForAnotherNamespace(description, namespace string) bool {
	return strings.HasPrefix(description, ClusterTagPrefix) && !strings.HasPrefix(description, ClusterTagPrefix+namespace+"/")
}

// ControlPlaneEndpointTag is the tag of the cluster's control-plane elastic IP.
func ControlPlaneEndpointTag(namespace, name string) string {
	return boundedTag(ControlPlaneEndpointTagPrefix, namespace+"/"+name)
}

// MachineTag is the tag of the device behind the PacketMachine with this identity.
func MachineTag(identity string) string {
	return boundedTag(MachineTagPrefix, identity)
}

// MachineUIDTag is the tag of a device created for the PacketMachine with this UID before the
// identity annotation existed.
func MachineUIDTag(uid string) string {
	return boundedTag(MachineUIDTagPrefix, uid)
}

// MachineIdentityTag is the tag that finds pm's device: MachineTag of its identity annotation,
// or MachineUIDTag of its UID while it has none (it never sent a create, or sent it before the
// annotation existed).
func MachineIdentityTag(pm *PacketMachine) string {
	if id := pm.Annotations[MachineIdentityAnnotation]; id != "" {
		return MachineTag(id)
	}
	return MachineUIDTag(string(pm.UID))
}

// ManagementClusterTag is the tag of the objects the management cluster with this identity
// manages.
func ManagementClusterTag(identity string) string {
	return boundedTag(ManagementClusterTagPrefix, identity)
}

// WithManagementCluster returns tags with the management-cluster tag of identity in place of any
// other management cluster's; with identity "", tags without any. tags is not modified.
func WithManagementCluster(tags []string, identity string) []string {
	out := make([]string, 0, len(tags)+1)
	for _, t := range tags {
		if !strings.HasPrefix(t, ManagementClusterTagPrefix) {
			out = append(out, t)
		}
	}
	if identity != "" {
		out = append(out, ManagementClusterTag(identity))
	}
	return out
}

// RoleTag is the tag saying whether a device is a control plane or a worker.
func RoleTag(controlPlane bool) string {
	if controlPlane {
		return RoleTagPrefix + ControlPlaneRole
	}
	return RoleTagPrefix + WorkerRole
}

// SSHKeyLabel is the label of the project SSH keys the provider registers for a cluster's
// machines (SSH keys have a label, not tags); the keys are deleted with the cluster.
func SSHKeyLabel(namespace, name string) string {
	return ClusterTag(namespace, name)
}

// LegacyClusterTag is the previous provider's elastic IP tag for a cluster name.
func LegacyClusterTag(name string) string {
	return boundedTag(LegacyClusterTagPrefix, name)
}

// PreviousClusterTags are the two tags the previous provider's v0.9.0 put on every device of
// the cluster namespace/name. It built them unbounded, so they are matched as it wrote them.
func PreviousClusterTags(namespace, name string) []string {
	return []string{PreviousClusterIDTagPrefix + name, PreviousNamespaceTagPrefix + namespace}
}

// IsReservedTag reports whether a tag uses one of the provider's prefixes, its own or the
// previous provider's. Users' tags may not: a device carrying another machine's identity tag
// would be adopted or deleted as that machine's.
func IsReservedTag(tag string) bool {
	return strings.HasPrefix(tag, tagPrefix) || strings.HasPrefix(tag, "cluster-api-provider-packet:")
}

// ReservedTagPrefixes are the prefixes IsReservedTag refuses, for messages.
var ReservedTagPrefixes = []string{tagPrefix, "cluster-api-provider-packet:"}

// TagValue returns what follows prefix in tag, and whether tag has that prefix.
func TagValue(tag, prefix string) (string, bool) {
	if !strings.HasPrefix(tag, prefix) {
		return "", false
	}
	return tag[len(prefix):], true
}

// boundedTag joins prefix and value, replacing the end of a value too long for Packet's tag
// limit by a hash of the whole value, so the tag stays unique and deterministic.
func boundedTag(prefix, value string) string {
	tag := prefix + value
	if len(tag) <= MaxTagLength {
		return tag
	}
	sum := sha256.Sum256([]byte(value))
	suffix := "~" + hex.EncodeToString(sum[:8])
	return tag[:MaxTagLength-len(suffix)] + suffix
}
