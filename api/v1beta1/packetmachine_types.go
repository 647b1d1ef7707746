package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// PacketMachineFinalizer lets the controller delete the machine's device before the PacketMachine
// is removed.
const PacketMachineFinalizer = "packetmachine.infrastructure.cluster.x-k8s.io"

// ProviderIDPrefix is the scheme of the provider IDs the Cloud Provider for Equinix Metal gives
// Nodes: equinixmetal://<device UUID>.
const ProviderIDPrefix = "equinixmetal://"

// NextAvailableHardwareReservation asks Packet for any free hardware reservation of the plan.
const NextAvailableHardwareReservation = "next-available"

// CustomIPXEOS is the operating system slug that boots a device from spec.ipxeURL.
const CustomIPXEOS = "custom_ipxe"

// AllowSpotControlPlaneAnnotation, set to "true" on a control-plane PacketMachine (or in its
// template's metadata), lets it run on the spot market. Without it spot control planes are
// refused: losing several at once to one price rise loses etcd quorum.
const AllowSpotControlPlaneAnnotation = "packetmachine.infrastructure.cluster.x-k8s.io/allow-spot-control-plane"

// MachineIdentityAnnotation holds the random identity of a PacketMachine's device, written
// before the first create and tagged on the device (capp:machine:<identity>). Unlike the UID it
// moves with the object under clusterctl move, and unlike the name it never matches a later
// PacketMachine of the same name. The provider writes it; a template may not carry it.
const MachineIdentityAnnotation = "packetmachine.infrastructure.cluster.x-k8s.io/device-identity"

// PacketMachineSpec defines the desired state of a PacketMachine: the device to create.
// Every field and JSON key of the previous provider's v1beta1 API is kept.
type PacketMachineSpec struct {
	// os is the operating system slug (for example "ubuntu_24_04", or "custom_ipxe" with ipxeURL).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	OS string `json:"os"`

	// billingCycle of the device.
	// +optional
	// +kubebuilder:validation:Enum=hourly;daily;monthly;yearly
	BillingCycle string `json:"billingCycle,omitempty"`

	// machineType is the Packet plan slug (for example "c3.small.x86").
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	MachineType string `json:"machineType"`

	// sshKeys are given access to the device. An entry that is a UUID names an existing project SSH
	// key; any other entry is a public key, registered once as a project SSH key.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=16384
	SSHKeys []string `json:"sshKeys,omitempty"`

	// facility overrides the cluster's location for this machine.
	//
	// Deprecated: facilities are being retired by Packet; use metro.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Facility string `json:"facility,omitempty"`

	// metro overrides the cluster's location for this machine.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Metro string `json:"metro,omitempty"`

	// ipxeURL is the iPXE script the device boots from; only with os "custom_ipxe".
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	IPXEUrl string `json:"ipxeURL,omitempty"`

	// alwaysPXE makes the device boot from iPXE on every boot, not only the first.
	// +optional
	AlwaysPXE bool `json:"alwaysPXE,omitempty"`

	// hardwareReservationID is a hardware reservation UUID, a comma-separated list of them tried in
	// order, or "next-available" for any free reservation of the plan.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	HardwareReservationID string `json:"hardwareReservationID,omitempty"`

	// providerID is set by the controller to equinixmetal://<device UUID> once the device exists.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// tags are added to the device next to the provider's own identity tags.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=255
	Tags []string `json:"tags,omitempty"`

	// customData is free-form JSON passed to the device as Packet customdata, readable from the
	// device's metadata service.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	CustomData *apiextensionsv1.JSON `json:"customData,omitempty"`

	// spotInstance buys the device on Packet's spot market: cheaper, but Packet reclaims it, with
	// about two minutes' notice, when the market price rises above spotPriceMax. The machine
	// reports itself interruptible, so Cluster API labels its Node cluster.x-k8s.io/interruptible;
	// a MachineHealthCheck replaces a reclaimed machine. Not on hardware reservations.
	// +optional
	SpotInstance bool `json:"spotInstance,omitempty"`

	// spotPriceMax is the most the device may cost an hour on the spot market, in US dollars
	// (for example "0.50"). Required with spotInstance.
	// +optional
	SpotPriceMax *resource.Quantity `json:"spotPriceMax,omitempty"`

	// network wires the device's ports: port mode, VLANs, and whether it has a public IPv4.
	// +optional
	Network *MachineNetwork `json:"network,omitempty"`

	// storage lays out the device's disks at creation: partitions, software RAID and
	// filesystems, in Packet's custom partitioning and RAID shape (docs/storage.md). Without it
	// Packet installs the operating system on its default layout of the plan.
	// +optional
	Storage *Storage `json:"storage,omitempty"`
}

// PacketMachineStatus defines the observed state of a PacketMachine.
type PacketMachineStatus struct {
	// initialization reports when the device is provisioned (Cluster API contract).
	// +optional
	Initialization PacketMachineInitializationStatus `json:"initialization,omitempty,omitzero"`

	// addresses of the device: public IPs as ExternalIP, private as InternalIP, and its hostname.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`

	// instanceStatus is the device's state as Packet reports it (queued, provisioning, active, ...).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	InstanceStatus string `json:"instanceStatus,omitempty"`

	// hardwareReservationID is the hardware reservation the device actually runs on.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	HardwareReservationID string `json:"hardwareReservationID,omitempty"`

	// interruptible is true for a spot device, which Packet may reclaim at any time (Cluster API
	// contract: the Node is labelled cluster.x-k8s.io/interruptible).
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`

	// failureDomain is the facility the device landed in.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// deviceDeletionRequestedAt is when the provider asked Packet to delete the device: how long
	// it has been deprovisioning, and whether to ask again.
	// +optional
	DeviceDeletionRequestedAt *metav1.Time `json:"deviceDeletionRequestedAt,omitempty"`

	// conditions describe the current state of the PacketMachine. Ready summarises the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PacketMachineInitializationStatus reports the initialization steps of a PacketMachine.
// +kubebuilder:validation:MinProperties=1
type PacketMachineInitializationStatus struct {
	// provisioned is true once the device is active and reported to Cluster API.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetmachines,scope=Namespaced,categories=cluster-api,shortName=pma
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this PacketMachine belongs"
// +kubebuilder:printcolumn:name="State",type="string",JSONPath=".status.instanceStatus",description="Packet device state"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned",description="Device is provisioned"
// +kubebuilder:printcolumn:name="ProviderID",type="string",JSONPath=".spec.providerID",description="Packet device"
// +kubebuilder:printcolumn:name="Machine",type="string",JSONPath=".metadata.ownerReferences[?(@.kind==\"Machine\")].name",description="Machine that owns this PacketMachine"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Plan",type="string",JSONPath=".spec.machineType",description="Packet plan",priority=1
// +kubebuilder:printcolumn:name="Facility",type="string",JSONPath=".status.failureDomain",description="Facility the device runs in",priority=1
// +kubebuilder:printcolumn:name="Address",type="string",JSONPath=`.status.addresses[?(@.type=="ExternalIP")].address`,description="Public addresses of the device",priority=1
// +kubebuilder:printcolumn:name="Spot",type="boolean",JSONPath=".status.interruptible",description="Spot-market device, which Packet may reclaim",priority=1
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=`.status.conditions[?(@.type=="DeviceReady")].reason`,description="Why the device is (not) ready",priority=1

// PacketMachine is the Packet device behind a Cluster API Machine.
type PacketMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the PacketMachine.
	// +required
	Spec PacketMachineSpec `json:"spec"`
	// status is the observed state of the PacketMachine.
	// +optional
	Status PacketMachineStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the PacketMachine (Cluster API conditions.Getter).
func (m *PacketMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions of the PacketMachine (Cluster API conditions.Setter).
func (m *PacketMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// PacketMachineList is a list of PacketMachines.
type PacketMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketMachine `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &PacketMachine{}, &PacketMachineList{})
}
