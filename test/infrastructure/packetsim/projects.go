package packetsim

import (
	"net/http"
	"sort"
)

type projectJSON struct {
	ID                     string         `json:"id"`
	Name                   string         `json:"name"`
	Href                   string         `json:"href"`
	CreatedAt              string         `json:"created_at"`
	UpdatedAt              string         `json:"updated_at"`
	Organization           href           `json:"organization"`
	PaymentMethod          href           `json:"payment_method"`
	Members                []href         `json:"members"`
	Devices                []href         `json:"devices"`
	SSHKeys                []href         `json:"ssh_keys"`
	BackendTransferEnabled bool           `json:"backend_transfer_enabled"`
	MaxDevices             map[string]int `json:"max_devices,omitempty"`
	Customdata             map[string]any `json:"customdata"`
	Tags                   []string       `json:"tags"`
	Type                   string         `json:"type"`
}

// renderProject keeps members/devices/ssh_keys empty: listing every device
// of a big project inside the project would make GET /projects/{id} huge.
func (s *Server) renderProject(p *Project) projectJSON {
	out := projectJSON{ID: p.ID, Name: p.Name, Href: apiPrefix + "/projects/" + p.ID, CreatedAt: rfc3339(p.CreatedAt),
		UpdatedAt: rfc3339(p.UpdatedAt), Organization: href{Href: apiPrefix + "/organizations/" + stableID("organization", "sim")},
		PaymentMethod: href{Href: apiPrefix + "/payment-methods/" + stableID("payment-method", "sim")},
		Members:       []href{{Href: apiPrefix + "/users/" + s.seed.User.ID}}, Devices: []href{}, SSHKeys: []href{},
		Customdata: map[string]any{}, Tags: []string{}, Type: "default"}
	if p.MaxDevices > 0 {
		out.MaxDevices = map[string]int{"total": p.MaxDevices}
	}
	return out
}

func (s *Server) renderUser() map[string]any {
	u := s.seed.User
	return map[string]any{"id": u.ID, "short_id": u.ID[:8], "first_name": u.FirstName, "last_name": u.LastName,
		"full_name": u.FirstName + " " + u.LastName, "email": u.Email, "href": apiPrefix + "/users/" + u.ID,
		"created_at": rfc3339(s.st.Projects[s.st.ProjectOrder[0]].CreatedAt), "default_project_id": s.st.ProjectOrder[0],
		"customdata": map[string]any{}}
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	u := s.renderUser()
	s.mu.RUnlock()
	s.writeJSON(w, http.StatusOK, u)
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	var visible []*Project
	for _, id := range s.st.ProjectOrder {
		if s.tokenAllows(r, id) {
			visible = append(visible, s.st.Projects[id])
		}
	}
	p := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := p.window(len(visible))
	out := make([]projectJSON, 0, to-from)
	for _, pr := range visible[from:to] {
		out = append(out, s.renderProject(pr))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"projects": out, "meta": s.meta(r, p)})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	p, err := s.readProject(r, r.PathValue("id"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.mu.RLock()
	body := s.renderProject(p)
	s.mu.RUnlock()
	s.writeJSON(w, http.StatusOK, body)
}

// writeEvents writes a paginated, newest-first event list. Caller holds a lock.
func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, events []Event, deviceID string) {
	sorted := append([]Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreatedAt.After(sorted[j].CreatedAt) })
	p := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := p.window(len(sorted))
	out := make([]eventJSON, 0, to-from)
	for _, ev := range sorted[from:to] {
		out = append(out, renderEvent(ev, deviceID))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"events": out, "meta": s.meta(r, p)})
}

// listProjectEvents merges the events of the project's devices with the
// project's own (device deletions).
func (s *Server) listProjectEvents(w http.ResponseWriter, r *http.Request) {
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
	events := append([]Event(nil), s.st.ProjectEvents[projectID]...)
	for _, id := range s.st.DeviceOrder[projectID] {
		events = append(events, s.st.Devices[id].Events...)
	}
	s.writeEvents(w, r, events, "")
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.readLock()
	defer s.mu.RUnlock()
	for _, d := range s.st.Devices {
		for _, ev := range d.Events {
			if ev.ID == id && s.tokenAllows(r, d.ProjectID) {
				s.writeJSON(w, http.StatusOK, renderEvent(ev, d.ID))
				return
			}
		}
	}
	s.writeError(w, notFound())
}
