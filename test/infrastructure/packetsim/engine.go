package packetsim

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/google/uuid"
)

// The state engine is lazy: every request first calls tick(now), which runs
// the transitions that became due. nextDue makes that check O(1) when
// nothing is pending, so a store of 10,000 idle devices costs nothing.

// readLock takes the read lock after running due transitions.
func (s *Server) readLock() time.Time {
	now := s.clock.Now()
	s.mu.RLock()
	if s.nextDue.IsZero() || now.Before(s.nextDue) {
		return now
	}
	s.mu.RUnlock()
	s.mu.Lock()
	s.tick(now)
	s.mu.Unlock()
	s.mu.RLock()
	return now
}

// writeLock takes the write lock after running due transitions and marks
// the state dirty for the state file.
func (s *Server) writeLock() time.Time {
	s.mu.Lock()
	now := s.clock.Now()
	s.tick(now)
	s.dirty = true
	return now
}

func (s *Server) tick(now time.Time) {
	s.st.Now = now
	if s.nextDue.IsZero() || now.Before(s.nextDue) {
		return
	}
	for _, d := range s.st.Devices {
		s.advanceDevice(d, now)
		if s.st.Devices[d.ID] == d {
			s.advanceVLANBatches(d, now)
		}
	}
	for _, ip := range s.st.IPReservations {
		if ip.State == "pending" && !ip.PendingUntil.IsZero() && !now.Before(ip.PendingUntil) {
			s.approveReservation(ip, ip.PendingUntil)
		}
	}
	s.dirty = true
	s.recomputeNextDue()
}

func (s *Server) recomputeNextDue() {
	s.nextDue = time.Time{}
	for _, d := range s.st.Devices {
		s.noteDue(deviceDue(d))
		s.noteDue(vlanBatchesDue(d))
	}
	for _, ip := range s.st.IPReservations {
		if ip.State == "pending" {
			s.noteDue(ip.PendingUntil)
		}
	}
}

func (s *Server) noteDue(t time.Time) {
	if !t.IsZero() && (s.nextDue.IsZero() || t.Before(s.nextDue)) {
		s.nextDue = t
	}
}

// deviceDue is the device's next event: a transition, a failure or a vanish.
func deviceDue(d *Device) time.Time {
	next := d.DueAt
	for _, t := range []time.Time{d.FailAt, d.VanishAt, terminationTime(d)} {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// terminationTime is when the device ends by its termination_time; zero once it is being
// deprovisioned anyway.
func terminationTime(d *Device) time.Time {
	if d.TerminationTime == nil || d.State == StateDeprovisioning {
		return time.Time{}
	}
	return *d.TerminationTime
}

func (s *Server) advanceDevice(d *Device, now time.Time) {
	for {
		at := deviceDue(d)
		if at.IsZero() || now.Before(at) {
			return
		}
		switch {
		case !d.VanishAt.IsZero() && !at.Before(d.VanishAt):
			s.removeDevice(d, at)
			return
		case d.TerminationTime != nil && !at.Before(*d.TerminationTime):
			s.terminate(d, at)
		case !d.FailAt.IsZero() && !at.Before(d.FailAt):
			d.FailAt = time.Time{}
			s.enterState(d, StateFailed, at)
		default:
			s.enterState(d, d.NextState, at)
		}
		if d.State == StateGone {
			return
		}
	}
}

// schedule sets the next transition, honouring a device_stuck hold.
func (s *Server) schedule(d *Device, next string, at time.Time) {
	d.NextState = next
	if d.Hold && d.State == d.HoldState {
		if d.HoldUntil.IsZero() {
			d.DueAt = time.Time{} // stuck forever
			return
		}
		if at.Before(d.HoldUntil) {
			at = d.HoldUntil
		}
	}
	d.DueAt = at
	s.noteDue(at)
}

// enterState moves a device to state at the given (virtual) time and sets
// up what follows, filling fields when the real API fills them.
func (s *Server) enterState(d *Device, state string, at time.Time) {
	prev := d.State
	d.State, d.StateSince, d.UpdatedAt = state, at, at
	d.NextState, d.DueAt = "", time.Time{}
	t := s.timing
	switch state {
	case StateQueued:
		s.addEvent(d, at, "provisioning.101", "Device queued for provisioning")
		s.schedule(d, StateProvisioning, at.Add(t.Queued))
	case StateProvisioning:
		s.startProvisioning(d, at)
	case StateActive:
		s.becomeActive(d, prev, at)
	case StateInactive:
		s.addEvent(d, at, "power.off", "Device powered off")
	case StateDeprovisioning:
		s.addEvent(d, at, "deprovisioning.101", "Deprovisioning started")
		s.schedule(d, StateGone, at.Add(t.Deprovisioning+d.ExtraDeprovision))
	case StatePoweringOff:
		s.schedule(d, StateInactive, at.Add(t.PowerOff))
	case StatePoweringOn:
		s.schedule(d, StateActive, at.Add(t.PowerOn))
	case StateReinstalling:
		s.addEvent(d, at, "reinstall.101", "Reinstall started")
		d.ProvisioningStarted, d.ProvisioningDuration = at, t.Reinstall
		s.schedule(d, StateActive, at.Add(t.Reinstall))
	case StateFailed:
		s.addEvent(d, at, "provisioning.failed", "Provisioning failed")
	case StateGone:
		s.removeDevice(d, at)
	}
}

// startProvisioning gives a device its management IPs (failing it when there are none left)
// and schedules it to become active once its OS is installed.
func (s *Server) startProvisioning(d *Device, at time.Time) {
	if err := s.allocateManagementIPs(d, at); err != nil {
		s.addEvent(d, at, "provisioning.failed", err.Error())
		d.State = StateFailed
		return
	}
	dur := s.timing.Provisioning
	if d.OS == "custom_ipxe" {
		dur = s.timing.CustomIPXE
	}
	d.ProvisioningStarted, d.ProvisioningDuration = at, dur
	s.addEvent(d, at, "provisioning.104", "Provisioning started")
	s.schedule(d, StateActive, at.Add(dur))
}

// becomeActive records how a device became active: a finished (re)install gets a new root
// password, a power-on just its event.
func (s *Server) becomeActive(d *Device, prev string, at time.Time) {
	switch prev {
	case StateProvisioning, StateReinstalling:
		d.RootPassword = uuid.NewString()[:12]
		s.addEvent(d, at, "provisioning.109", "Provision complete! Your device is ready to go.")
	case StatePoweringOn:
		s.addEvent(d, at, "power.on", "Device powered on")
	}
}

func (s *Server) addEvent(d *Device, at time.Time, typ, body string) {
	ev := Event{ID: uuid.NewString(), DeviceID: d.ID, Type: typ, Body: body, State: "success", CreatedAt: at}
	d.Events = append(d.Events, ev)
}

// removeDevice is the end of deprovisioning (or an out-of-band vanish):
// everything the device held is released.
func (s *Server) removeDevice(d *Device, at time.Time) {
	st := s.st
	d.State = StateGone
	st.deleteDevice(d)
	if d.GhostFor > 0 {
		ghost := d.clone()
		ghost.State = StateDeprovisioning
		st.Ghosts = append(st.Ghosts, ghostDevice{Device: ghost, Until: at.Add(d.GhostFor)})
	}
	if d.HardwareReservationID != "" {
		if hw := st.HardwareReservations[d.HardwareReservationID]; hw != nil && hw.DeviceID == d.ID {
			hw.DeviceID = ""
			hw.WipeUntil = at.Add(s.timing.HardwareWipe + d.ExtraDeprovision)
		}
	} else if plans := st.Capacity[d.Metro]; plans != nil {
		plans[d.Plan]++
	}
	for _, aid := range d.IPAssignmentIDs {
		s.deleteAssignment(aid)
	}
	for id, bs := range st.BGPSessions {
		if bs.DeviceID == d.ID {
			delete(st.BGPSessions, id)
		}
	}
	for _, p := range d.Ports {
		delete(st.portOwner, p.ID)
	}
	// The project's event log outlives the device, as Packet's does.
	st.ProjectEvents[d.ProjectID] = append(st.ProjectEvents[d.ProjectID], d.Events...)
	st.ProjectEvents[d.ProjectID] = append(st.ProjectEvents[d.ProjectID],
		Event{ID: uuid.NewString(), DeviceID: d.ID, Type: "instance.deleted", Body: "Device " + d.Hostname + " deleted", State: "success", CreatedAt: at})
}

// managementBlock returns (creating it on first use) the project-level
// management reservation of a family in a facility, like the real API does
// for the first device of a project in a facility.
func (s *Server) managementBlock(projectID, facility, typ string, at time.Time) (*IPReservation, error) {
	key := projectID + "|" + facility + "|" + typ
	if id, ok := s.st.MgmtBlocks[key]; ok {
		if r := s.st.IPReservations[id]; r != nil {
			return r, nil
		}
	}
	pool, cidr := s.seed.IPPools.PublicIPv4, 29
	switch typ {
	case "private_ipv4":
		pool, cidr = s.seed.IPPools.PrivateIPv4, 25
	case "public_ipv6":
		pool, cidr = s.seed.IPPools.PublicIPv6, 56
	}
	network, err := s.st.Alloc.alloc(pool, cidr)
	if err != nil {
		return nil, err
	}
	fac := s.catalog.facility(facility)
	r := &IPReservation{ID: uuid.NewString(), ProjectID: projectID, Type: typ, State: "created", Network: network.String(),
		CIDR: cidr, Metro: fac.metro.Code, Facility: facility, Management: true, Tags: []string{}, Quantity: 1 << (network.BitLen() - cidr),
		CreatedAt: at, UpdatedAt: at}
	s.st.IPReservations[r.ID] = r
	s.st.IPOrder[projectID] = append(s.st.IPOrder[projectID], r.ID)
	s.st.MgmtBlocks[key] = r.ID
	return r, nil
}

// allocateManagementIPs gives a provisioning device its management addresses
// (by default a public /31, IPv6 /127 and private /31), as assignments of the
// project's management blocks.
func (s *Server) allocateManagementIPs(d *Device, at time.Time) error {
	if len(d.IPAssignmentIDs) > 0 {
		return nil // reinstall or rescue keep their addresses
	}
	for _, spec := range s.managementSpecs(d) {
		block, err := s.managementBlock(d.ProjectID, d.Facility, spec.typ, at)
		if err != nil {
			return fmt.Errorf("%s", msgInsufficientIPSpace)
		}
		network, err := s.st.Alloc.alloc(spec.pool, spec.cidr)
		if err != nil {
			return fmt.Errorf("%s", msgInsufficientIPSpace)
		}
		a := &IPAssignment{ID: uuid.NewString(), ReservationID: block.ID, DeviceID: d.ID, Address: hostAddress(network, spec.cidr).String(),
			Network: network.String(), CIDR: spec.cidr, Management: true, CreatedAt: at}
		s.st.IPAssignments[a.ID] = a
		block.AssignmentIDs = append(block.AssignmentIDs, a.ID)
		d.IPAssignmentIDs = append(d.IPAssignmentIDs, a.ID)
	}
	return nil
}

// deleteAssignment unbinds an assignment; management addresses go back to
// the pool.
func (s *Server) deleteAssignment(id string) {
	a := s.st.IPAssignments[id]
	if a == nil {
		return
	}
	delete(s.st.IPAssignments, id)
	if r := s.st.IPReservations[a.ReservationID]; r != nil {
		r.AssignmentIDs = removeID(r.AssignmentIDs, id)
	}
	if d := s.st.Devices[a.DeviceID]; d != nil {
		d.IPAssignmentIDs = removeID(d.IPAssignmentIDs, id)
	}
	if a.Management {
		pool := s.seed.IPPools.PublicIPv4
		if r := s.st.IPReservations[a.ReservationID]; r != nil && r.Type == "private_ipv4" {
			pool = s.seed.IPPools.PrivateIPv4
		} else if addr, err := netip.ParseAddr(a.Network); err == nil && addr.Is6() {
			pool = s.seed.IPPools.PublicIPv6
		}
		s.st.Alloc.free(pool, a.CIDR, a.Network)
	}
}
