package packetsim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

type lbaasLoadBalancerJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Location  lbaasRefJSON    `json:"location"`
	IPs       []string        `json:"ips"`
	Ports     []lbaasPortJSON `json:"ports"`
	Provider  lbaasRefJSON    `json:"provider"`
	CreatedAt string          `json:"created_at"`
	UpdatedAt string          `json:"updated_at"`
}

type lbaasRefJSON struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// lbaasIDJSON is what every create, update and delete answers.
type lbaasIDJSON struct {
	ID string `json:"id"`
}

// renderLoadBalancer under a held lock.
func (s *Server) renderLoadBalancer(lb *LoadBalancer) lbaasLoadBalancerJSON {
	loc, _ := lbaasLocation(lb.LocationID)
	out := lbaasLoadBalancerJSON{ID: lb.ID, Name: lb.Name, Location: lbaasRefJSON{ID: loc.ID, Name: loc.Name},
		IPs: []string{lb.IP}, Ports: []lbaasPortJSON{}, Provider: lbaasRefJSON{ID: lb.ProviderID},
		CreatedAt: rfc3339(lb.CreatedAt), UpdatedAt: rfc3339(lb.UpdatedAt)}
	for _, id := range lb.PortIDs {
		out.Ports = append(out.Ports, renderLBPort(s.st.LBPorts[id]))
	}
	return out
}

// lbaasProject is the {id} project of a project route under a held lock:
// 404 when there is none, 403 outside the token's scope.
func (s *Server) lbaasProject(r *http.Request) (string, error) {
	id := strings.ToLower(r.PathValue("id"))
	if !isUUID(id) || s.st.Projects[id] == nil {
		return "", errorf(http.StatusNotFound, "Project "+r.PathValue("id")+" not found")
	}
	if !s.lbaasAllows(r, id) {
		return "", forbidden("project")
	}
	return id, nil
}

// loadBalancer is the {id} load balancer under a held lock. One of a
// project outside the token's scope is as unknown as one that never was.
func (s *Server) loadBalancer(r *http.Request) (*LoadBalancer, error) {
	lb := s.st.LoadBalancers[r.PathValue("id")]
	if lb == nil || !s.lbaasAllows(r, lb.ProjectID) {
		return nil, errorf(http.StatusNotFound, "Load balancer "+r.PathValue("id")+" not found")
	}
	return lb, nil
}

func (s *Server) listLoadBalancers(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	projectID, err := s.lbaasProject(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := []lbaasLoadBalancerJSON{}
	for _, id := range s.st.LBOrder[projectID] {
		out = append(out, s.renderLoadBalancer(s.st.LoadBalancers[id]))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"loadbalancers": out})
}

func (s *Server) getLoadBalancer(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	lb, err := s.loadBalancer(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderLoadBalancer(lb))
}

// createLoadBalancer gives the load balancer one public IPv4 address from the
// simulator's pool (loopback, so the boot emulation can listen on it).
func (s *Server) createLoadBalancer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name       string   `json:"name"`
		LocationID string   `json:"location_id"`
		ProviderID string   `json:"provider_id"`
		PortIDs    []string `json:"port_ids"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		projectID, err := s.lbaasProject(r)
		if err != nil {
			return nil, err
		}
		loc, ok := lbaasLocation(req.LocationID)
		switch {
		case strings.TrimSpace(req.Name) == "":
			return nil, errorf(http.StatusUnprocessableEntity, "name is required")
		case !ok:
			return nil, errorf(http.StatusUnprocessableEntity, "location_id "+req.LocationID+" is not a location of the load balancer service")
		case req.ProviderID != LBaaSProviderID:
			return nil, errorf(http.StatusUnprocessableEntity, "provider_id "+req.ProviderID+" is not a load balancer provider (want "+LBaaSProviderID+")")
		}
		lb := &LoadBalancer{ID: lbaasID("loadbal-"), ProjectID: projectID, Name: req.Name, LocationID: loc.ID, Metro: loc.Metro,
			ProviderID: req.ProviderID, PortIDs: []string{}, CreatedAt: now, UpdatedAt: now}
		ports, err := s.attachablePorts(lb, nil, req.PortIDs)
		if err != nil {
			return nil, err
		}
		addr, err := s.st.Alloc.alloc(s.seed.IPPools.PublicIPv4, 32)
		if err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, msgInsufficientIPSpace)
		}
		lb.IP = addr.String()
		for _, p := range ports {
			p.LoadBalancerID, p.UpdatedAt = lb.ID, now
			lb.PortIDs = append(lb.PortIDs, p.ID)
		}
		s.st.LoadBalancers[lb.ID] = lb
		s.st.LBOrder[projectID] = append(s.st.LBOrder[projectID], lb.ID)
		return lbaasIDJSON{ID: lb.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// attachablePorts checks that ports may join lb, beside the ports it keeps:
// ports of its project that are on no other load balancer, with numbers
// unique on it. Under a held lock.
func (s *Server) attachablePorts(lb *LoadBalancer, keep []string, ids []string) ([]*LoadBalancerPort, error) {
	numbers := map[int]bool{}
	for _, id := range keep {
		numbers[s.st.LBPorts[id].Number] = true
	}
	var out []*LoadBalancerPort
	for _, id := range ids {
		p := s.st.LBPorts[id]
		switch {
		case p == nil || p.ProjectID != lb.ProjectID:
			return nil, errorf(http.StatusUnprocessableEntity, "port "+id+" not found")
		case slices.Contains(keep, id):
			continue // already there
		case p.LoadBalancerID != "" && p.LoadBalancerID != lb.ID:
			return nil, errorf(http.StatusUnprocessableEntity, "port "+id+" belongs to another load balancer")
		case numbers[p.Number]:
			return nil, errorf(http.StatusUnprocessableEntity, "port number "+strconv.Itoa(p.Number)+" is already used on this load balancer")
		}
		numbers[p.Number] = true
		keep = append(keep, id)
		out = append(out, p)
	}
	return out, nil
}

func (s *Server) updateLoadBalancer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name          *string  `json:"name"`
		AddPortIDs    []string `json:"add_port_ids"`
		RemovePortIDs []string `json:"remove_port_ids"`
		ClearPorts    bool     `json:"clear_ports"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		lb, err := s.loadBalancer(r)
		if err != nil {
			return nil, err
		}
		if req.Name != nil && strings.TrimSpace(*req.Name) == "" {
			return nil, errorf(http.StatusUnprocessableEntity, "name is required")
		}
		keep := slices.Clone(lb.PortIDs)
		if req.ClearPorts {
			keep = nil
		}
		for _, id := range req.RemovePortIDs {
			if !slices.Contains(lb.PortIDs, id) {
				return nil, errorf(http.StatusUnprocessableEntity, "port "+id+" is not on load balancer "+lb.ID)
			}
			keep = slices.DeleteFunc(keep, func(k string) bool { return k == id })
		}
		added, err := s.attachablePorts(lb, keep, req.AddPortIDs)
		if err != nil {
			return nil, err
		}
		for _, id := range lb.PortIDs {
			if !slices.Contains(keep, id) {
				p := s.st.LBPorts[id]
				p.LoadBalancerID, p.UpdatedAt = "", now
			}
		}
		for _, p := range added {
			p.LoadBalancerID, p.UpdatedAt = lb.ID, now
			keep = append(keep, p.ID)
		}
		lb.PortIDs = append([]string{}, keep...)
		if req.Name != nil {
			lb.Name = *req.Name
		}
		lb.UpdatedAt = now
		return lbaasIDJSON{ID: lb.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// deleteLoadBalancer takes its ports along and gives its address back; pools
// are the project's and stay.
func (s *Server) deleteLoadBalancer(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	body, err := func() (any, error) {
		lb, err := s.loadBalancer(r)
		if err != nil {
			return nil, err
		}
		s.forgetLoadBalancer(lb)
		return lbaasIDJSON{ID: lb.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) forgetLoadBalancer(lb *LoadBalancer) {
	for _, id := range lb.PortIDs {
		delete(s.st.LBPorts, id)
	}
	s.st.Alloc.free(s.seed.IPPools.PublicIPv4, 32, lb.IP)
	delete(s.st.LoadBalancers, lb.ID)
	s.st.LBOrder[lb.ProjectID] = removeID(s.st.LBOrder[lb.ProjectID], lb.ID)
}
