package packetsim

import (
	"net/http"
	"time"
)

// User is the account behind the API tokens: it owns the organizations and
// is the only member of every project.
type User struct {
	ID                    string    `json:"id"`
	Email                 string    `json:"email"`
	FirstName             string    `json:"first_name"`
	LastName              string    `json:"last_name"`
	PhoneNumber           string    `json:"phone_number,omitempty"`
	TimeZone              string    `json:"timezone,omitempty"`
	DefaultOrganizationID string    `json:"default_organization_id"`
	CreatedAt             time.Time `json:"created_at"`
	UpdatedAt             time.Time `json:"updated_at"`
}

// userUpdateRequest is packngo's UserUpdateRequest; password and avatar are
// accepted and dropped.
type userUpdateRequest struct {
	FirstName   *string `json:"first_name"`
	LastName    *string `json:"last_name"`
	PhoneNumber *string `json:"phone_number"`
	TimeZone    *string `json:"timezone"`
}

// renderUser renders the user. default_project_id is the first project, left out in an account
// without projects. Caller holds a lock.
func (s *Server) renderUser() map[string]any {
	u := s.st.User
	var defaultProject *string
	if len(s.st.ProjectOrder) > 0 {
		defaultProject = &s.st.ProjectOrder[0]
	}
	sshKeys := 0
	for _, k := range s.st.SSHKeys {
		if k.ProjectID == "" {
			sshKeys++
		}
	}
	out := map[string]any{"id": u.ID, "short_id": u.ID[:8], "first_name": u.FirstName, "last_name": u.LastName,
		"full_name": u.FirstName + " " + u.LastName, "email": u.Email, "emails": []href{{Href: apiPrefix + "/emails/" + stableID("email", u.Email)}},
		"href": apiPrefix + "/users/" + u.ID, "created_at": rfc3339(u.CreatedAt), "updated_at": rfc3339(u.UpdatedAt),
		"phone_number": u.PhoneNumber, "timezone": u.TimeZone, "number_of_ssh_keys": sshKeys,
		"two_factor_auth": "", "restricted": false, "staff": false, "customdata": map[string]any{}}
	if u.DefaultOrganizationID != "" {
		out["default_organization_id"] = u.DefaultOrganizationID
	}
	if defaultProject != nil {
		// The spec's default_project_id is a UUID, not nullable: an account without projects has none.
		out["default_project_id"] = *defaultProject
	}
	return out
}

// renderUserLite is the user as a device's created_by shows it without include=: the spec's
// UserLite, which a client generated from the spec needs with its id and short_id.
func (s *Server) renderUserLite() map[string]any {
	u := s.st.User
	return map[string]any{"id": u.ID, "short_id": u.ID[:8], "first_name": u.FirstName, "last_name": u.LastName,
		"full_name": u.FirstName + " " + u.LastName, "email": u.Email, "href": apiPrefix + "/users/" + u.ID,
		"created_at": rfc3339(u.CreatedAt), "updated_at": rfc3339(u.UpdatedAt)}
}

func (s *Server) getCurrentUser(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	s.writeJSON(w, http.StatusOK, s.renderUser())
}

// listUsers lists the users the token's user shares an organization with:
// in the simulator, the user itself.
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	p := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := p.window(1)
	out := []map[string]any{s.renderUser()}[from:to]
	s.writeJSON(w, http.StatusOK, map[string]any{"users": out, "meta": s.meta(r, p)})
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.readLock()
	defer s.mu.RUnlock()
	if id != s.st.User.ID {
		s.writeError(w, notFound())
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderUser())
}

func (s *Server) updateCurrentUser(w http.ResponseWriter, r *http.Request) {
	var req userUpdateRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	u := s.st.User
	setIfGiven(&u.FirstName, req.FirstName)
	setIfGiven(&u.LastName, req.LastName)
	setIfGiven(&u.PhoneNumber, req.PhoneNumber)
	setIfGiven(&u.TimeZone, req.TimeZone)
	u.UpdatedAt = now
	body := s.renderUser()
	s.mu.Unlock()
	s.writeJSON(w, http.StatusOK, body)
}

// setIfGiven applies an optional field of an update request.
func setIfGiven(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}
