package packetsim

import (
	"net/http"
	"sort"
)

// writeEvents writes a paginated, newest-first event list. Caller holds a lock.
func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, events []Event, deviceID string) {
	// Newest first; events of the same instant in reverse order of recording.
	sorted := make([]Event, len(events))
	for i, ev := range events {
		sorted[len(events)-1-i] = ev
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreatedAt.After(sorted[j].CreatedAt) })
	p := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := p.window(len(sorted))
	out := make([]eventJSON, 0, to-from)
	for _, ev := range sorted[from:to] {
		out = append(out, renderEvent(ev, deviceID))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"events": out, "meta": s.meta(r, p)})
}

// projectEvents merges the project's own events (created, updated, device
// deletions) with those of its devices. Caller holds a lock.
func (s *Server) projectEvents(projectID string) []Event {
	events := append([]Event(nil), s.st.ProjectEvents[projectID]...)
	for _, id := range s.st.DeviceOrder[projectID] {
		events = append(events, s.st.Devices[id].Events...)
	}
	return events
}

func (s *Server) listProjectEvents(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.pathProject(r); err != nil {
		s.writeError(w, err)
		return
	}
	projectID, _ := pathID(r, "id")
	s.writeEvents(w, r, s.projectEvents(projectID), "")
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
	for projectID, events := range s.st.ProjectEvents {
		for _, ev := range events {
			if ev.ID == id && s.tokenAllows(r, projectID) {
				s.writeJSON(w, http.StatusOK, renderEvent(ev, ""))
				return
			}
		}
	}
	s.writeError(w, notFound())
}
