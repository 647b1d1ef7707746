package packetsim

import (
	"fmt"
	"net/netip"
)

// A BGP neighbor is what the device's BGP speaker must be configured with:
// Equinix's routers as peers, and the routes they accept (routes_in) and
// send (routes_out). Packet sends every field; routes are never null.

type bgpNeighborJSON struct {
	AddressFamily int        `json:"address_family"`
	CustomerAS    int        `json:"customer_as"`
	CustomerIP    string     `json:"customer_ip"`
	MD5Enabled    bool       `json:"md5_enabled"`
	MD5Password   string     `json:"md5_password"`
	Multihop      bool       `json:"multihop"`
	PeerAS        int        `json:"peer_as"`
	PeerIPs       []string   `json:"peer_ips"`
	RoutesIn      []bgpRoute `json:"routes_in"`
	RoutesOut     []bgpRoute `json:"routes_out"`
}

type bgpRoute struct {
	Route string `json:"route"`
	Exact bool   `json:"exact"`
}

// localPeerAS is the ASN of Equinix's routers in local BGP.
const localPeerAS = 65530

func (s *Server) bgpNeighbor(cfg *BGPConfig, d *Device, bs *BGPSession) bgpNeighborJSON {
	n := bgpNeighborJSON{AddressFamily: 4, CustomerAS: cfg.ASN, MD5Enabled: cfg.MD5 != "", MD5Password: cfg.MD5,
		Multihop: true, PeerAS: localPeerAS, PeerIPs: []string{"169.254.255.1", "169.254.255.2"},
		RoutesIn: []bgpRoute{}, RoutesOut: []bgpRoute{}}
	// The session runs over the device's private IPv4 for IPv4 and over its
	// public IPv6 for IPv6.
	ownType, announceable := "private_ipv4", map[string]bool{"public_ipv4": true, "global_ipv4": true}
	defaultRoute := "0.0.0.0/0"
	if bs.AddressFamily == "ipv6" {
		n.AddressFamily, n.PeerIPs = 6, []string{"fc00::e", "fc00::f"}
		ownType, announceable = "public_ipv6", map[string]bool{"public_ipv6": true}
		defaultRoute = "::/0"
	}
	for _, aid := range d.IPAssignmentIDs {
		if a := s.st.IPAssignments[aid]; a != nil && a.Management && s.st.IPReservations[a.ReservationID].Type == ownType {
			n.CustomerIP = a.Address
		}
	}
	// routes_in: the project's blocks of the family the device may announce,
	// i.e. those in its metro (global addresses anywhere), never an exact match
	// so that any part of a block can be announced. The private management
	// block is not announceable.
	for _, id := range s.st.IPOrder[d.ProjectID] {
		res := s.st.IPReservations[id]
		if !announceable[res.Type] || res.Network == "" || res.State != "created" ||
			res.Type == "public_ipv4" && res.Management || res.Type != "global_ipv4" && res.Metro != d.Metro {
			continue
		}
		if addr, err := netip.ParseAddr(res.Network); err == nil {
			n.RoutesIn = append(n.RoutesIn, bgpRoute{Route: fmt.Sprintf("%s/%d", addr, res.CIDR)})
		}
	}
	// routes_out: Packet sends nothing but, when the session asks for it,
	// the default route.
	if bs.DefaultRoute {
		n.RoutesOut = append(n.RoutesOut, bgpRoute{Route: defaultRoute, Exact: true})
	}
	return n
}
