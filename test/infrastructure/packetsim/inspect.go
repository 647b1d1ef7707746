package packetsim

import (
	"slices"
	"strings"
)

// Inspection accessors for tests and leak checks. They return deep copies
// and are safe for concurrent use. An empty projectID means all projects.

// Devices returns the project's devices in creation order.
func (s *Server) Devices(projectID string) []Device {
	s.readLock()
	defer s.mu.RUnlock()
	var out []Device
	for _, pid := range s.projectIDs(projectID) {
		for _, id := range s.st.DeviceOrder[pid] {
			out = append(out, s.st.Devices[id].clone())
		}
	}
	return out
}

// Device returns one device.
func (s *Server) Device(id string) (Device, bool) {
	s.readLock()
	defer s.mu.RUnlock()
	d := s.st.Devices[strings.ToLower(id)]
	if d == nil {
		return Device{}, false
	}
	return d.clone(), true
}

// IPReservations returns the project's reservations (management blocks too).
func (s *Server) IPReservations(projectID string) []IPReservation {
	s.readLock()
	defer s.mu.RUnlock()
	var out []IPReservation
	for _, pid := range s.projectIDs(projectID) {
		for _, id := range s.st.IPOrder[pid] {
			out = append(out, s.st.IPReservations[id].clone())
		}
	}
	return out
}

// IPAssignments returns every assignment of the project's reservations.
func (s *Server) IPAssignments(projectID string) []IPAssignment {
	s.readLock()
	defer s.mu.RUnlock()
	var out []IPAssignment
	for _, pid := range s.projectIDs(projectID) {
		for _, id := range s.st.IPOrder[pid] {
			for _, aid := range s.st.IPReservations[id].AssignmentIDs {
				out = append(out, *s.st.IPAssignments[aid])
			}
		}
	}
	return out
}

// HardwareReservations returns the project's hardware reservations.
func (s *Server) HardwareReservations(projectID string) []HardwareReservation {
	s.readLock()
	defer s.mu.RUnlock()
	var out []HardwareReservation
	for _, pid := range s.projectIDs(projectID) {
		for _, id := range s.st.HWOrder[pid] {
			out = append(out, *s.st.HardwareReservations[id])
		}
	}
	return out
}

// BGPSessions returns the sessions of the project's devices.
func (s *Server) BGPSessions(projectID string) []BGPSession {
	s.readLock()
	defer s.mu.RUnlock()
	var out []BGPSession
	for _, bs := range s.st.BGPSessions {
		if d := s.st.Devices[bs.DeviceID]; d != nil && (projectID == "" || d.ProjectID == strings.ToLower(projectID)) {
			out = append(out, *bs)
		}
	}
	sortByCreated(out, func(b BGPSession) (string, int64) { return b.ID, b.CreatedAt.UnixNano() })
	return out
}

// BGPConfig returns the project's BGP config, if any.
func (s *Server) BGPConfig(projectID string) (BGPConfig, bool) {
	s.readLock()
	defer s.mu.RUnlock()
	c := s.st.BGPConfigs[strings.ToLower(projectID)]
	if c == nil {
		return BGPConfig{}, false
	}
	return *c, true
}

// SSHKeys returns the project's keys; projectID "" returns the user's keys.
func (s *Server) SSHKeys(projectID string) []SSHKey {
	s.readLock()
	defer s.mu.RUnlock()
	var out []SSHKey
	for _, id := range s.st.SSHKeyOrder {
		if k := s.st.SSHKeys[id]; k.ProjectID == strings.ToLower(projectID) {
			out = append(out, *k)
		}
	}
	return out
}

// VirtualNetworks returns the project's VLANs.
func (s *Server) VirtualNetworks(projectID string) []VirtualNetwork {
	s.readLock()
	defer s.mu.RUnlock()
	var out []VirtualNetwork
	for _, id := range s.st.VNOrder {
		if vn := s.st.VirtualNetworks[id]; projectID == "" || vn.ProjectID == strings.ToLower(projectID) {
			out = append(out, *vn)
		}
	}
	return out
}

// Projects returns every project.
func (s *Server) Projects() []Project {
	s.readLock()
	defer s.mu.RUnlock()
	out := make([]Project, 0, len(s.st.ProjectOrder))
	for _, id := range s.st.ProjectOrder {
		out = append(out, *s.st.Projects[id])
	}
	return out
}

// Capacity returns the on-demand servers left per metro and plan.
func (s *Server) Capacity() map[string]map[string]int {
	s.readLock()
	defer s.mu.RUnlock()
	out := map[string]map[string]int{}
	for m, plans := range s.st.Capacity {
		out[m] = map[string]int{}
		for p, n := range plans {
			out[m][p] = n
		}
	}
	return out
}

func (s *Server) projectIDs(projectID string) []string {
	if projectID == "" {
		return s.st.ProjectOrder
	}
	return []string{strings.ToLower(projectID)}
}

// LoadBalancers returns the project's load balancers in creation order, each
// with its ports, their pools (resolved from the ports' pool IDs) and the
// pools' origins.
func (s *Server) LoadBalancers(projectID string) []LoadBalancer {
	s.readLock()
	defer s.mu.RUnlock()
	var out []LoadBalancer
	for _, pid := range s.projectIDs(projectID) {
		for _, id := range s.st.LBOrder[pid] {
			lb := *s.st.LoadBalancers[id]
			lb.PortIDs, lb.Ports = slices.Clone(lb.PortIDs), nil
			for _, portID := range lb.PortIDs {
				port := *s.st.LBPorts[portID]
				port.PoolIDs = slices.Clone(port.PoolIDs)
				for _, poolID := range port.PoolIDs {
					port.Pools = append(port.Pools, s.lbPoolCopy(s.st.LBPools[poolID]))
				}
				lb.Ports = append(lb.Ports, port)
			}
			out = append(out, lb)
		}
	}
	return out
}

// LoadBalancerPools returns the project's load-balancer pools in creation
// order, with their origins.
func (s *Server) LoadBalancerPools(projectID string) []LoadBalancerPool {
	s.readLock()
	defer s.mu.RUnlock()
	var out []LoadBalancerPool
	for _, pid := range s.projectIDs(projectID) {
		for _, id := range s.st.LBPoolOrder[pid] {
			out = append(out, s.lbPoolCopy(s.st.LBPools[id]))
		}
	}
	return out
}

// lbPoolCopy under a held lock.
func (s *Server) lbPoolCopy(p *LoadBalancerPool) LoadBalancerPool {
	out := *p
	out.OriginIDs, out.Origins = slices.Clone(p.OriginIDs), nil
	for _, id := range p.OriginIDs {
		out.Origins = append(out.Origins, *s.st.LBOrigins[id])
	}
	return out
}
