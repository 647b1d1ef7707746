package bootemu

import (
	"net"
	"net/netip"
	"strconv"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// loadBalancerOf returns the project's load balancer (of Packet's load-balancer service) whose
// address is the endpoint's host, if there is one.
func (e *Emulator) loadBalancerOf(projectID, address string) (packetsim.LoadBalancer, bool) {
	for _, lb := range e.sim.LoadBalancers(projectID) {
		if lb.IP == address {
			return lb, true
		}
	}
	return packetsim.LoadBalancer{}, false
}

// balanced reports whether the load balancer delivers the endpoint to a live control plane: it
// has a port on the endpoint's port, with a pool holding an active origin that names a public
// address of a live control plane and the port its API server binds. Origins that point at a
// dead host, a private address or another port reach nothing, as they would on Packet.
func (e *Emulator) balanced(lb packetsim.LoadBalancer, c *workloadCluster, live []*host) bool {
	_, port, _ := net.SplitHostPort(c.endpoint)
	backends := e.apiServers(live)
	for _, p := range lb.Ports {
		if strconv.Itoa(p.Number) != port {
			continue
		}
		for _, pool := range p.Pools {
			for _, o := range pool.Origins {
				if o.Active && backends[net.JoinHostPort(o.Target, strconv.Itoa(o.PortNumber))] {
					return true
				}
			}
		}
	}
	return false
}

// apiServers are the address:port pairs a load balancer reaches the hosts' API servers on: each
// public IPv4 address of a host with its API server's bind port.
func (e *Emulator) apiServers(hosts []*host) map[string]bool {
	out := map[string]bool{}
	if len(hosts) == 0 {
		return out
	}
	byDevice := map[string]*host{}
	for _, h := range hosts {
		byDevice[h.deviceID] = h
	}
	projectID := hosts[0].projectID
	private := map[string]bool{}
	for _, r := range e.sim.IPReservations(projectID) {
		private[r.ID] = r.Type == "private_ipv4"
	}
	for _, a := range e.sim.IPAssignments(projectID) {
		h := byDevice[a.DeviceID]
		addr, err := netip.ParseAddr(a.Address)
		if h == nil || private[a.ReservationID] || err != nil || !addr.Is4() {
			continue
		}
		out[net.JoinHostPort(a.Address, strconv.Itoa(h.boot.BindPort))] = true
	}
	return out
}
