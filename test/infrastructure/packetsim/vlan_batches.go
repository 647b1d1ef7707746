package packetsim

import (
	"net/http"
	"time"

	"github.com/google/uuid"
)

// VLAN assignments of a port and their batches (packngo VLANAssignments): a batch assigns
// and unassigns several virtual networks of a port at once. Packet runs it asynchronously:
// it is queued, then in_progress, then completed (or failed, with error_messages), and only
// then do the port's virtual networks change. Here the simulator clock drives the states
// (Timing.VLANBatchQueued and VLANBatchInProgress) and the whole batch applies at once.

// Errors of the batch API whose exact words Packet does not publish.
const (
	msgBatchEmpty     = "Vlan assignments can't be blank"
	msgBatchState     = "Vlan assignment state must be assigned or unassigned"
	msgBatchDuplicate = "A virtual network may appear only once in a batch"
	msgBatchNative    = "Only one assigned virtual network of a batch may be native"
)

// renderVLANBatch renders a batch; a batch just created is queued whatever the timing.
func (s *Server) renderVLANBatch(d *Device, b *VLANBatch, now time.Time, justCreated bool) map[string]any {
	state, updated := "in_progress", b.StartAt
	switch {
	case b.Result != "":
		state, updated = b.Result, b.DoneAt
	case justCreated || now.Before(b.StartAt):
		state, updated = "queued", b.CreatedAt
	}
	items := make([]map[string]any, 0, len(b.Items))
	for _, it := range b.Items {
		item := map[string]any{"id": it.VNID, "state": it.State, "native": it.Native}
		if vn := s.st.VirtualNetworks[it.VNID]; vn != nil {
			item["vlan"] = vn.VXLAN
		}
		items = append(items, item)
	}
	errs := b.Errors
	if errs == nil {
		errs = []string{}
	}
	return map[string]any{"id": b.ID, "href": apiPrefix + "/ports/" + b.PortID + "/vlan-assignments/batches/" + b.ID,
		"state": state, "quantity": len(b.Items), "error_messages": errs, "vlan_assignments": items,
		"created_at": rfc3339(b.CreatedAt), "updated_at": rfc3339(updated),
		"port": href{Href: apiPrefix + "/ports/" + b.PortID}, "project": href{Href: apiPrefix + "/projects/" + d.ProjectID}}
}

// vlanBatchAssignment is one assignment of a batch request.
type vlanBatchAssignment struct {
	VLAN   string `json:"vlan"`
	State  string `json:"state"`
	Native *bool  `json:"native"`
}

func (s *Server) createVLANBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		VLANAssignments []vlanBatchAssignment `json:"vlan_assignments"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		d, p, err := s.port(r)
		if err != nil {
			return nil, err
		}
		if err := requireActive(d); err != nil {
			return nil, err
		}
		if len(req.VLANAssignments) == 0 {
			return nil, errorf(http.StatusUnprocessableEntity, msgBatchEmpty)
		}
		b := VLANBatch{ID: uuid.NewString(), PortID: p.ID, CreatedAt: now}
		seen, natives, assigns := map[string]bool{}, 0, 0
		for _, a := range req.VLANAssignments {
			item, err := s.vlanBatchItem(d, a)
			if err != nil {
				return nil, err
			}
			if seen[item.VNID] {
				return nil, errorf(http.StatusUnprocessableEntity, msgBatchDuplicate)
			}
			seen[item.VNID] = true
			if item.Native {
				natives++
			}
			if item.State == "assigned" {
				assigns++
			}
			b.Items = append(b.Items, item)
		}
		if natives > 1 {
			return nil, errorf(http.StatusUnprocessableEntity, msgBatchNative)
		}
		if assigns > 0 {
			if err := canCarryVLANs(p); err != nil {
				return nil, err
			}
		}
		b.StartAt = now.Add(s.timing.VLANBatchQueued)
		b.DoneAt = b.StartAt.Add(s.timing.VLANBatchInProgress)
		d.VLANBatches = append(d.VLANBatches, b)
		s.noteDue(b.DoneAt)
		return s.renderVLANBatch(d, &d.VLANBatches[len(d.VLANBatches)-1], now, true), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

// vlanBatchItem checks one assignment of a batch (state assigned, the default, or unassigned; a
// virtual network of the project in the device's metro). Only an assignment can be native.
func (s *Server) vlanBatchItem(d *Device, a vlanBatchAssignment) (VLANBatchItem, error) {
	state := a.State
	if state == "" {
		state = "assigned"
	}
	if state != "assigned" && state != "unassigned" {
		return VLANBatchItem{}, errorf(http.StatusUnprocessableEntity, msgBatchState)
	}
	vn := s.resolveVLAN(d.ProjectID, a.VLAN)
	if vn == nil {
		return VLANBatchItem{}, errorf(http.StatusUnprocessableEntity, "Virtual network not found")
	}
	if vn.Metro != d.Metro {
		return VLANBatchItem{}, errorf(http.StatusUnprocessableEntity, "Virtual network is not in the device's metro")
	}
	native := a.Native != nil && *a.Native
	return VLANBatchItem{VNID: vn.ID, State: state, Native: native && state == "assigned"}, nil
}

func (s *Server) listVLANBatches(w http.ResponseWriter, r *http.Request) {
	now := s.readLock()
	defer s.mu.RUnlock()
	d, p, err := s.port(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var batches []*VLANBatch
	for i := range d.VLANBatches {
		if d.VLANBatches[i].PortID == p.ID {
			batches = append(batches, &d.VLANBatches[i])
		}
	}
	pg := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := pg.window(len(batches))
	out := []any{}
	for _, b := range batches[from:to] {
		out = append(out, s.renderVLANBatch(d, b, now, false))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"batches": out, "meta": s.meta(r, pg)})
}

func (s *Server) getVLANBatch(w http.ResponseWriter, r *http.Request) {
	now := s.readLock()
	defer s.mu.RUnlock()
	d, p, err := s.port(r)
	if err == nil {
		var id string
		if id, err = pathID(r, "batch"); err == nil {
			for i := range d.VLANBatches {
				if b := &d.VLANBatches[i]; b.ID == id && b.PortID == p.ID {
					s.writeJSON(w, http.StatusOK, s.renderVLANBatch(d, b, now, false))
					return
				}
			}
			err = notFound()
		}
	}
	s.writeError(w, err)
}

// vlanAssignmentID is the stable ID of a virtual network's assignment to a port.
func vlanAssignmentID(portID, vnID string) string {
	return stableID("vlan-assignment", portID+"/"+vnID)
}

// renderVLANAssignment renders a port's current assignment; port and virtual_network are
// references unless included.
func (s *Server) renderVLANAssignment(d *Device, p *Port, vnID string, inc includes) map[string]any {
	at, ok := p.AssignedAt[vnID]
	if !ok {
		at = d.UpdatedAt
	}
	out := map[string]any{"id": vlanAssignmentID(p.ID, vnID), "href": apiPrefix + "/ports/" + p.ID + "/vlan-assignments/" + vlanAssignmentID(p.ID, vnID),
		"state": "assigned", "native": p.NativeVLAN == vnID, "created_at": rfc3339(at), "updated_at": rfc3339(at),
		"port": href{Href: apiPrefix + "/ports/" + p.ID}, "virtual_network": href{Href: apiPrefix + "/virtual-networks/" + vnID}}
	if vn := s.st.VirtualNetworks[vnID]; vn != nil {
		out["vlan"] = vn.VXLAN
		if inc.has("virtual_network") {
			out["virtual_network"] = s.renderVirtualNetwork(vn)
		}
	}
	if inc.has("port") {
		out["port"] = s.renderPort(d, p)
	}
	return out
}

func (s *Server) listVLANAssignments(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	d, p, err := s.port(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	inc := s.parseIncludes(r.URL.Query())
	pg := s.parsePage(r.URL.Query(), s.opts.PerPage)
	from, to := pg.window(len(p.VLANs))
	out := []any{}
	for _, vnID := range p.VLANs[from:to] {
		out = append(out, s.renderVLANAssignment(d, p, vnID, inc))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"vlan_assignments": out, "meta": s.meta(r, pg)})
}

func (s *Server) getVLANAssignment(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	d, p, err := s.port(r)
	if err == nil {
		var id string
		if id, err = pathID(r, "assignment"); err == nil {
			for _, vnID := range p.VLANs {
				if vlanAssignmentID(p.ID, vnID) == id {
					s.writeJSON(w, http.StatusOK, s.renderVLANAssignment(d, p, vnID, s.parseIncludes(r.URL.Query())))
					return
				}
			}
			err = notFound()
		}
	}
	s.writeError(w, err)
}

// advanceVLANBatches applies the device's batches that are due, oldest first.
func (s *Server) advanceVLANBatches(d *Device, now time.Time) {
	for i := range d.VLANBatches {
		if b := &d.VLANBatches[i]; b.Result == "" && !now.Before(b.DoneAt) {
			s.applyVLANBatch(d, b)
		}
	}
}

// vlanBatchesDue is when the device's next batch completes; zero when none is pending.
func vlanBatchesDue(d *Device) time.Time {
	var next time.Time
	for _, b := range d.VLANBatches {
		if b.Result == "" && (next.IsZero() || b.DoneAt.Before(next)) {
			next = b.DoneAt
		}
	}
	return next
}

// applyVLANBatch runs a batch all or nothing: what changed since it was accepted (the device
// no longer active, the port bonded again, a virtual network deleted) fails it.
func (s *Server) applyVLANBatch(d *Device, b *VLANBatch) {
	fail := func(msg string) { b.Result, b.Errors = "failed", []string{msg} }
	var p *Port
	for i := range d.Ports {
		if d.Ports[i].ID == b.PortID {
			p = &d.Ports[i]
		}
	}
	if p == nil {
		fail(msgNotFound)
		return
	}
	if d.State != StateActive {
		fail(msgPortDeviceNotActive)
		return
	}
	for _, it := range b.Items {
		if s.st.VirtualNetworks[it.VNID] == nil {
			fail("Virtual network not found")
			return
		}
		if it.State == "assigned" && !hasTag(p.VLANs, it.VNID) {
			if msg := vlanRefusal(p); msg != "" {
				fail(msg)
				return
			}
		}
	}
	for _, it := range b.Items {
		if it.State == "assigned" {
			assignVLAN(p, it.VNID, b.DoneAt)
			if it.Native {
				p.NativeVLAN = it.VNID
			}
		} else {
			unassignVLAN(p, it.VNID)
		}
	}
	b.Result = "completed"
	updateNetworkType(d)
	d.UpdatedAt = b.DoneAt
}
