package packetsim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

type lbaasPortJSON struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Number    int      `json:"number"`
	PoolIDs   []string `json:"pool_ids"`
	CreatedAt string   `json:"created_at"`
	UpdatedAt string   `json:"updated_at"`
}

func renderLBPort(p *LoadBalancerPort) lbaasPortJSON {
	return lbaasPortJSON{ID: p.ID, Name: p.Name, Number: p.Number, PoolIDs: append([]string{}, p.PoolIDs...),
		CreatedAt: rfc3339(p.CreatedAt), UpdatedAt: rfc3339(p.UpdatedAt)}
}

// lbPort is the {id} port under a held lock, scoped like a load balancer.
func (s *Server) lbPort(r *http.Request) (*LoadBalancerPort, error) {
	p := s.st.LBPorts[r.PathValue("id")]
	if p == nil || !s.lbaasAllows(r, p.ProjectID) {
		return nil, errorf(http.StatusNotFound, "Port "+r.PathValue("id")+" not found")
	}
	return p, nil
}

// checkPortNumber refuses a number outside 1..65535 or one another port of
// the load balancer (if any) listens on. Under a held lock.
func (s *Server) checkPortNumber(lb *LoadBalancer, self string, number int) error {
	if number < 1 || number > 65535 {
		return errorf(http.StatusUnprocessableEntity, "number must be between 1 and 65535")
	}
	if lb == nil {
		return nil
	}
	for _, id := range lb.PortIDs {
		if id != self && s.st.LBPorts[id].Number == number {
			return errorf(http.StatusUnprocessableEntity, "port number "+strconv.Itoa(number)+" is already used on this load balancer")
		}
	}
	return nil
}

// checkPools refuses pools that are not the project's. Under a held lock.
func (s *Server) checkPools(projectID string, ids []string) error {
	for _, id := range ids {
		if p := s.st.LBPools[id]; p == nil || p.ProjectID != projectID {
			return errorf(http.StatusUnprocessableEntity, "pool "+id+" not found")
		}
	}
	return nil
}

func (s *Server) listLBPorts(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	lb, err := s.loadBalancer(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := []lbaasPortJSON{}
	for _, id := range lb.PortIDs {
		out = append(out, renderLBPort(s.st.LBPorts[id]))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"ports": out})
}

func (s *Server) getLBPortByNumber(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	lb, err := s.loadBalancer(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	number, _ := strconv.Atoi(r.PathValue("number"))
	for _, id := range lb.PortIDs {
		if p := s.st.LBPorts[id]; p.Number == number {
			s.writeJSON(w, http.StatusOK, renderLBPort(p))
			return
		}
	}
	s.writeError(w, errorf(http.StatusNotFound, "Port "+r.PathValue("number")+" not found on load balancer "+lb.ID))
}

func (s *Server) createLBPort(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name    string   `json:"name"`
		Number  int      `json:"number"`
		PoolIDs []string `json:"pool_ids"`
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
		if err := s.checkPortNumber(lb, "", req.Number); err != nil {
			return nil, err
		}
		if err := s.checkPools(lb.ProjectID, req.PoolIDs); err != nil {
			return nil, err
		}
		p := &LoadBalancerPort{ID: lbaasID("loadprt-"), ProjectID: lb.ProjectID, LoadBalancerID: lb.ID, Name: req.Name,
			Number: req.Number, PoolIDs: dedupe(req.PoolIDs), CreatedAt: now, UpdatedAt: now}
		s.st.LBPorts[p.ID] = p
		lb.PortIDs = append(lb.PortIDs, p.ID)
		lb.UpdatedAt = now
		return lbaasIDJSON{ID: p.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) updateLBPort(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name          *string  `json:"name"`
		Number        *int     `json:"number"`
		AddPoolIDs    []string `json:"add_pool_ids"`
		RemovePoolIDs []string `json:"remove_pool_ids"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		p, err := s.lbPort(r)
		if err != nil {
			return nil, err
		}
		if req.Number != nil {
			if err := s.checkPortNumber(s.st.LoadBalancers[p.LoadBalancerID], p.ID, *req.Number); err != nil {
				return nil, err
			}
		}
		if err := s.checkPools(p.ProjectID, req.AddPoolIDs); err != nil {
			return nil, err
		}
		if req.Name != nil {
			p.Name = *req.Name
		}
		if req.Number != nil {
			p.Number = *req.Number
		}
		p.PoolIDs = slices.DeleteFunc(dedupe(append(p.PoolIDs, req.AddPoolIDs...)), func(id string) bool {
			return slices.Contains(req.RemovePoolIDs, id)
		})
		p.UpdatedAt = now
		return lbaasIDJSON{ID: p.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) deleteLBPort(w http.ResponseWriter, r *http.Request) {
	now := s.writeLock()
	body, err := func() (any, error) {
		p, err := s.lbPort(r)
		if err != nil {
			return nil, err
		}
		if lb := s.st.LoadBalancers[p.LoadBalancerID]; lb != nil {
			lb.PortIDs = removeID(lb.PortIDs, p.ID)
			lb.UpdatedAt = now
		}
		delete(s.st.LBPorts, p.ID)
		return lbaasIDJSON{ID: p.ID}, nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// dedupe keeps the first of each ID, in order, and never returns nil (the
// service renders an empty list as []).
func dedupe(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
