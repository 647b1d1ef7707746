package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ExposeInUserDataAnnotation, "true" on a credentials Secret, is its owner's consent to have its
// key put in control planes' user-data (spec.exposeAPIKeyInUserData), where whoever reads the
// devices' metadata reads it. Whoever may write a PacketCluster may name any Secret of the
// namespace, including one they may not read; the annotation is the Secret's owner's say.
const ExposeInUserDataAnnotation = "packetcluster.infrastructure.cluster.x-k8s.io/expose-in-user-data"

// PacketClusterFinalizer lets the controller release the cluster's Packet resources before the
// PacketCluster is removed.
const PacketClusterFinalizer = "packetcluster.infrastructure.cluster.x-k8s.io"

// DefaultAPIServerPort is the control-plane endpoint's port when the user sets none.
const DefaultAPIServerPort int32 = 6443

// VIPManagerType names who keeps the control-plane endpoint pointed at a healthy control plane.
// +kubebuilder:validation:Enum=CPEM;KUBE_VIP;EMLB
type VIPManagerType string

const (
	// CPEMVIPManager: the cluster's elastic IP is moved between control planes by the
	// Cloud Provider for Equinix Metal running in the workload cluster.
	CPEMVIPManager VIPManagerType = "CPEM"
	// KubeVIPVIPManager: kube-vip announces the elastic IP over BGP from the control planes.
	KubeVIPVIPManager VIPManagerType = "KUBE_VIP"
	// EMLBVIPManager: an Equinix Metal Load Balancer fronts the control planes; its address is the
	// endpoint and every control plane is one of its origins. Needs a metro with load balancers.
	EMLBVIPManager VIPManagerType = "EMLB"
)

// ElasticIPReclaimPolicy says what happens to the control-plane elastic IP when the cluster goes away.
// +kubebuilder:validation:Enum=Delete;Retain
type ElasticIPReclaimPolicy string

const (
	// ElasticIPReclaimDelete releases the reservation when the PacketCluster is deleted.
	ElasticIPReclaimDelete ElasticIPReclaimPolicy = "Delete"
	// ElasticIPReclaimRetain keeps the reservation (and its address) in the project.
	ElasticIPReclaimRetain ElasticIPReclaimPolicy = "Retain"
)

// PacketClusterSpec defines the desired state of a PacketCluster.
// Every field and JSON key of the previous provider's v1beta1 API is kept.
type PacketClusterSpec struct {
	// projectID is the Packet project in which every device and IP of the cluster lives.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ProjectID string `json:"projectID"`

	// metro is the Packet metro (for example "da" or "sv") the cluster lives in. Preferred over facility.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Metro string `json:"metro,omitempty"`

	// facility is the Packet facility (for example "da11") the cluster lives in.
	//
	// Deprecated: facilities are being retired by Packet; use metro.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Facility string `json:"facility,omitempty"`

	// controlPlaneEndpoint is the endpoint used to reach the control plane. The controller fills it
	// with the reserved elastic IP (EMLB: the load balancer's address) and port 6443; a host set by
	// the user is honoured and nothing is reserved for it (EMLB: the project's load balancer that
	// holds that address is adopted).
	// +optional
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	// vipManager says who keeps the control-plane endpoint pointed at a healthy control plane.
	// +optional
	// +kubebuilder:default=CPEM
	VIPManager VIPManagerType `json:"vipManager,omitempty"`

	// credentialsRef names a Secret in the PacketCluster's namespace that holds the Packet API key
	// under the key "apiKey" (and, for KUBE_VIP, an optional BGP MD5 password under "bgpPassword").
	// When unset the manager's own credentials are used.
	// +optional
	CredentialsRef *SecretReference `json:"credentialsRef,omitempty"`

	// elasticIPReclaimPolicy says whether the control-plane elastic IP (EMLB: the load balancer,
	// its port and pool) is released (Delete, the default) or kept (Retain) when the cluster is
	// deleted.
	// +optional
	// +kubebuilder:default=Delete
	ElasticIPReclaimPolicy ElasticIPReclaimPolicy `json:"elasticIPReclaimPolicy,omitempty"`

	// bgp configures the project's BGP for the KUBE_VIP manager.
	// +optional
	BGP *BGPSpec `json:"bgp,omitempty"`

	// exposeAPIKeyInUserData makes the API key available to bootstrap data templates as
	// {{ .apiKey }}, as the previous provider did for every control plane. It puts the key in the
	// device's user-data, readable from the device's metadata service; leave it off and deliver the
	// key to the workload cluster as a Secret instead.
	// +optional
	ExposeAPIKeyInUserData bool `json:"exposeAPIKeyInUserData,omitempty"`

	// network is the cluster's private network: a VLAN that machines can attach their ports to
	// (PacketMachine spec.network.vlans with cluster: true).
	// +optional
	Network *ClusterNetwork `json:"network,omitempty"`
}

// SecretReference names a Secret in the same namespace as the referring object.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BGPSpec configures the project-level BGP used by kube-vip.
type BGPSpec struct {
	// localASN is the ASN the cluster's devices announce from. Defaults to the manager's
	// --bgp-local-asn flag (65000).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	LocalASN int64 `json:"localASN,omitempty"`
}

// PacketClusterStatus defines the observed state of a PacketCluster.
type PacketClusterStatus struct {
	// initialization reports when the cluster's infrastructure is provisioned (Cluster API contract).
	// +optional
	Initialization PacketClusterInitializationStatus `json:"initialization,omitempty,omitzero"`

	// conditions describe the current state of the PacketCluster. Ready summarises the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// failureDomains are the facilities of the cluster's metro that Cluster API may spread
	// machines over.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []clusterv1.FailureDomain `json:"failureDomains,omitempty"`

	// network reports the cluster's VLAN once it is found or created.
	// +optional
	Network *ClusterNetworkStatus `json:"network,omitempty"`
}

// PacketClusterInitializationStatus reports the initialization steps of a PacketCluster.
// +kubebuilder:validation:MinProperties=1
type PacketClusterInitializationStatus struct {
	// provisioned is true once the control-plane endpoint is known and the cluster's
	// infrastructure is ready for machines.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetclusters,scope=Namespaced,categories=cluster-api,shortName=pcl
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this PacketCluster belongs"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.controlPlaneEndpoint.host",description="Control-plane endpoint host"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned",description="Infrastructure is ready for machines"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Ready condition"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Metro",type="string",JSONPath=".spec.metro",description="Metro of the cluster",priority=1
// +kubebuilder:printcolumn:name="Facility",type="string",JSONPath=".spec.facility",description="Facility of the cluster (deprecated)",priority=1
// +kubebuilder:printcolumn:name="VIP Manager",type="string",JSONPath=".spec.vipManager",description="What moves the control-plane endpoint",priority=1
// +kubebuilder:printcolumn:name="Project",type="string",JSONPath=".spec.projectID",description="Packet project",priority=1

// PacketCluster is the Packet infrastructure of a Cluster API Cluster: its project, location and
// control-plane endpoint.
type PacketCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the PacketCluster.
	// +required
	Spec PacketClusterSpec `json:"spec"`
	// status is the observed state of the PacketCluster.
	// +optional
	Status PacketClusterStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the PacketCluster (Cluster API conditions.Getter).
func (c *PacketCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions of the PacketCluster (Cluster API conditions.Setter).
func (c *PacketCluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// PacketClusterList is a list of PacketClusters.
type PacketClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketCluster `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &PacketCluster{}, &PacketClusterList{})
}
