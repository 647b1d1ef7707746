package packetsim

import (
	"net/http"
	"sort"
	"strings"
	"time"
)

func (hw *HardwareReservation) provisionable(now time.Time) bool {
	return hw.DeviceID == "" && !hw.Spare && !hw.NeedOfService && !now.Before(hw.WipeUntil)
}

// claimHardwareReservation picks the reservation a create asks for. The
// caller holds the write lock and sets DeviceID at once, so concurrent
// creates can never book the same reservation.
func (s *Server) claimHardwareReservation(call faultCall, projectID, want string, plan *planEntry, metro *metroEntry, facilities []string, now time.Time) (*HardwareReservation, error) {
	location := "facility"
	if metro != nil {
		location = "metro"
	}
	if _, ok := s.faults.take(call, FaultHWExhausted); ok {
		return nil, errorf(http.StatusServiceUnavailable, msgNoHWReservations+location)
	}
	if want != "next-available" {
		return s.requestedHardwareReservation(projectID, want, plan, now)
	}
	inFacilities := func(code string) bool {
		for _, f := range facilities {
			if f == "any" || strings.EqualFold(f, code) {
				return true
			}
		}
		return false
	}
	var candidates []*HardwareReservation
	for _, id := range s.st.HWOrder[projectID] {
		hw := s.st.HardwareReservations[id]
		if !hw.provisionable(now) || hw.Plan != plan.Slug {
			continue
		}
		fac := s.catalog.facility(hw.Facility)
		if metro != nil && fac.metro != metro || metro == nil && !inFacilities(fac.Code) {
			continue
		}
		candidates = append(candidates, hw)
	}
	if len(candidates) == 0 {
		return nil, errorf(http.StatusServiceUnavailable, msgNoHWReservations+location)
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		if !candidates[i].CreatedAt.Equal(candidates[j].CreatedAt) {
			return candidates[i].CreatedAt.Before(candidates[j].CreatedAt)
		}
		return candidates[i].ID < candidates[j].ID
	})
	return candidates[0], nil
}

// requestedHardwareReservation is the reservation with ID want, if the project holds it, it can
// be provisioned now, and (with the strict-plan knob) it is of the plan asked for.
func (s *Server) requestedHardwareReservation(projectID, want string, plan *planEntry, now time.Time) (*HardwareReservation, error) {
	if !isUUID(want) {
		return nil, notFound()
	}
	hw := s.st.HardwareReservations[strings.ToLower(want)]
	if hw == nil || hw.ProjectID != projectID {
		return nil, notFound()
	}
	if !hw.provisionable(now) {
		return nil, errorf(http.StatusUnprocessableEntity, msgNotProvisionable)
	}
	if s.opts.Knobs.HardwareReservationStrictPlan && hw.Plan != plan.Slug {
		return nil, errorf(http.StatusUnprocessableEntity, "Plan does not match the hardware reservation's plan")
	}
	return hw, nil
}

type hardwareReservationJSON struct {
	ID            string `json:"id"`
	ShortID       string `json:"short_id"`
	Href          string `json:"href"`
	Facility      any    `json:"facility"`
	Plan          any    `json:"plan"`
	Project       any    `json:"project"`
	Device        any    `json:"device,omitempty"` // none while unused: the spec's device is not nullable
	Provisionable bool   `json:"provisionable"`
	Spare         bool   `json:"spare"`
	NeedOfService bool   `json:"need_of_service"`
	SwitchUUID    string `json:"switch_uuid"`
	Intervals     int    `json:"intervals"`
	CurrentPeriod int    `json:"current_period"`
	CreatedAt     string `json:"created_at"`
}

func (s *Server) renderHardwareReservation(hw *HardwareReservation, inc includes, now time.Time) hardwareReservationJSON {
	out := hardwareReservationJSON{ID: hw.ID, ShortID: hw.ShortID, Href: apiPrefix + "/hardware-reservations/" + hw.ID,
		Facility: s.catalog.facility(hw.Facility).json, Plan: s.catalog.plan(hw.Plan).jsonLite,
		Project: href{Href: apiPrefix + "/projects/" + hw.ProjectID}, Provisionable: hw.provisionable(now), Spare: hw.Spare,
		NeedOfService: hw.NeedOfService, SwitchUUID: stableID("switch", hw.Facility), Intervals: 12, CurrentPeriod: 1,
		CreatedAt: rfc3339(hw.CreatedAt)}
	if inc.has("project") {
		out.Project = s.renderProject(s.st.Projects[hw.ProjectID], includes{})
	}
	if hw.DeviceID != "" {
		if d := s.st.Devices[hw.DeviceID]; d != nil && inc.has("device") {
			out.Device = s.renderDevice(d, includes{}, now)
		} else {
			out.Device = href{Href: apiPrefix + "/devices/" + hw.DeviceID}
		}
	}
	return out
}

func (s *Server) listHardwareReservations(w http.ResponseWriter, r *http.Request) {
	projectID, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	q := r.URL.Query()
	now := s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.project(r, projectID); err != nil {
		s.writeError(w, err)
		return
	}
	onlyProvisionable := q.Get("provisionable") == "only"
	state, query := q.Get("state"), q.Get("query")
	var matched []*HardwareReservation
	for _, id := range s.st.HWOrder[projectID] {
		hw := s.st.HardwareReservations[id]
		switch {
		case onlyProvisionable && !hw.provisionable(now),
			state == "spare" && !hw.Spare,
			state == "need_of_service" && !hw.NeedOfService,
			state == "active" && (hw.Spare || hw.NeedOfService),
			query != "" && !containsFold(hw.ID+" "+hw.ShortID+" "+hw.Plan+" "+hw.Facility, query):
			continue
		}
		matched = append(matched, hw)
	}
	p := s.parsePage(q, s.opts.PerPage)
	from, to := p.window(len(matched))
	inc := s.parseIncludes(q)
	out := make([]hardwareReservationJSON, 0, to-from)
	for _, hw := range matched[from:to] {
		out = append(out, s.renderHardwareReservation(hw, inc, now))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"hardware_reservations": out, "meta": s.meta(r, p)})
}

func (s *Server) getHardwareReservation(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	now := s.readLock()
	defer s.mu.RUnlock()
	hw := s.st.HardwareReservations[id]
	if hw == nil {
		s.writeError(w, notFound())
		return
	}
	if !s.tokenAllows(r, hw.ProjectID) {
		s.writeError(w, forbidden("hardware reservation"))
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderHardwareReservation(hw, s.parseIncludes(r.URL.Query()), now))
}
