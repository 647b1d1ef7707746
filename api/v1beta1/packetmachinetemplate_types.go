package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// PacketMachineTemplateSpec defines the PacketMachines that MachineDeployments and control planes
// clone from this template.
type PacketMachineTemplateSpec struct {
	// template is the PacketMachine to create.
	// +required
	Template PacketMachineTemplateResource `json:"template"`
}

// PacketMachineTemplateResource is the metadata and spec of the PacketMachine a template creates.
type PacketMachineTemplateResource struct {
	// metadata holds the labels and annotations given to the created PacketMachine.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// spec of the created PacketMachine.
	// +required
	Spec PacketMachineSpec `json:"spec"`
}

// PacketMachineTemplateStatus tells the cluster autoscaler what a machine of this template offers,
// so it can scale a node group up from zero.
type PacketMachineTemplateStatus struct {
	// capacity of a machine of this template (cpu, memory, and nvidia.com/gpu where the plan has
	// GPUs), from the plan catalogue.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// nodeInfo describes the node a machine of this template becomes.
	// +optional
	NodeInfo NodeInfo `json:"nodeInfo,omitempty,omitzero"`
}

// Architecture is a CPU architecture of a Packet plan.
// +kubebuilder:validation:Enum=amd64;arm64;s390x;ppc64le
type Architecture string

// OperatingSystem is the operating system family of a node.
// +kubebuilder:validation:Enum=linux;windows
type OperatingSystem string

// NodeInfo describes the node a machine becomes.
// +kubebuilder:validation:MinProperties=1
type NodeInfo struct {
	// architecture of the plan's CPUs.
	// +optional
	Architecture Architecture `json:"architecture,omitempty"`
	// operatingSystem of the node.
	// +optional
	OperatingSystem OperatingSystem `json:"operatingSystem,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetmachinetemplates,scope=Namespaced,categories=cluster-api,shortName=pmt
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Plan",type="string",JSONPath=".spec.template.spec.machineType",description="Packet plan"
// +kubebuilder:printcolumn:name="OS",type="string",JSONPath=".spec.template.spec.os",description="Operating system"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// PacketMachineTemplate is a template for PacketMachines.
type PacketMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +required
	Spec PacketMachineTemplateSpec `json:"spec"`
	// status reports what a machine of this template offers.
	// +optional
	Status PacketMachineTemplateStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// PacketMachineTemplateList is a list of PacketMachineTemplates.
type PacketMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketMachineTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &PacketMachineTemplate{}, &PacketMachineTemplateList{})
}
