package packetsim

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

type lbaasPoolJSON struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Protocol  string            `json:"protocol"`
	Origins   []lbaasOriginJSON `json:"origins"`
	CreatedAt string            `json:"created_at"`
	UpdatedAt string            `json:"updated_at"`
}

type lbaasOriginJSON struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Target     string `json:"target"`
	PortNumber int    `json:"port_number"`
	Active     bool   `json:"active"`
	PoolID     string `json:"pool_id"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
}

// renderLBPool under a held lock.
func (s *Server) renderLBPool(p *LoadBalancerPool) lbaasPoolJSON {
	out := lbaasPoolJSON{ID: p.ID, Name: p.Name, Protocol: p.Protocol, Origins: []lbaasOriginJSON{},
		CreatedAt: rfc3339(p.CreatedAt), UpdatedAt: rfc3339(p.UpdatedAt)}
	for _, id := range p.OriginIDs {
		out.Origins = append(out.Origins, renderLBOrigin(s.st.LBOrigins[id]))
	}
	return out
}

func renderLBOrigin(o *LoadBalancerOrigin) lbaasOriginJSON {
	return lbaasOriginJSON{ID: o.ID, Name: o.Name, Target: o.Target, PortNumber: o.PortNumber, Active: o.Active,
		PoolID: o.PoolID, CreatedAt: rfc3339(o.CreatedAt), UpdatedAt: rfc3339(o.UpdatedAt)}
}

// lbPool is the {id} pool under a held lock, scoped like a load balancer.
func (s *Server) lbPool(r *http.Request) (*LoadBalancerPool, error) {
	p := s.st.LBPools[r.PathValue("id")]
	if p == nil || !s.lbaasAllows(r, p.ProjectID) {
		return nil, errorf(http.StatusNotFound, "Pool "+r.PathValue("id")+" not found")
	}
	return p, nil
}

// lbOrigin is the {id} origin and its pool under a held lock.
func (s *Server) lbOrigin(r *http.Request) (*LoadBalancerOrigin, *LoadBalancerPool, error) {
	o := s.st.LBOrigins[r.PathValue("id")]
	if o == nil || !s.lbaasAllows(r, s.st.LBPools[o.PoolID].ProjectID) {
		return nil, nil, errorf(http.StatusNotFound, "Origin "+r.PathValue("id")+" not found")
	}
	return o, s.st.LBPools[o.PoolID], nil
}

func blank(name *string) error {
	if name != nil && strings.TrimSpace(*name) == "" {
		return errorf(http.StatusUnprocessableEntity, "name is required")
	}
	return nil
}

func (s *Server) listLBPools(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	projectID, err := s.lbaasProject(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := []lbaasPoolJSON{}
	for _, id := range s.st.LBPoolOrder[projectID] {
		out = append(out, s.renderLBPool(s.st.LBPools[id]))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"pools": out})
}

func (s *Server) getLBPool(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	p, err := s.lbPool(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderLBPool(p))
}

func (s *Server) createLBPool(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
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
		if err := blank(&req.Name); err != nil {
			return nil, err
		}
		if req.Protocol != "tcp" && req.Protocol != "udp" {
			return nil, errorf(http.StatusUnprocessableEntity, "protocol must be tcp or udp")
		}
		p := &LoadBalancerPool{ID: lbaasID("loadpol-"), ProjectID: projectID, Name: req.Name, Protocol: req.Protocol,
			OriginIDs: []string{}, CreatedAt: now, UpdatedAt: now}
		s.st.LBPools[p.ID] = p
		s.st.LBPoolOrder[projectID] = append(s.st.LBPoolOrder[projectID], p.ID)
		return lbaasIDJSON{ID: p.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) updateLBPool(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name *string `json:"name"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		p, err := s.lbPool(r)
		if err != nil {
			return nil, err
		}
		if err := blank(req.Name); err != nil {
			return nil, err
		}
		if req.Name != nil {
			p.Name = *req.Name
		}
		p.UpdatedAt = now
		return lbaasIDJSON{ID: p.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// deleteLBPool takes its origins along and leaves the ports that forwarded
// to it without it.
func (s *Server) deleteLBPool(w http.ResponseWriter, r *http.Request) {
	now := s.writeLock()
	body, err := func() (any, error) {
		p, err := s.lbPool(r)
		if err != nil {
			return nil, err
		}
		s.forgetLBPool(p, now)
		return lbaasIDJSON{ID: p.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) forgetLBPool(p *LoadBalancerPool, now time.Time) {
	for _, id := range p.OriginIDs {
		delete(s.st.LBOrigins, id)
	}
	for _, port := range s.st.LBPorts {
		if port.ProjectID == p.ProjectID && slices.Contains(port.PoolIDs, p.ID) {
			port.PoolIDs, port.UpdatedAt = removeID(port.PoolIDs, p.ID), now
		}
	}
	delete(s.st.LBPools, p.ID)
	s.st.LBPoolOrder[p.ProjectID] = removeID(s.st.LBPoolOrder[p.ProjectID], p.ID)
}

func (s *Server) listLBOrigins(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	p, err := s.lbPool(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"origins": s.renderLBPool(p).Origins})
}

// checkOrigin refuses a target that is not an IPv4 literal and a port
// outside 1..65535 (nil fields are left as they are).
func checkOrigin(target *string, port *int) error {
	if target != nil {
		if a, err := netip.ParseAddr(*target); err != nil || !a.Is4() {
			return errorf(http.StatusUnprocessableEntity, "target "+*target+" is not an IPv4 address")
		}
	}
	if port != nil && (*port < 1 || *port > 65535) {
		return errorf(http.StatusUnprocessableEntity, "port_number must be between 1 and 65535")
	}
	return nil
}

func (s *Server) createLBOrigin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name       string `json:"name"`
		Target     string `json:"target"`
		PortNumber int    `json:"port_number"`
		Active     bool   `json:"active"`
		PoolID     string `json:"pool_id"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		p, err := s.lbPool(r)
		if err != nil {
			return nil, err
		}
		if err := blank(&req.Name); err != nil {
			return nil, err
		}
		if err := checkOrigin(&req.Target, &req.PortNumber); err != nil {
			return nil, err
		}
		if req.PoolID != "" && req.PoolID != p.ID {
			return nil, errorf(http.StatusUnprocessableEntity, "pool_id "+req.PoolID+" is not the pool of the path, "+p.ID)
		}
		o := &LoadBalancerOrigin{ID: lbaasID("loadogn-"), PoolID: p.ID, Name: req.Name, Target: req.Target,
			PortNumber: req.PortNumber, Active: req.Active, CreatedAt: now, UpdatedAt: now}
		s.st.LBOrigins[o.ID] = o
		p.OriginIDs = append(p.OriginIDs, o.ID)
		p.UpdatedAt = now
		return lbaasIDJSON{ID: o.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) updateLBOrigin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name       *string `json:"name"`
		Target     *string `json:"target"`
		PortNumber *int    `json:"port_number"`
		Active     *bool   `json:"active"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		o, _, err := s.lbOrigin(r)
		if err != nil {
			return nil, err
		}
		if err := blank(req.Name); err != nil {
			return nil, err
		}
		if err := checkOrigin(req.Target, req.PortNumber); err != nil {
			return nil, err
		}
		if req.Name != nil {
			o.Name = *req.Name
		}
		if req.Target != nil {
			o.Target = *req.Target
		}
		if req.PortNumber != nil {
			o.PortNumber = *req.PortNumber
		}
		if req.Active != nil {
			o.Active = *req.Active
		}
		o.UpdatedAt = now
		return lbaasIDJSON{ID: o.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) deleteLBOrigin(w http.ResponseWriter, r *http.Request) {
	now := s.writeLock()
	body, err := func() (any, error) {
		o, p, err := s.lbOrigin(r)
		if err != nil {
			return nil, err
		}
		delete(s.st.LBOrigins, o.ID)
		p.OriginIDs, p.UpdatedAt = removeID(p.OriginIDs, o.ID), now
		return lbaasIDJSON{ID: o.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}
