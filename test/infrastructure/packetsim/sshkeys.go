package packetsim

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"
)

// fingerprint is the MD5 colon-hex fingerprint of an OpenSSH public key, or
// "" when the key is not valid.
func fingerprint(key string) string {
	fields := strings.Fields(key)
	if len(fields) < 2 {
		return ""
	}
	switch {
	case fields[0] == "ssh-rsa", fields[0] == "ssh-ed25519", fields[0] == "ssh-dss", strings.HasPrefix(fields[0], "ecdsa-sha2-"),
		strings.HasPrefix(fields[0], "sk-"):
	default:
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil || len(raw) == 0 {
		return ""
	}
	sum := md5.Sum(raw)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(parts, ":")
}

func (s *Server) renderSSHKey(k *SSHKey) map[string]any {
	owner := href{Href: apiPrefix + "/users/" + s.seed.User.ID}
	if k.ProjectID != "" {
		owner = href{Href: apiPrefix + "/projects/" + k.ProjectID}
	}
	// packngo decodes the owner from "owner" (an untagged field); the spec
	// calls it "entity". Send both.
	return map[string]any{"id": k.ID, "label": k.Label, "key": k.Key, "fingerprint": k.Fingerprint,
		"created_at": rfc3339(k.CreatedAt), "updated_at": rfc3339(k.UpdatedAt), "href": apiPrefix + "/ssh-keys/" + k.ID,
		"owner": owner, "entity": owner, "tags": []string{}}
}

func (s *Server) writeSSHKeys(w http.ResponseWriter, keep func(*SSHKey) bool, search string) {
	out := []any{}
	for _, id := range s.st.SSHKeyOrder {
		k := s.st.SSHKeys[id]
		if keep(k) && (search == "" || containsFold(k.Label+" "+k.Key+" "+k.Fingerprint, search)) {
			out = append(out, s.renderSSHKey(k))
		}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"ssh_keys": out})
}

// listUserSSHKeys lists the user's keys plus the keys of every project the
// token can see, as the real /ssh-keys does.
func (s *Server) listUserSSHKeys(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	s.writeSSHKeys(w, func(k *SSHKey) bool { return k.ProjectID == "" || s.tokenAllows(r, k.ProjectID) }, r.URL.Query().Get("search"))
}

func (s *Server) listProjectSSHKeys(w http.ResponseWriter, r *http.Request) {
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
	s.writeSSHKeys(w, func(k *SSHKey) bool { return k.ProjectID == projectID }, r.URL.Query().Get("search"))
}

func (s *Server) createSSHKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Label string `json:"label"`
		Key   string `json:"key"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	projectID := ""
	if r.PathValue("id") != "" {
		var err error
		if projectID, err = pathID(r, "id"); err != nil {
			s.writeError(w, err)
			return
		}
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		if projectID != "" {
			if _, err := s.project(r, projectID); err != nil {
				return nil, err
			}
		}
		fp := fingerprint(req.Key)
		if fp == "" {
			return nil, errorf(http.StatusUnprocessableEntity, "Key is invalid")
		}
		for _, k := range s.st.SSHKeys {
			if k.Fingerprint == fp && k.ProjectID == projectID {
				return nil, errorf(http.StatusUnprocessableEntity, "Fingerprint has already been taken")
			}
		}
		// Packet keeps the body byte for byte: a trailing newline is part of the key.
		k := &SSHKey{ID: uuid.NewString(), Label: req.Label, Key: req.Key, Fingerprint: fp, ProjectID: projectID,
			CreatedAt: now, UpdatedAt: now}
		s.st.addSSHKey(k)
		return s.renderSSHKey(k), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

func (s *Server) sshKey(r *http.Request) (*SSHKey, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	k := s.st.SSHKeys[id]
	if k == nil {
		return nil, notFound()
	}
	if k.ProjectID != "" && !s.tokenAllows(r, k.ProjectID) {
		return nil, forbidden("SSH key")
	}
	return k, nil
}

func (s *Server) getSSHKey(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	k, err := s.sshKey(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderSSHKey(k))
}

func (s *Server) updateSSHKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Label *string `json:"label"`
		Key   *string `json:"key"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		k, err := s.sshKey(r)
		if err != nil {
			return nil, err
		}
		if req.Key != nil {
			fp := fingerprint(*req.Key)
			if fp == "" {
				return nil, errorf(http.StatusUnprocessableEntity, "Key is invalid")
			}
			k.Key, k.Fingerprint = *req.Key, fp
		}
		if req.Label != nil {
			k.Label = *req.Label
		}
		k.UpdatedAt = now
		return s.renderSSHKey(k), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) deleteSSHKey(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	k, err := s.sshKey(r)
	if err == nil {
		delete(s.st.SSHKeys, k.ID)
		s.st.SSHKeyOrder = removeID(s.st.SSHKeyOrder, k.ID)
	}
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

// deviceSSHKeys is what a new device gets: the listed keys, or every
// project and user key unless no_ssh_keys.
func (s *Server) deviceSSHKeys(projectID string, req *deviceCreateRequest) []string {
	if req.NoSSHKeys {
		return nil
	}
	var ids []string
	if len(req.ProjectSSHKeys) > 0 {
		for _, id := range req.ProjectSSHKeys {
			if k := s.st.SSHKeys[strings.ToLower(id)]; k != nil && k.ProjectID == projectID {
				ids = append(ids, k.ID)
			}
		}
		return ids
	}
	for _, id := range s.st.SSHKeyOrder {
		if k := s.st.SSHKeys[id]; k.ProjectID == projectID || k.ProjectID == "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func sortByCreated[T any](items []T, key func(T) (string, int64)) {
	sort.SliceStable(items, func(i, j int) bool {
		ai, ti := key(items[i])
		aj, tj := key(items[j])
		if ti != tj {
			return ti < tj
		}
		return ai < aj
	})
}
