package packetsim

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// maxProjectName is Packet's limit on a project's name.
const maxProjectName = 80

type projectJSON struct {
	ID                     string         `json:"id"`
	Name                   string         `json:"name"`
	Href                   string         `json:"href"`
	CreatedAt              string         `json:"created_at"`
	UpdatedAt              string         `json:"updated_at"`
	Organization           any            `json:"organization"`
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

// renderProject keeps devices and ssh_keys empty: listing every device of a
// big project inside the project would make GET /projects/{id} huge. The
// organization is a reference unless included, as Packet renders it.
// Caller holds a lock.
func (s *Server) renderProject(p *Project, inc includes) projectJSON {
	org := s.st.Organizations[p.OrganizationID]
	var orgJSON any = href{Href: apiPrefix + "/organizations/" + p.OrganizationID}
	if inc.has("organization") && org != nil {
		orgJSON = s.renderOrganization(org, includes{})
	}
	paymentMethod := p.PaymentMethodID
	if paymentMethod == "" && org != nil {
		paymentMethod = org.PaymentMethodID
	}
	out := projectJSON{ID: p.ID, Name: p.Name, Href: apiPrefix + "/projects/" + p.ID, CreatedAt: rfc3339(p.CreatedAt),
		UpdatedAt: rfc3339(p.UpdatedAt), Organization: orgJSON,
		PaymentMethod: href{Href: apiPrefix + "/payment-methods/" + paymentMethod},
		Members:       []href{{Href: apiPrefix + "/users/" + s.st.User.ID}}, Devices: []href{}, SSHKeys: []href{},
		BackendTransferEnabled: p.BackendTransfer, Customdata: map[string]any{}, Tags: []string{}, Type: "default"}
	if p.MaxDevices > 0 {
		out.MaxDevices = map[string]int{"total": p.MaxDevices}
	}
	return out
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
	inc := s.parseIncludes(r.URL.Query())
	out := make([]projectJSON, 0, to-from)
	for _, pr := range visible[from:to] {
		out = append(out, s.renderProject(pr, inc))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"projects": out, "meta": s.meta(r, p)})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	p, err := s.pathProject(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderProject(p, s.parseIncludes(r.URL.Query())))
}

// pathProject is the {id} project under a held lock.
func (s *Server) pathProject(r *http.Request) (*Project, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	return s.project(r, id)
}

// projectRequest is packngo's ProjectCreateRequest and ProjectUpdateRequest.
type projectRequest struct {
	Name            *string `json:"name"`
	OrganizationID  *string `json:"organization_id"`
	PaymentMethodID *string `json:"payment_method_id"`
	BackendTransfer *bool   `json:"backend_transfer_enabled"`
}

func validProjectName(name *string) error {
	switch {
	case name == nil || strings.TrimSpace(*name) == "":
		return errorf(http.StatusUnprocessableEntity, "Name can't be blank")
	case len(*name) > maxProjectName:
		return errorf(http.StatusUnprocessableEntity, "Name is too long (maximum is 80 characters)")
	}
	return nil
}

// paymentMethodOf checks that a requested payment method is the
// organization's, the only one a project of it can be billed to.
func paymentMethodOf(org *Organization, requested *string) (string, error) {
	if requested == nil || *requested == "" {
		return "", nil
	}
	if !strings.EqualFold(*requested, org.PaymentMethodID) {
		return "", errorf(http.StatusUnprocessableEntity, "Payment method is not valid for this organization")
	}
	return org.PaymentMethodID, nil
}

// createProject creates a project in the requested organization or the
// user's default one. Project API keys cannot create projects.
func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	var req projectRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		if !s.tokenIsUserLevel(r) {
			return nil, notAllowed("project")
		}
		if err := validProjectName(req.Name); err != nil {
			return nil, err
		}
		orgID := s.st.User.DefaultOrganizationID
		if req.OrganizationID != nil && *req.OrganizationID != "" {
			orgID = strings.ToLower(*req.OrganizationID)
		}
		org := s.st.Organizations[orgID]
		if org == nil {
			return nil, errorf(http.StatusUnprocessableEntity, "Organization not found")
		}
		paymentMethod, err := paymentMethodOf(org, req.PaymentMethodID)
		if err != nil {
			return nil, err
		}
		p := &Project{ID: uuid.NewString(), Name: *req.Name, OrganizationID: org.ID, PaymentMethodID: paymentMethod,
			PublicIPv4Quota: 64, CreatedAt: now, UpdatedAt: now}
		if req.BackendTransfer != nil {
			p.BackendTransfer = *req.BackendTransfer
		}
		s.st.addProject(p)
		s.addProjectEvent(p.ID, "project.created", "Project "+p.Name+" created", now)
		return s.renderProject(p, includes{}), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) {
	var req projectRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		p, err := s.pathProject(r)
		if err != nil {
			return nil, err
		}
		if req.Name != nil {
			if err := validProjectName(req.Name); err != nil {
				return nil, err
			}
			p.Name = *req.Name
		}
		if req.PaymentMethodID != nil {
			if p.PaymentMethodID, err = paymentMethodOf(s.st.Organizations[p.OrganizationID], req.PaymentMethodID); err != nil {
				return nil, err
			}
		}
		if req.BackendTransfer != nil {
			p.BackendTransfer = *req.BackendTransfer
		}
		p.UpdatedAt = now
		s.addProjectEvent(p.ID, "project.updated", "Project "+p.Name+" updated", now)
		return s.renderProject(p, includes{}), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// deleteProject refuses while the project holds anything billed or
// contracted (devices, hardware reservations, elastic IPs, VLANs, load
// balancers), so a
// test that forgot one learns it; the rest goes with the project.
func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	err := func() error {
		p, err := s.pathProject(r)
		if err != nil {
			return err
		}
		if !s.tokenIsUserLevel(r) {
			return forbidden("project")
		}
		s.emptyProject(p.ID)
		s.forgetProject(p.ID)
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

// emptyProject deletes what a project holds, as Packet does when the project is deleted (the
// spec's deleteProject answers 204, never a refusal for what is inside): its devices go at once
// (their addresses, BGP sessions and reservations' hold released), then its load balancers and
// VLANs. Its IP reservations and the rest go with forgetProject.
func (s *Server) emptyProject(id string) {
	for _, did := range append([]string(nil), s.st.DeviceOrder[id]...) {
		if d := s.st.Devices[did]; d != nil {
			s.removeDevice(d, s.st.Now)
		}
	}
	for _, lid := range append([]string(nil), s.st.LBOrder[id]...) {
		if lb := s.st.LoadBalancers[lid]; lb != nil {
			s.forgetLoadBalancer(lb)
		}
	}
	for _, vid := range append([]string(nil), s.st.VNOrder...) {
		if s.st.VirtualNetworks[vid].ProjectID == id {
			delete(s.st.VirtualNetworks, vid)
			s.st.VNOrder = removeID(s.st.VNOrder, vid)
		}
	}
}

// forgetProject drops an emptied project and what only it used: its
// management blocks (their addresses go back to the pools), SSH keys, BGP
// config, events, and load-balancer pools and ports left without a load
// balancer.
func (s *Server) forgetProject(id string) {
	for _, pid := range append([]string(nil), s.st.LBPoolOrder[id]...) {
		s.forgetLBPool(s.st.LBPools[pid], s.st.Now)
	}
	for pid, port := range s.st.LBPorts {
		if port.ProjectID == id {
			delete(s.st.LBPorts, pid)
		}
	}
	delete(s.st.LBPoolOrder, id)
	delete(s.st.LBOrder, id)
	pools := map[string]string{"public_ipv4": s.seed.IPPools.PublicIPv4, "private_ipv4": s.seed.IPPools.PrivateIPv4,
		"public_ipv6": s.seed.IPPools.PublicIPv6}
	for _, rid := range s.st.IPOrder[id] {
		res := s.st.IPReservations[rid]
		s.st.Alloc.free(pools[res.Type], res.CIDR, res.Network)
		delete(s.st.IPReservations, rid)
	}
	for key := range s.st.MgmtBlocks {
		if strings.HasPrefix(key, id+"|") {
			delete(s.st.MgmtBlocks, key)
		}
	}
	for _, kid := range append([]string(nil), s.st.SSHKeyOrder...) {
		if s.st.SSHKeys[kid].ProjectID == id {
			delete(s.st.SSHKeys, kid)
			s.st.SSHKeyOrder = removeID(s.st.SSHKeyOrder, kid)
		}
	}
	delete(s.st.IPOrder, id)
	delete(s.st.HWOrder, id)
	delete(s.st.BGPConfigs, id)
	delete(s.st.ProjectEvents, id)
	delete(s.st.DeviceOrder, id)
	delete(s.st.deviceLists, id)
	delete(s.st.Projects, id)
	s.st.ProjectOrder = removeID(s.st.ProjectOrder, id)
}

func (s *Server) addProjectEvent(projectID, typ, body string, at time.Time) {
	s.st.ProjectEvents[projectID] = append(s.st.ProjectEvents[projectID],
		Event{ID: uuid.NewString(), Type: typ, Body: body, State: "success", CreatedAt: at})
}

// discoverBGPSessions is packngo's Projects.DiscoverBGPSessions: Packet
// refreshes the sessions' status; here the status is always current.
func (s *Server) discoverBGPSessions(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.pathProject(r); err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"updated_at": rfc3339(s.st.Now)})
}
