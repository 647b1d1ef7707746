package packetsim

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Go control API. The same operations are served over HTTP under /_sim/.

// Now is the simulator's current time.
func (s *Server) Now() time.Time { return s.clock.Now() }

// Advance moves the clock forward and runs every transition that became due.
func (s *Server) Advance(d time.Duration) {
	s.clock.Advance(d)
	s.mu.Lock()
	s.tick(s.clock.Now())
	s.mu.Unlock()
}

// SetDeviceState forces a device into a state (any API state, or "gone" to
// delete it out of band). Transitions continue from there, so "powering_off"
// still ends in "inactive".
func (s *Server) SetDeviceState(id, state string) error {
	switch state {
	case StateQueued, StateProvisioning, StateActive, StateDeprovisioning, StatePoweringOff, StatePoweringOn,
		StateInactive, StateReinstalling, StateFailed, StateGone:
	default:
		return fmt.Errorf("unknown device state %q", state)
	}
	now := s.writeLock()
	defer s.mu.Unlock()
	d := s.st.Devices[strings.ToLower(id)]
	if d == nil {
		return fmt.Errorf("device %s not found", id)
	}
	d.Hold, d.FailAt = false, time.Time{}
	s.enterState(d, state, now)
	if state != StateGone {
		s.advanceDevice(d, now)
	}
	return nil
}

// SetCapacity sets the on-demand servers left for a plan in a metro.
func (s *Server) SetCapacity(metro, plan string, left int) {
	s.writeLock()
	defer s.mu.Unlock()
	if s.st.Capacity[metro] == nil {
		s.st.Capacity[metro] = map[string]int{}
	}
	s.st.Capacity[metro][plan] = left
}

// InjectFault adds a fault and returns its ID. Faults that act on existing
// state (capacity, device_power, device_vanish with a ResourceID,
// project_quota) act at once.
func (s *Server) InjectFault(f Fault) string {
	switch f.Kind {
	case FaultCapacity:
		if f.Metro != "" && f.Plan != "" {
			s.SetCapacity(strings.ToLower(f.Metro), f.Plan, f.Remaining)
			return s.faults.add(Fault{Kind: "applied", ID: f.ID, Metro: f.Metro, Plan: f.Plan})
		}
	case FaultDevicePower:
		if f.ResourceID != "" {
			_ = s.SetDeviceState(f.ResourceID, orDefault(f.State, StateInactive))
			return s.faults.add(Fault{Kind: "applied", ID: f.ID, ResourceID: f.ResourceID})
		}
	case FaultDeviceVanish:
		if f.ResourceID != "" {
			now := s.writeLock()
			if d := s.st.Devices[strings.ToLower(f.ResourceID)]; d != nil {
				d.VanishAt = now.Add(f.Duration)
				s.noteDue(d.VanishAt)
				s.advanceDevice(d, now)
			}
			s.mu.Unlock()
			return s.faults.add(Fault{Kind: "applied", ID: f.ID, ResourceID: f.ResourceID})
		}
	case FaultDeviceFail:
		if f.ResourceID != "" {
			now := s.writeLock()
			if d := s.st.Devices[strings.ToLower(f.ResourceID)]; d != nil {
				d.FailAt, d.Forbidden = now.Add(f.Duration), f.Forbidden403
				s.noteDue(d.FailAt)
				s.advanceDevice(d, now)
			}
			s.mu.Unlock()
			return s.faults.add(Fault{Kind: "applied", ID: f.ID, ResourceID: f.ResourceID})
		}
	case FaultProjectQuota:
		s.writeLock()
		if p := s.st.Projects[strings.ToLower(f.ProjectID)]; p != nil {
			if f.MaxDevices != 0 {
				p.MaxDevices = f.MaxDevices
			}
			if f.IPv4Quota != 0 {
				p.PublicIPv4Quota = f.IPv4Quota
			}
		}
		s.mu.Unlock()
	}
	return s.faults.add(f)
}

// RemoveFault removes one fault.
func (s *Server) RemoveFault(id string) bool { return s.faults.remove(id) }

// ClearFaults removes every fault (auth rotations included).
func (s *Server) ClearFaults() { s.faults.clear() }

// Faults lists the active faults.
func (s *Server) Faults() []Fault { return s.faults.list() }

// Reset returns to the seed: resources, faults, rate buckets and the
// request log are cleared. The clock is not rewound.
func (s *Server) Reset() {
	s.mu.Lock()
	s.st = newStore(s.seed, s.clock.Now())
	s.nextDue = time.Time{}
	s.dirty = true
	s.mu.Unlock()
	s.faults.clear()
	s.limiter.reset()
	s.recorder.reset()
}

// Requests returns the recorded requests, oldest first.
func (s *Server) Requests() []Request { return s.recorder.snapshot() }

// Counters returns the number of requests per route ("GET /devices/{id}").
func (s *Server) Counters() map[string]int { return s.recorder.counters() }

// InFlight is how many requests of route ("POST /projects/{id}/devices") are being served now:
// arrived, and not yet answered.
func (s *Server) InFlight(route string) int {
	s.recorder.mu.Lock()
	defer s.recorder.mu.Unlock()
	return s.recorder.inFlight[route]
}

// Control API over HTTP. It needs no token: it is for the test harness.
func (s *Server) controlRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /_sim/clock", s.handleClock)
	m.HandleFunc("POST /_sim/clock/advance", s.handleClockAdvance)
	m.HandleFunc("POST /_sim/devices/{id}/state", s.handleSetDeviceState)
	m.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		s.writeJSON(w, http.StatusOK, map[string]any{"faults": s.Faults()})
	})
	m.HandleFunc("POST /_sim/faults", s.handleInjectFault)
	m.HandleFunc("DELETE /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		s.writeBody(w, http.StatusNoContent, nil)
	})
	m.HandleFunc("DELETE /_sim/faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !s.RemoveFault(r.PathValue("id")) {
			s.writeError(w, notFound())
			return
		}
		s.writeBody(w, http.StatusNoContent, nil)
	})
	m.HandleFunc("GET /_sim/counters", s.handleCounters)
	m.HandleFunc("GET /_sim/requests", s.handleRequests)
	m.HandleFunc("GET /_sim/conformance", s.handleConformance)
	m.HandleFunc("POST /_sim/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		s.writeBody(w, http.StatusNoContent, nil)
	})
	m.HandleFunc("POST /_sim/state/save", func(w http.ResponseWriter, r *http.Request) {
		if err := s.SaveState(); err != nil {
			s.writeError(w, errorf(http.StatusInternalServerError, err.Error()))
			return
		}
		s.writeBody(w, http.StatusNoContent, nil)
	})
}

// handleClock answers the virtual time.
func (s *Server) handleClock(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"now": s.Now().Format(time.RFC3339Nano)})
}

// handleClockAdvance moves the virtual clock on by ?d= or {"duration": ...}.
func (s *Server) handleClockAdvance(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Duration string `json:"duration"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if v := r.URL.Query().Get("d"); v != "" {
		req.Duration = v
	}
	d, err := time.ParseDuration(req.Duration)
	if err != nil || d < 0 {
		s.writeError(w, errorf(http.StatusUnprocessableEntity, "d must be a positive duration such as 30s"))
		return
	}
	s.Advance(d)
	s.writeJSON(w, http.StatusOK, map[string]string{"now": s.Now().Format(time.RFC3339Nano)})
}

// handleSetDeviceState puts a device in the state {"state": ...} names.
func (s *Server) handleSetDeviceState(w http.ResponseWriter, r *http.Request) {
	var req struct {
		State string `json:"state"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.SetDeviceState(r.PathValue("id"), req.State); err != nil {
		s.writeError(w, errorf(http.StatusUnprocessableEntity, err.Error()))
		return
	}
	s.writeBody(w, http.StatusNoContent, nil)
}

// handleInjectFault injects the fault in the body and answers its id.
func (s *Server) handleInjectFault(w http.ResponseWriter, r *http.Request) {
	var f Fault
	if err := decodeBody(r, &f); err != nil {
		s.writeError(w, err)
		return
	}
	if f.Kind == "" {
		s.writeError(w, errorf(http.StatusUnprocessableEntity, "kind is required"))
		return
	}
	s.writeJSON(w, http.StatusCreated, map[string]string{"id": s.InjectFault(f)})
}
