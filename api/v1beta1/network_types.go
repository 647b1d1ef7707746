package v1beta1

// Private networking: a cluster VLAN and how each machine's ports join it. Everything here is
// optional; without it devices keep Packet's default layer-3 bonded ports with public addresses.

// PortMode is a device's network type, as Packet names it.
// +kubebuilder:validation:Enum=layer3;hybrid;hybrid-bonded;layer2-individual;layer2-bonded
type PortMode string

const (
	// PortModeLayer3 is Packet's default: bond0 bonded, layer 3, with the device's addresses.
	PortModeLayer3 PortMode = "layer3"
	// PortModeHybrid takes eth1 out of the bond for VLANs; bond0 keeps layer 3 on eth0.
	PortModeHybrid PortMode = "hybrid"
	// PortModeHybridBonded keeps bond0 bonded and layer 3 and carries VLANs on it too.
	PortModeHybridBonded PortMode = "hybrid-bonded"
	// PortModeLayer2Individual: eth0 and eth1 unbonded, layer 2 only, no Packet addresses.
	PortModeLayer2Individual PortMode = "layer2-individual"
	// PortModeLayer2Bonded: bond0 bonded, layer 2 only, no Packet addresses.
	PortModeLayer2Bonded PortMode = "layer2-bonded"
)

// ClusterNetwork is a PacketCluster's private network.
type ClusterNetwork struct {
	// vlan is the cluster's VLAN. Left empty ({}), the provider creates one in the cluster's metro,
	// described with the cluster's identity, and deletes it with the cluster; with id or vxlan it
	// uses that existing VLAN and never deletes it.
	// +required
	VLAN VLANReference `json:"vlan"`
}

// VLANReference names a VLAN (a Packet virtual network) by UUID or by VXLAN number.
type VLANReference struct {
	// id is the VLAN's UUID.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	ID string `json:"id,omitempty"`

	// vxlan is the VLAN's number, looked up in the cluster's metro.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=4094
	VXLAN int `json:"vxlan,omitempty"`
}

// MachineNetwork is how a PacketMachine's device is wired.
type MachineNetwork struct {
	// portMode is the device's network type: layer3 (the default), hybrid, hybrid-bonded,
	// layer2-individual or layer2-bonded. The layer-2 modes leave the device without Packet
	// addresses, so they need at least one VLAN and cannot carry a control plane's elastic IP.
	// +optional
	PortMode PortMode `json:"portMode,omitempty"`

	// vlans are attached to the device's ports once it is active.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	VLANs []MachineVLAN `json:"vlans,omitempty"`

	// publicIPv4 false creates the device with only a private IPv4 (and no public IPv4 or IPv6);
	// the node then reaches the control plane over the private network. Default true.
	// +optional
	PublicIPv4 *bool `json:"publicIPv4,omitempty"`
}

// MachineVLAN is one VLAN on one of the device's ports: the cluster's VLAN, or another by id or
// vxlan (exactly one of the three).
type MachineVLAN struct {
	// cluster attaches the PacketCluster's VLAN (spec.network.vlan).
	// +optional
	Cluster bool `json:"cluster,omitempty"`

	VLANReference `json:",inline"`

	// port is the port to attach to: bond0 for hybrid-bonded and layer2-bonded (the default there),
	// eth1 for hybrid (the default there), eth0 or eth1 for layer2-individual (default eth0).
	// +optional
	// +kubebuilder:validation:Enum=bond0;eth0;eth1
	Port string `json:"port,omitempty"`
}

// ClusterNetworkStatus reports the cluster's VLAN as found or created.
type ClusterNetworkStatus struct {
	// vlanID is the UUID of the cluster's VLAN.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	VLANID string `json:"vlanID,omitempty"`

	// vxlan is the cluster VLAN's number.
	// +optional
	VXLAN int `json:"vxlan,omitempty"`
}

// DefaultPort is the port a VLAN goes to in a mode when the spec names none.
func (m PortMode) DefaultPort() string {
	switch m {
	case PortModeHybrid:
		return "eth1"
	case PortModeLayer2Individual:
		return "eth0"
	default:
		return "bond0"
	}
}

// Layer2 reports whether the mode leaves the device without Packet's layer-3 addresses.
func (m PortMode) Layer2() bool {
	return m == PortModeLayer2Individual || m == PortModeLayer2Bonded
}

// PortModeOrDefault is the machine's port mode, layer3 when unset.
func (n *MachineNetwork) PortModeOrDefault() PortMode {
	if n == nil || n.PortMode == "" {
		return PortModeLayer3
	}
	return n.PortMode
}

// WantsPublicIPv4 reports whether the device gets a public IPv4 (the default).
func (n *MachineNetwork) WantsPublicIPv4() bool {
	return n == nil || n.PublicIPv4 == nil || *n.PublicIPv4
}
