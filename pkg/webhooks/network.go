package webhooks

import (
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// portsOfMode are the ports a VLAN can go to in each mode that carries VLANs.
var portsOfMode = map[infrav1.PortMode][]string{
	infrav1.PortModeHybrid:           {"eth1"},
	infrav1.PortModeHybridBonded:     {"bond0"},
	infrav1.PortModeLayer2Bonded:     {"bond0"},
	infrav1.PortModeLayer2Individual: {"eth0", "eth1"},
}

// validateMachineNetwork checks the combinations Packet refuses, or that leave a machine that
// cannot work: VLANs need a mode that carries them, layer-2 modes need a VLAN, and each VLAN names
// one VLAN on a port the mode has.
func validateMachineNetwork(n *infrav1.MachineNetwork, path *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	var errs field.ErrorList
	mode := n.PortModeOrDefault()
	vlansPath := path.Child("vlans")
	switch {
	case mode == infrav1.PortModeLayer3 && len(n.VLANs) > 0:
		errs = append(errs, field.Forbidden(vlansPath,
			"layer3 ports carry no VLANs: set portMode to hybrid-bonded (VLANs on bond0, addresses kept), hybrid (VLANs on eth1) or a layer2 mode"))
	case mode.Layer2() && len(n.VLANs) == 0:
		errs = append(errs, field.Required(vlansPath, fmt.Sprintf(
			"portMode %s removes the device's Packet addresses: without a VLAN it would be unreachable", mode)))
	}
	for i, v := range n.VLANs {
		p := vlansPath.Index(i)
		named := 0
		for _, set := range []bool{v.Cluster, v.ID != "", v.VXLAN != 0} {
			if set {
				named++
			}
		}
		if named != 1 {
			errs = append(errs, field.Invalid(p, fmt.Sprintf("cluster=%t id=%q vxlan=%d", v.Cluster, v.ID, v.VXLAN),
				"name exactly one VLAN: cluster: true (the PacketCluster's), id or vxlan"))
		}
		if ports, ok := portsOfMode[mode]; ok && v.Port != "" && !slices.Contains(ports, v.Port) {
			errs = append(errs, field.NotSupported(p.Child("port"), v.Port, ports))
		}
	}
	return errs
}

// validateControlPlaneNetwork keeps a control plane on layer 3: its elastic IP or BGP session
// lives there, and the layer-2 modes remove it.
func validateControlPlaneNetwork(m *infrav1.PacketMachine) field.ErrorList {
	mode := m.Spec.Network.PortModeOrDefault()
	if !isControlPlane(m.Labels) || !mode.Layer2() {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "network", "portMode"), fmt.Sprintf(
		"a control plane needs layer 3 for the cluster's elastic IP or BGP session; %s removes it: use hybrid-bonded or hybrid", mode))}
}

// validateClusterNetwork checks a PacketCluster's network: a VLAN lives in a metro, and names at
// most one existing VLAN.
func validateClusterNetwork(spec *infrav1.PacketClusterSpec, path *field.Path) field.ErrorList {
	if spec.Network == nil {
		return nil
	}
	var errs field.ErrorList
	vlan := spec.Network.VLAN
	if vlan.ID != "" && vlan.VXLAN != 0 {
		errs = append(errs, field.Invalid(path.Child("network", "vlan"), fmt.Sprintf("id=%q vxlan=%d", vlan.ID, vlan.VXLAN),
			"name the existing VLAN by id or by vxlan, not both; leave both out for a VLAN the provider creates"))
	}
	if spec.Metro == "" {
		errs = append(errs, field.Required(path.Child("metro"), "a VLAN belongs to a metro: set metro to use spec.network"))
	}
	return errs
}

// clusterNetworkChange refuses a change of spec.network: the machines' ports carry that VLAN.
func clusterNetworkChange(oldSpec, newSpec *infrav1.PacketClusterSpec, path *field.Path) field.ErrorList {
	if reflect.DeepEqual(oldSpec.Network, newSpec.Network) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path.Child("network"),
		"cannot change once the cluster exists: its machines' ports carry the VLAN; create a new cluster for another network")}
}
