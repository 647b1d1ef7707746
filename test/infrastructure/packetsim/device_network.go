package packetsim

import (
	"fmt"
	"net/http"
	"net/netip"
)

// A device's management addresses. Packet gives every layer-3 device a public IPv4, a public
// IPv6 and a private IPv4 unless the create request's ip_addresses names others: a device asked
// for only a private IPv4 has no public address at all. The private IPv4 is mandatory.

// ManagementIP is one management address a device gets when it starts provisioning.
type ManagementIP struct {
	Type string `json:"type"` // public_ipv4, public_ipv6 or private_ipv4
	CIDR int    `json:"cidr"`
}

// ipAddressRequest is one entry of ip_addresses (packngo IPAddressCreateRequest), and of
// request_ips on a conversion back to layer 3 (packngo AddressRequest).
type ipAddressRequest struct {
	AddressFamily int      `json:"address_family"`
	Public        bool     `json:"public"`
	CIDR          int      `json:"cidr"`
	Reservations  []string `json:"ip_reservations"`
}

// Subnet sizes the API accepts for a management address (the spec's 28..32 for IPv4 would
// include /32, which leaves no gateway; the simulator stops at /31).
const (
	minManagementCIDRv4, maxManagementCIDRv4 = 28, 31
	minManagementCIDRv6, maxManagementCIDRv6 = 124, 127
)

// defaultPublicIPv4CIDR is the operating system's smallest public IPv4 subnet: Packet documents
// /31 for Linux, /30 for Windows Server and /29 for VMware ESXi.
func defaultPublicIPv4CIDR(o *osEntry) int {
	switch o.Distro {
	case "windows":
		return 30
	case "vmware", "esxi":
		return 29
	}
	return 31
}

// defaultManagementIPs is what a device gets without ip_addresses.
func defaultManagementIPs(o *osEntry, publicIPv4SubnetSize int) []ManagementIP {
	v4 := defaultPublicIPv4CIDR(o)
	if publicIPv4SubnetSize != 0 {
		v4 = publicIPv4SubnetSize
	}
	return []ManagementIP{{"public_ipv4", v4}, {"public_ipv6", 127}, {"private_ipv4", 31}}
}

// planManagementIPs validates ip_addresses (or request_ips, where the private IPv4 is not
// required) and returns the addresses to give, in the order Packet lists them.
func planManagementIPs(reqs []ipAddressRequest, o *osEntry, publicIPv4SubnetSize int, needPrivate bool) ([]ManagementIP, error) {
	if publicIPv4SubnetSize != 0 && (publicIPv4SubnetSize < minManagementCIDRv4 || publicIPv4SubnetSize > maxManagementCIDRv4) {
		return nil, errorf(http.StatusUnprocessableEntity, "Public ipv4 subnet size is invalid")
	}
	if len(reqs) == 0 {
		return defaultManagementIPs(o, publicIPv4SubnetSize), nil
	}
	byType := map[string]ManagementIP{}
	for _, r := range reqs {
		if len(r.Reservations) > 0 {
			return nil, errorf(http.StatusUnprocessableEntity, "ip_reservations in ip_addresses are not supported by the simulator")
		}
		var ip ManagementIP
		switch {
		case r.AddressFamily == 4 && r.Public:
			ip = ManagementIP{"public_ipv4", defaultPublicIPv4CIDR(o)}
			if publicIPv4SubnetSize != 0 {
				ip.CIDR = publicIPv4SubnetSize
			}
		case r.AddressFamily == 4:
			ip = ManagementIP{"private_ipv4", 31}
		case r.AddressFamily == 6 && r.Public:
			ip = ManagementIP{"public_ipv6", 127}
		case r.AddressFamily == 6:
			return nil, errorf(http.StatusUnprocessableEntity, "Private IPv6 addresses are not supported")
		default:
			return nil, errorf(http.StatusUnprocessableEntity, "Address family must be 4 or 6")
		}
		if r.CIDR != 0 {
			lo, hi := minManagementCIDRv4, maxManagementCIDRv4
			if r.AddressFamily == 6 {
				lo, hi = minManagementCIDRv6, maxManagementCIDRv6
			}
			if r.CIDR < lo || r.CIDR > hi {
				return nil, errorf(http.StatusUnprocessableEntity, fmt.Sprintf("Cidr %d is not valid for IPv%d (%d..%d)", r.CIDR, r.AddressFamily, lo, hi))
			}
			ip.CIDR = r.CIDR
		}
		if _, dup := byType[ip.Type]; dup {
			return nil, errorf(http.StatusUnprocessableEntity, "Only one address of each type may be requested: "+ip.Type)
		}
		byType[ip.Type] = ip
	}
	if _, ok := byType["private_ipv4"]; needPrivate && !ok {
		return nil, errorf(http.StatusUnprocessableEntity, "A private IPv4 address is required")
	}
	var out []ManagementIP
	for _, typ := range []string{"public_ipv4", "public_ipv6", "private_ipv4"} {
		if ip, ok := byType[typ]; ok {
			out = append(out, ip)
		}
	}
	return out, nil
}

// managementSpec is where a management address comes from.
type managementSpec struct {
	typ  string
	pool string
	cidr int
}

// managementSpecs lists the management addresses a device gets, with their pools.
func (s *Server) managementSpecs(d *Device) []managementSpec {
	ips := d.ManagementIPs
	if ips == nil {
		ips = defaultManagementIPs(&osEntry{}, 0)
	}
	out := make([]managementSpec, 0, len(ips))
	for _, ip := range ips {
		pool := s.seed.IPPools.PublicIPv4
		switch ip.Type {
		case "public_ipv6":
			pool = s.seed.IPPools.PublicIPv6
		case "private_ipv4":
			pool = s.seed.IPPools.PrivateIPv4
		}
		out = append(out, managementSpec{typ: ip.Type, pool: pool, cidr: ip.CIDR})
	}
	return out
}

// hostAddress is the device's address in its management subnet: the second address of a
// point-to-point /31 or /127 (the first is the gateway), else the one after the gateway.
func hostAddress(network netip.Addr, cidr int) netip.Addr {
	if cidr >= network.BitLen()-1 {
		return addrAdd(network, 1)
	}
	return addrAdd(network, 2)
}
