package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// PacketClusterTemplateSpec defines the PacketCluster a ClusterClass stamps out.
type PacketClusterTemplateSpec struct {
	// template is the PacketCluster to create.
	// +required
	Template PacketClusterTemplateResource `json:"template"`
}

// PacketClusterTemplateResource is the metadata and spec of the PacketCluster a template creates.
type PacketClusterTemplateResource struct {
	// metadata holds the labels and annotations given to the created PacketCluster.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// spec of the created PacketCluster.
	// +required
	Spec PacketClusterSpec `json:"spec"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetclustertemplates,scope=Namespaced,categories=cluster-api,shortName=pclt
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// PacketClusterTemplate is a template for PacketClusters, used by ClusterClass.
type PacketClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +required
	Spec PacketClusterTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// PacketClusterTemplateList is a list of PacketClusterTemplates.
type PacketClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketClusterTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &PacketClusterTemplate{}, &PacketClusterTemplateList{})
}
