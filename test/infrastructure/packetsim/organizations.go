package packetsim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Organization owns projects and pays for them. The simulator's user owns
// every organization; each has one payment method.
type Organization struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Description     string          `json:"description,omitempty"`
	Website         string          `json:"website,omitempty"`
	Twitter         string          `json:"twitter,omitempty"`
	Logo            string          `json:"logo,omitempty"`
	Address         json.RawMessage `json:"address,omitempty"`
	PaymentMethodID string          `json:"payment_method_id"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// organizationRequest is packngo's OrganizationCreateRequest and
// OrganizationUpdateRequest: absent fields stay as they are.
type organizationRequest struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Website     *string         `json:"website"`
	Twitter     *string         `json:"twitter"`
	Logo        *string         `json:"logo"`
	Address     json.RawMessage `json:"address"`
}

var errBlankName = errorf(http.StatusUnprocessableEntity, "Name can't be blank")

// validName refuses a name given blank; an absent one is checked by the create.
func (req *organizationRequest) validName() error {
	if req.Name != nil && strings.TrimSpace(*req.Name) == "" {
		return errBlankName
	}
	return nil
}

func (req *organizationRequest) apply(o *Organization) {
	setIfGiven(&o.Name, req.Name)
	setIfGiven(&o.Description, req.Description)
	setIfGiven(&o.Website, req.Website)
	setIfGiven(&o.Twitter, req.Twitter)
	setIfGiven(&o.Logo, req.Logo)
	if len(req.Address) > 0 && string(req.Address) != "null" {
		o.Address = req.Address
	}
}

func (s *Server) renderOrganization(o *Organization, inc includes) map[string]any {
	self := apiPrefix + "/organizations/" + o.ID
	projects := []any{}
	for _, id := range s.st.ProjectOrder {
		if p := s.st.Projects[id]; p.OrganizationID == o.ID {
			if inc.has("projects") {
				projects = append(projects, s.renderProject(p, includes{}))
			} else {
				projects = append(projects, href{Href: apiPrefix + "/projects/" + id})
			}
		}
	}
	owner := href{Href: apiPrefix + "/users/" + s.st.User.ID}
	out := map[string]any{"id": o.ID, "name": o.Name, "description": o.Description, "website": o.Website,
		"twitter": o.Twitter, "logo": o.Logo, "href": self, "created_at": rfc3339(o.CreatedAt), "updated_at": rfc3339(o.UpdatedAt),
		"projects": projects, "members": []href{owner}, "owners": []href{owner}, "primary_owner": owner,
		"credit_amount": 0, "customdata": map[string]any{}}
	if len(o.Address) > 0 {
		out["address"] = o.Address
	}
	return out
}

func (s *Server) renderPaymentMethod(o *Organization) map[string]any {
	return map[string]any{"id": o.PaymentMethodID, "name": "Sim card", "type": "credit_card", "default": true,
		"href": apiPrefix + "/payment-methods/" + o.PaymentMethodID, "organization": href{Href: apiPrefix + "/organizations/" + o.ID},
		"cardholder_name": s.st.User.FirstName + " " + s.st.User.LastName, "expiration_month": "12", "expiration_year": "2099",
		"last_4": "4242", "created_at": rfc3339(o.CreatedAt), "updated_at": rfc3339(o.UpdatedAt)}
}

// organization looks an organization up under a held lock. A token limited
// to some projects sees only their organizations.
func (s *Server) organization(r *http.Request) (*Organization, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	o := s.st.Organizations[id]
	if o == nil {
		return nil, notFound()
	}
	if !s.organizationVisible(r, o.ID) {
		return nil, forbidden("organization")
	}
	return o, nil
}

func (s *Server) organizationVisible(r *http.Request, orgID string) bool {
	if s.tokenIsUserLevel(r) {
		return true
	}
	for _, id := range s.st.ProjectOrder {
		if s.st.Projects[id].OrganizationID == orgID && s.tokenAllows(r, id) {
			return true
		}
	}
	return false
}

// tokenIsUserLevel tells a user's API key (every project, and the right to
// create them) from a project API key.
func (s *Server) tokenIsUserLevel(r *http.Request) bool {
	allowed := s.opts.Tokens[r.Header.Get("X-Auth-Token")]
	return len(allowed) == 0 || len(allowed) == 1 && allowed[0] == "*"
}

func (s *Server) listOrganizations(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	var visible []*Organization
	for _, id := range s.st.OrganizationOrder {
		if s.organizationVisible(r, id) {
			visible = append(visible, s.st.Organizations[id])
		}
	}
	p := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := p.window(len(visible))
	inc := s.parseIncludes(r.URL.Query())
	out := make([]map[string]any, 0, to-from)
	for _, o := range visible[from:to] {
		out = append(out, s.renderOrganization(o, inc))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"organizations": out, "meta": s.meta(r, p)})
}

func (s *Server) getOrganization(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	o, err := s.organization(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderOrganization(o, s.parseIncludes(r.URL.Query())))
}

func (s *Server) createOrganization(w http.ResponseWriter, r *http.Request) {
	var req organizationRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		if !s.tokenIsUserLevel(r) {
			return nil, notAllowed("organization")
		}
		if req.Name == nil {
			return nil, errBlankName
		}
		if err := req.validName(); err != nil {
			return nil, err
		}
		o := &Organization{ID: uuid.NewString(), PaymentMethodID: uuid.NewString(), CreatedAt: now, UpdatedAt: now}
		req.apply(o)
		s.st.addOrganization(o)
		return s.renderOrganization(o, includes{}), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

func (s *Server) updateOrganization(w http.ResponseWriter, r *http.Request) {
	var req organizationRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		o, err := s.organization(r)
		if err != nil {
			return nil, err
		}
		if err := req.validName(); err != nil {
			return nil, err
		}
		req.apply(o)
		o.UpdatedAt = now
		return s.renderOrganization(o, includes{}), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// deleteOrganization deletes the organization with its projects and what they hold (the spec's
// deleteOrganization answers 204, 401 or 404, never a refusal); the user's default moves to the
// next organization, if any.
func (s *Server) deleteOrganization(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	err := func() error {
		o, err := s.organization(r)
		if err != nil {
			return err
		}
		if !s.tokenIsUserLevel(r) {
			return notAllowed("organization")
		}
		for _, id := range append([]string(nil), s.st.ProjectOrder...) {
			if s.st.Projects[id].OrganizationID == o.ID {
				s.emptyProject(id)
				s.forgetProject(id)
			}
		}
		delete(s.st.Organizations, o.ID)
		s.st.OrganizationOrder = removeID(s.st.OrganizationOrder, o.ID)
		if o.ID == s.st.User.DefaultOrganizationID {
			s.st.User.DefaultOrganizationID = ""
			if len(s.st.OrganizationOrder) > 0 {
				s.st.User.DefaultOrganizationID = s.st.OrganizationOrder[0]
			}
		}
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

func (s *Server) listPaymentMethods(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	o, err := s.organization(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"payment_methods": []any{s.renderPaymentMethod(o)}})
}

// listOrganizationEvents merges the events of the organization's projects.
func (s *Server) listOrganizationEvents(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	o, err := s.organization(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var events []Event
	for _, id := range s.st.ProjectOrder {
		if s.st.Projects[id].OrganizationID == o.ID && s.tokenAllows(r, id) {
			events = append(events, s.projectEvents(id)...)
		}
	}
	s.writeEvents(w, r, events, "")
}

// listOrganizationPlans is Plans.OrganizationList: every organization is
// offered the whole catalog.
func (s *Server) listOrganizationPlans(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	_, err := s.organization(r)
	s.mu.RUnlock()
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writePlans(w, r)
}
