package packetsim

import (
	"net/http"
	"regexp"

	"github.com/google/uuid"
)

func (s *Server) renderBGPConfig(c *BGPConfig) map[string]any {
	sessions := []any{}
	for _, bs := range s.sessionsWhere(func(bs *BGPSession) bool {
		d := s.st.Devices[bs.DeviceID]
		return d != nil && d.ProjectID == c.ProjectID
	}) {
		sessions = append(sessions, s.renderBGPSession(bs))
	}
	return map[string]any{"id": c.ID, "status": c.Status, "deployment_type": c.DeploymentType, "asn": c.ASN,
		"route_object": "", "md5": c.MD5, "max_prefix": c.MaxPrefix, "project": href{Href: apiPrefix + "/projects/" + c.ProjectID},
		"created_at": rfc3339(c.CreatedAt), "requested_at": rfc3339(c.CreatedAt), "sessions": sessions,
		"href": apiPrefix + "/bgp-configs/" + c.ID}
}

func (s *Server) renderBGPSession(bs *BGPSession) map[string]any {
	return map[string]any{"id": bs.ID, "status": bs.Status, "learned_routes": []string{}, "address_family": bs.AddressFamily,
		"device": href{Href: apiPrefix + "/devices/" + bs.DeviceID}, "href": apiPrefix + "/bgp/sessions/" + bs.ID,
		"default_route": bs.DefaultRoute, "created_at": rfc3339(bs.CreatedAt), "updated_at": rfc3339(bs.UpdatedAt)}
}

// getBGPConfig answers 200 {} when BGP is not configured: the real API does,
// and CAPP relies on it (reference section 1.9).
func (s *Server) getBGPConfig(w http.ResponseWriter, r *http.Request) {
	projectID, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.project(r, projectID); err != nil {
		s.writeError(w, err)
		return
	}
	if c := s.st.BGPConfigs[projectID]; c != nil {
		s.writeJSON(w, http.StatusOK, s.renderBGPConfig(c))
		return
	}
	s.writeBody(w, http.StatusOK, []byte("{}"))
}

// md5Pattern is the spec's rule (lower, upper, digit; 10-20 alphanumerics),
// checked by hand because Go regexps have no lookahead.
var md5Pattern = regexp.MustCompile(`^[a-zA-Z\d]{10,20}$`)

// Go's regexp has no lookahead, so the API's rule (a lower-case letter, an upper-case letter
// and a digit among 10–20 alphanumerics) is three patterns on top of md5Pattern, compiled once.
var (
	hasLower = regexp.MustCompile(`[a-z]`)
	hasUpper = regexp.MustCompile(`[A-Z]`)
	hasDigit = regexp.MustCompile(`\d`)
)

func validMD5(v string) bool {
	return md5Pattern.MatchString(v) && hasLower.MatchString(v) && hasUpper.MatchString(v) && hasDigit.MatchString(v)
}

func (s *Server) createBGPConfig(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeploymentType string `json:"deployment_type"`
		ASN            int    `json:"asn"`
		MD5            string `json:"md5"`
		UseCase        string `json:"use_case"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	projectID, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	err = func() error {
		if _, err := s.project(r, projectID); err != nil {
			return err
		}
		call := callOf(r)
		if f, ok := s.faults.take(call, FaultBGP); ok && (f.Target == "" || f.Target == "config") {
			return errorf(http.StatusUnprocessableEntity, orDefault(f.Message, "BGP config could not be created"))
		}
		if req.DeploymentType != "local" && req.DeploymentType != "global" {
			return errorf(http.StatusUnprocessableEntity, "Deployment type is not included in the list")
		}
		if req.ASN <= 0 {
			return errorf(http.StatusUnprocessableEntity, "Asn can't be blank")
		}
		if req.MD5 != "" && !validMD5(req.MD5) {
			return errorf(http.StatusUnprocessableEntity, "Md5 is invalid")
		}
		if s.st.BGPConfigs[projectID] != nil {
			return errorf(http.StatusUnprocessableEntity, "BGP config already exists for this project")
		}
		status := "enabled"
		if req.DeploymentType == "global" {
			status = "requested"
		}
		s.st.BGPConfigs[projectID] = &BGPConfig{ID: uuid.NewString(), ProjectID: projectID, Status: status, DeploymentType: req.DeploymentType,
			ASN: req.ASN, MD5: req.MD5, UseCase: req.UseCase, MaxPrefix: 10, CreatedAt: now}
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (s *Server) createBGPSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AddressFamily string `json:"address_family"`
		DefaultRoute  *bool  `json:"default_route"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		d, err := s.device(r)
		if err != nil {
			return nil, err
		}
		if req.AddressFamily != "ipv4" && req.AddressFamily != "ipv6" {
			return nil, errorf(http.StatusUnprocessableEntity, "Address family is not included in the list")
		}
		call := callOf(r)
		call.tags = d.Tags
		if f, ok := s.faults.take(call, FaultBGP); ok && (f.Target == "" || f.Target == "session") {
			return nil, errorf(http.StatusUnprocessableEntity, orDefault(f.Message, "Device "+d.ID+" "+msgBGPAlreadyHas+" for "+req.AddressFamily))
		}
		if c := s.st.BGPConfigs[d.ProjectID]; c == nil || c.Status == "disabled" {
			return nil, errorf(http.StatusUnprocessableEntity, msgBGPNotEnabled)
		}
		for _, bs := range s.st.BGPSessions {
			if bs.DeviceID == d.ID && bs.AddressFamily == req.AddressFamily {
				return nil, errorf(http.StatusUnprocessableEntity, "Device "+d.ID+" "+msgBGPAlreadyHas+" for "+req.AddressFamily)
			}
		}
		bs := &BGPSession{ID: uuid.NewString(), DeviceID: d.ID, AddressFamily: req.AddressFamily, Status: "unknown", CreatedAt: now, UpdatedAt: now}
		if d.State == StateActive {
			bs.Status = "up"
		}
		if req.DefaultRoute != nil {
			bs.DefaultRoute = *req.DefaultRoute
		}
		s.st.BGPSessions[bs.ID] = bs
		return s.renderBGPSession(bs), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

// sessionsWhere lists the kept sessions oldest first, so every listing of
// the (map-stored) sessions comes in the same order.
func (s *Server) sessionsWhere(keep func(*BGPSession) bool) []*BGPSession {
	var matched []*BGPSession
	for _, bs := range s.st.BGPSessions {
		if keep(bs) {
			matched = append(matched, bs)
		}
	}
	sortByCreated(matched, func(b *BGPSession) (string, int64) { return b.ID, b.CreatedAt.UnixNano() })
	return matched
}

func (s *Server) writeSessions(w http.ResponseWriter, r *http.Request, keep func(*BGPSession) bool) {
	matched := s.sessionsWhere(keep)
	p := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := p.window(len(matched))
	out := []any{}
	for _, bs := range matched[from:to] {
		out = append(out, s.renderBGPSession(bs))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"bgp_sessions": out, "meta": s.meta(r, p)})
}

func (s *Server) listDeviceBGPSessions(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	d, err := s.device(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeSessions(w, r, func(bs *BGPSession) bool { return bs.DeviceID == d.ID })
}

func (s *Server) listProjectBGPSessions(w http.ResponseWriter, r *http.Request) {
	projectID, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.project(r, projectID); err != nil {
		s.writeError(w, err)
		return
	}
	s.writeSessions(w, r, func(bs *BGPSession) bool {
		d := s.st.Devices[bs.DeviceID]
		return d != nil && d.ProjectID == projectID
	})
}

// listBGPNeighbors derives one neighbor per session of the device, with
// Equinix's documented local-BGP peers (bgp_neighbors.go builds them).
func (s *Server) listBGPNeighbors(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	d, err := s.device(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := []bgpNeighborJSON{}
	if _, ok := s.faults.take(callOf(r), FaultBGP); ok {
		s.writeJSON(w, http.StatusOK, map[string]any{"bgp_neighbors": out})
		return
	}
	if cfg := s.st.BGPConfigs[d.ProjectID]; cfg != nil {
		for _, bs := range s.sessionsWhere(func(bs *BGPSession) bool { return bs.DeviceID == d.ID }) {
			out = append(out, s.bgpNeighbor(cfg, d, bs))
		}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"bgp_neighbors": out})
}

func (s *Server) bgpSession(r *http.Request) (*BGPSession, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	bs := s.st.BGPSessions[id]
	if bs == nil {
		return nil, notFound()
	}
	if d := s.st.Devices[bs.DeviceID]; d == nil || !s.tokenAllows(r, d.ProjectID) {
		return nil, forbidden("BGP session")
	}
	return bs, nil
}

func (s *Server) getBGPSession(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	bs, err := s.bgpSession(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderBGPSession(bs))
}

func (s *Server) updateBGPSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DefaultRoute bool `json:"default_route"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	bs, err := s.bgpSession(r)
	var body any
	if err == nil {
		bs.DefaultRoute, bs.UpdatedAt = req.DefaultRoute, now
		body = s.renderBGPSession(bs)
	}
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) deleteBGPSession(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	bs, err := s.bgpSession(r)
	if err == nil {
		delete(s.st.BGPSessions, bs.ID)
	}
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}
