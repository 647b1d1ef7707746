package packetsim

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

type ipReservationRequest struct {
	Type                   string          `json:"type"`
	Quantity               int             `json:"quantity"`
	Details                *string         `json:"details"`
	Facility               *string         `json:"facility"`
	Metro                  *string         `json:"metro"`
	Tags                   []string        `json:"tags"`
	CustomData             json.RawMessage `json:"customdata"`
	FailOnApprovalRequired bool            `json:"fail_on_approval_required"`
	Comments               string          `json:"comments"`
}

func (s *Server) listProjectIPs(w http.ResponseWriter, r *http.Request) {
	projectID, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	q := r.URL.Query()
	types := map[string]bool{}
	for _, v := range append(q["types"], q["types[]"]...) {
		for _, t := range strings.Split(v, ",") {
			if t != "" {
				types[t] = true
			}
		}
	}
	now := s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.project(r, projectID); err != nil {
		s.writeError(w, err)
		return
	}
	var matched []*IPReservation
	for _, id := range s.st.IPOrder[projectID] {
		res := s.st.IPReservations[id]
		if res.ListVisibleAt.After(now) || len(types) > 0 && !types[res.Type] {
			continue
		}
		matched = append(matched, res)
	}
	p := s.parsePage(q, 250)
	from, to := p.window(len(matched))
	inc := s.parseIncludes(q)
	out := make([]ipJSON, 0, to-from)
	for _, res := range matched[from:to] {
		out = append(out, s.renderReservation(res, inc, now))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"ip_addresses": out, "meta": s.meta(r, p)})
}

// elasticIPv4Used counts the project's elastic public IPv4 addresses for
// the quota (management blocks do not count).
func (s *Server) elasticIPv4Used(projectID string) int {
	n := 0
	for _, id := range s.st.IPOrder[projectID] {
		if r := s.st.IPReservations[id]; !r.Management && r.Type == "public_ipv4" && r.State != "denied" {
			n += r.Quantity
		}
	}
	return n
}

func (s *Server) createIPReservation(w http.ResponseWriter, r *http.Request) {
	var req ipReservationRequest
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
	body, err := func() (any, error) {
		project, err := s.project(r, projectID)
		if err != nil {
			return nil, err
		}
		res, err := s.buildReservation(r, project, &req, now)
		if err != nil {
			return nil, err
		}
		return s.renderReservation(res, s.parseIncludes(r.URL.Query()), now), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

func (s *Server) buildReservation(r *http.Request, project *Project, req *ipReservationRequest, now time.Time) (*IPReservation, error) {
	bitsLen, err := addressBits(req)
	if err != nil {
		return nil, err
	}
	facility, metro, err := s.reservationLocation(req)
	if err != nil {
		return nil, err
	}
	customData, err := parseCustomData(req.CustomData)
	if err != nil {
		return nil, err
	}
	res := &IPReservation{ID: uuid.NewString(), ProjectID: project.ID, Type: req.Type, State: "created", Metro: metro,
		Facility: facility, Tags: req.Tags, Details: req.Details, CustomData: customData, Quantity: req.Quantity,
		CIDR: bitsLen - bits.TrailingZeros(uint(req.Quantity)), CreatedAt: now, UpdatedAt: now}
	if res.Tags == nil {
		res.Tags = []string{}
	}
	call := callOf(r)
	call.tags = res.Tags
	if err := s.approveOrHold(call, project, req, res, now); err != nil {
		return nil, err
	}
	if f, ok := s.faults.take(call, FaultListLag); ok {
		res.ListVisibleAt = now.Add(f.Duration)
	}
	s.st.IPReservations[res.ID] = res
	s.st.IPOrder[project.ID] = append(s.st.IPOrder[project.ID], res.ID)
	return res, nil
}

// addressBits is the address length of the reservation's type, once its quantity is checked.
func addressBits(req *ipReservationRequest) (int, error) {
	var bitsLen int
	switch req.Type {
	case "public_ipv4", "global_ipv4":
		bitsLen = 32
	case "public_ipv6":
		bitsLen = 128
	case "":
		return 0, errorf(http.StatusUnprocessableEntity, "Type can't be blank")
	default:
		return 0, errorf(http.StatusUnprocessableEntity, "Type is not supported by the simulator: "+req.Type)
	}
	if req.Quantity <= 0 || bits.OnesCount(uint(req.Quantity)) != 1 || bitsLen == 32 && req.Quantity > 16 {
		return 0, errorf(http.StatusUnprocessableEntity, "Quantity must be a power of 2 between 1 and 16")
	}
	return bitsLen, nil
}

// reservationLocation is the facility (if one is asked for) and metro of a reservation; global
// addresses have neither, every other type needs a metro.
func (s *Server) reservationLocation(req *ipReservationRequest) (facility, metro string, err error) {
	if req.Type == "global_ipv4" {
		// Global addresses are anycast: they belong to no metro or facility.
		if req.Facility != nil && *req.Facility != "" || req.Metro != nil && *req.Metro != "" {
			return "", "", errorf(http.StatusUnprocessableEntity, "Global IPv4 reservations cannot have a metro or facility")
		}
	}
	if req.Facility != nil && *req.Facility != "" {
		f := s.catalog.facility(*req.Facility)
		if f == nil {
			return "", "", errorf(http.StatusUnprocessableEntity, "Facility is not valid")
		}
		facility, metro = f.Code, f.metro.Code
	}
	if req.Metro != nil && *req.Metro != "" {
		m := s.catalog.metro(*req.Metro)
		if m == nil {
			return "", "", errorf(http.StatusUnprocessableEntity, "Metro is not valid")
		}
		if metro != "" && metro != m.Code {
			return "", "", errorf(http.StatusUnprocessableEntity, "Facility is not in the given metro")
		}
		metro = m.Code
	}
	if metro == "" && req.Type != "global_ipv4" {
		return "", "", errorf(http.StatusUnprocessableEntity, msgFacilityRequired)
	}
	return facility, metro, nil
}

// approveOrHold allocates the reservation's addresses at once, or leaves it pending approval
// when it exceeds the project's public IPv4 quota (an error if the request says to fail
// instead) or a pending fault holds it.
func (s *Server) approveOrHold(call faultCall, project *Project, req *ipReservationRequest, res *IPReservation, now time.Time) error {
	overQuota := req.Type == "public_ipv4" && s.elasticIPv4Used(project.ID)+req.Quantity > project.PublicIPv4Quota
	pending, hasPendingFault := s.faults.take(call, FaultEIPPending)
	switch {
	case overQuota && req.FailOnApprovalRequired:
		return errorf(http.StatusUnprocessableEntity, fmt.Sprintf(
			"Request for %d public IPv4 addresses exceeds the project's quota of %d and requires approval", req.Quantity, project.PublicIPv4Quota))
	case hasPendingFault:
		res.State, res.PendingUntil, res.DenyAfterWait = "pending", now.Add(pending.Duration), pending.State == "denied"
	case overQuota:
		res.State, res.PendingUntil = "pending", now.Add(s.timing.EIPApproval)
	}
	if res.State == "created" {
		return s.allocateReservation(res)
	}
	s.noteDue(res.PendingUntil)
	return nil
}

func (s *Server) allocateReservation(res *IPReservation) error {
	pool := s.seed.IPPools.PublicIPv4
	if res.Type == "public_ipv6" {
		pool = s.seed.IPPools.PublicIPv6
	}
	network, err := s.st.Alloc.alloc(pool, res.CIDR)
	if err != nil {
		return errorf(http.StatusUnprocessableEntity, msgInsufficientIPSpace)
	}
	res.Network = network.String()
	return nil
}

// approveReservation ends a pending period: created (with addresses) or denied.
func (s *Server) approveReservation(res *IPReservation, at time.Time) {
	res.PendingUntil, res.UpdatedAt = time.Time{}, at
	if res.DenyAfterWait || s.allocateReservation(res) != nil {
		res.State = "denied"
		return
	}
	res.State = "created"
}

// lookupIP finds a reservation or an assignment by ID, with scoping.
func (s *Server) lookupIP(r *http.Request) (*IPReservation, *IPAssignment, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, nil, err
	}
	if res := s.st.IPReservations[id]; res != nil {
		if !s.tokenAllows(r, res.ProjectID) {
			return nil, nil, forbidden("IP address")
		}
		return res, nil, nil
	}
	if a := s.st.IPAssignments[id]; a != nil {
		if !s.tokenAllows(r, s.st.IPReservations[a.ReservationID].ProjectID) {
			return nil, nil, forbidden("IP address")
		}
		return nil, a, nil
	}
	return nil, nil, notFound()
}

func (s *Server) getIP(w http.ResponseWriter, r *http.Request) {
	now := s.readLock()
	defer s.mu.RUnlock()
	res, a, err := s.lookupIP(r)
	switch {
	case err != nil:
		s.writeError(w, err)
	case res != nil:
		s.writeJSON(w, http.StatusOK, s.renderReservation(res, s.parseIncludes(r.URL.Query()), now))
	default:
		s.writeJSON(w, http.StatusOK, s.renderAssignment(a))
	}
}

func (s *Server) updateIP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tags       *[]string       `json:"tags"`
		Details    *string         `json:"details"`
		CustomData json.RawMessage `json:"customdata"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	body, err := func() (any, error) {
		res, a, err := s.lookupIP(r)
		if err != nil {
			return nil, err
		}
		if a != nil {
			return s.renderAssignment(a), nil
		}
		if req.Tags != nil {
			res.Tags = append([]string{}, (*req.Tags)...)
		}
		if req.Details != nil {
			d := *req.Details
			res.Details = &d
		}
		if len(req.CustomData) > 0 {
			cd, err := parseCustomData(req.CustomData)
			if err != nil {
				return nil, err
			}
			res.CustomData = cd
		}
		res.UpdatedAt = now
		return s.renderReservation(res, s.parseIncludes(r.URL.Query()), now), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// deleteIP unassigns an assignment, or deletes a whole reservation
// (cascading to its assignments unless the reject knob is on).
func (s *Server) deleteIP(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	err := func() error {
		res, a, err := s.lookupIP(r)
		if err != nil {
			return err
		}
		if a != nil {
			if a.Management {
				return errorf(http.StatusUnprocessableEntity, "Management IP addresses cannot be unassigned")
			}
			s.deleteAssignment(a.ID)
			return nil
		}
		if res.Management {
			return errorf(http.StatusUnprocessableEntity, "Management IP blocks cannot be deleted")
		}
		if len(res.AssignmentIDs) > 0 && s.opts.Knobs.RejectAssignedIPDelete {
			return errorf(http.StatusUnprocessableEntity, "Cannot delete an IP reservation that is assigned to a device")
		}
		for _, aid := range append([]string(nil), res.AssignmentIDs...) {
			s.deleteAssignment(aid)
		}
		delete(s.st.IPReservations, res.ID)
		s.st.IPOrder[res.ProjectID] = removeID(s.st.IPOrder[res.ProjectID], res.ID)
		if res.Network != "" {
			pool := s.seed.IPPools.PublicIPv4
			if res.Type == "public_ipv6" {
				pool = s.seed.IPPools.PublicIPv6
			}
			s.st.Alloc.free(pool, res.CIDR, res.Network)
		}
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

func (s *Server) availableAddresses(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	res, _, err := s.lookupIP(r)
	if err == nil && res == nil {
		err = notFound()
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	cidr := res.CIDR
	if v := r.URL.Query().Get("cidr"); v != "" {
		n, convErr := strconv.Atoi(v)
		if convErr != nil || n < res.CIDR || n > 128 {
			s.writeError(w, errorf(http.StatusUnprocessableEntity, "Cidr is not valid"))
			return
		}
		cidr = n
	}
	out := []string{}
	if network, perr := netip.ParseAddr(res.Network); perr == nil && cidr <= network.BitLen() {
		taken := map[string]bool{}
		for _, aid := range res.AssignmentIDs {
			if a := s.st.IPAssignments[aid]; a != nil {
				taken[a.Network] = true
			}
		}
		step := uint64(1) << (network.BitLen() - cidr)
		count := uint64(1) << (cidr - res.CIDR)
		for i := uint64(0); i < count && i < 256; i++ {
			addr := addrAdd(network, i*step)
			if !taken[addr.String()] {
				out = append(out, fmt.Sprintf("%s/%d", addr, cidr))
			}
		}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"available": out})
}

func (s *Server) listDeviceIPs(w http.ResponseWriter, r *http.Request) {
	now := s.readLock()
	defer s.mu.RUnlock()
	d, err := s.device(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := []ipJSON{}
	for _, aid := range d.IPAssignmentIDs {
		if a := s.st.IPAssignments[aid]; a != nil && !a.VisibleAt.After(now) {
			out = append(out, s.renderAssignment(a))
		}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"ip_addresses": out})
}

// assignIP binds an elastic address to a device: POST /devices/{id}/ips.
func (s *Server) assignIP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Address string `json:"address"`
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
		if d.State == StateDeprovisioning {
			return nil, errorf(http.StatusUnprocessableEntity, "Device is being deprovisioned")
		}
		prefix, err := parseAddressOrPrefix(req.Address)
		if err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "Address is invalid")
		}
		res := s.reservationContaining(d.ProjectID, prefix)
		if res == nil {
			return nil, errorf(http.StatusUnprocessableEntity, msgNotReserved)
		}
		if res.State != "created" {
			return nil, errorf(http.StatusUnprocessableEntity, "IP reservation is "+res.State+" and cannot be assigned")
		}
		if res.Type != "global_ipv4" && res.Metro != d.Metro {
			return nil, errorf(http.StatusUnprocessableEntity, "Address is not available in the device's metro")
		}
		call := callOf(r)
		call.tags = d.Tags
		f, slow := s.faults.take(call, FaultEIPSlowAssign)
		if slow && f.Message != "" {
			return nil, errorf(http.StatusUnprocessableEntity, f.Message)
		}
		for _, aid := range res.AssignmentIDs {
			a := s.st.IPAssignments[aid]
			if p, err := netip.ParsePrefix(fmt.Sprintf("%s/%d", a.Network, a.CIDR)); err == nil && p.Overlaps(prefix) {
				return nil, errorf(http.StatusUnprocessableEntity, msgAddressTaken)
			}
		}
		a := &IPAssignment{ID: uuid.NewString(), ReservationID: res.ID, DeviceID: d.ID, Address: prefix.Addr().String(),
			Network: prefix.Masked().Addr().String(), CIDR: prefix.Bits(), CreatedAt: now}
		lag := s.timing.EIPAssignLag
		if slow {
			lag = f.Duration
		}
		if lag > 0 {
			a.VisibleAt = now.Add(lag)
		}
		s.st.IPAssignments[a.ID] = a
		res.AssignmentIDs = append(res.AssignmentIDs, a.ID)
		d.IPAssignmentIDs = append(d.IPAssignmentIDs, a.ID)
		return s.renderAssignment(a), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

// parseAddressOrPrefix accepts "127.64.1.2" and "127.64.1.2/32".
func parseAddressOrPrefix(v string) (netip.Prefix, error) {
	v = strings.TrimSpace(v)
	if strings.Contains(v, "/") {
		return netip.ParsePrefix(v)
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (s *Server) reservationContaining(projectID string, p netip.Prefix) *IPReservation {
	for _, id := range s.st.IPOrder[projectID] {
		res := s.st.IPReservations[id]
		if res.Management || res.Network == "" {
			continue
		}
		block, err := netip.ParsePrefix(fmt.Sprintf("%s/%d", res.Network, res.CIDR))
		if err == nil && block.Contains(p.Addr()) && p.Bits() >= block.Bits() {
			return res
		}
	}
	return nil
}
