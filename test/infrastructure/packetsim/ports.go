package packetsim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// newPorts gives a device the default layer-3 bonded layout: bond0 with
// eth0 and eth1, from which packngo derives network type "layer3".
func (s *Server) newPorts(d *Device) []Port {
	mac := func(n int) string {
		return fmt.Sprintf("b8:ce:f6:%s:%s:%02x", d.ID[0:2], d.ID[2:4], n)
	}
	ports := []Port{
		{ID: uuid.NewString(), Name: "bond0", Type: "NetworkBondPort", Bonded: true, NetworkType: "layer3"},
		{ID: uuid.NewString(), Name: "eth0", Type: "NetworkPort", MAC: mac(0), Bonded: true, BondName: "bond0"},
		{ID: uuid.NewString(), Name: "eth1", Type: "NetworkPort", MAC: mac(1), Bonded: true, BondName: "bond0"},
	}
	for _, p := range ports {
		s.st.portOwner[p.ID] = d.ID
	}
	return ports
}

// port finds a port and its device under a held lock.
func (s *Server) port(r *http.Request) (*Device, *Port, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, nil, err
	}
	d := s.st.Devices[s.st.portOwner[id]]
	if d == nil {
		return nil, nil, notFound()
	}
	if !s.tokenAllows(r, d.ProjectID) {
		return nil, nil, forbidden("port")
	}
	for i := range d.Ports {
		if d.Ports[i].ID == id {
			return d, &d.Ports[i], nil
		}
	}
	return nil, nil, notFound()
}

func (s *Server) getPort(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	d, p, err := s.port(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderPort(d, p))
}

// resolveVLAN accepts a virtual network UUID or a VXLAN number.
func (s *Server) resolveVLAN(projectID, vnid string) *VirtualNetwork {
	if isUUID(vnid) {
		if vn := s.st.VirtualNetworks[strings.ToLower(vnid)]; vn != nil && vn.ProjectID == projectID {
			return vn
		}
		return nil
	}
	n, err := strconv.Atoi(vnid)
	if err != nil {
		return nil
	}
	for _, vn := range s.st.VirtualNetworks {
		if vn.ProjectID == projectID && vn.VXLAN == n {
			return vn
		}
	}
	return nil
}

// updateNetworkType recomputes bond0's network type from the layout.
func updateNetworkType(d *Device) {
	bond := &d.Ports[0]
	allBonded, vlans := true, 0
	for _, p := range d.Ports {
		allBonded = allBonded && p.Bonded
		vlans += len(p.VLANs)
	}
	switch {
	case bond.NetworkType == "layer2-bonded" || bond.NetworkType == "layer2-individual":
		if !allBonded {
			bond.NetworkType = "layer2-individual"
		} else {
			bond.NetworkType = "layer2-bonded"
		}
	case !allBonded:
		bond.NetworkType = "hybrid"
	case vlans > 0:
		bond.NetworkType = "hybrid-bonded"
	default:
		bond.NetworkType = "layer3"
	}
}

// Errors of port operations whose exact words Packet does not publish.
const (
	msgPortDeviceNotActive = "Device must be active to change its network configuration"
	msgPortBonded          = "Port is bonded: disbond it before assigning virtual networks to it"
	msgBondNotBonded       = "Bond port is disbonded: assign virtual networks to its member ports"
	msgPortHasVLANs        = "Virtual networks must be unassigned before bonding the port"
	msgBondLayer3Disbond   = "Bond port must be converted to layer 2 before all its ports are disbonded"
)

// requireActive refuses network changes on a device that is not active (queued,
// provisioning, powered off, ...), with a 422 as Packet answers.
func requireActive(d *Device) error {
	if d.State != StateActive {
		return errorf(http.StatusUnprocessableEntity, msgPortDeviceNotActive)
	}
	return nil
}

// vlanRefusal tells why virtual networks may not be assigned to the port, or "" when they
// may: to a bond port while it is bonded (hybrid-bonded, layer2-bonded), to an eth port once
// it is out of its bond (hybrid on eth1, layer2-individual).
func vlanRefusal(p *Port) string {
	switch {
	case p.Type == "NetworkPort" && p.Bonded:
		return msgPortBonded
	case p.Type == "NetworkBondPort" && !p.Bonded:
		return msgBondNotBonded
	}
	return ""
}

// canCarryVLANs is vlanRefusal as a 422.
func canCarryVLANs(p *Port) error {
	if msg := vlanRefusal(p); msg != "" {
		return errorf(http.StatusUnprocessableEntity, msg)
	}
	return nil
}

// assignVLAN puts a virtual network on a port (a no-op when it is there).
func assignVLAN(p *Port, vnID string, at time.Time) {
	if hasTag(p.VLANs, vnID) {
		return
	}
	p.VLANs = append(p.VLANs, vnID)
	if p.AssignedAt == nil {
		p.AssignedAt = map[string]time.Time{}
	}
	p.AssignedAt[vnID] = at
}

// unassignVLAN takes a virtual network off a port, and off its native VLAN.
func unassignVLAN(p *Port, vnID string) {
	p.VLANs = removeID(p.VLANs, vnID)
	delete(p.AssignedAt, vnID)
	if p.NativeVLAN == vnID {
		p.NativeVLAN = ""
	}
}

// portAction serves assign, unassign, bond and disbond.
func (s *Server) portAction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		VNID        string `json:"vnid"`
		BulkEnable  bool   `json:"bulk_enable"`
		BulkDisable bool   `json:"bulk_disable"`
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
		op := r.PathValue("op")
		if op != "assign" && op != "unassign" && op != "bond" && op != "disbond" {
			return nil, notFound()
		}
		if err := requireActive(d); err != nil {
			return nil, err
		}
		switch op {
		case "assign", "unassign":
			err = s.portVLANAction(d, p, op, req.VNID, now)
		case "bond":
			err = bondPorts(d, p, req.BulkEnable)
		case "disbond":
			err = disbondPorts(d, p, req.BulkDisable)
		}
		if err != nil {
			return nil, err
		}
		updateNetworkType(d)
		d.UpdatedAt = now
		return s.renderPort(d, p), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// portVLANAction assigns (op "assign") or unassigns the virtual network vnid, which must be in
// the device's metro, on port p.
func (s *Server) portVLANAction(d *Device, p *Port, op, vnid string, now time.Time) error {
	vn := s.resolveVLAN(d.ProjectID, vnid)
	if vn == nil {
		return errorf(http.StatusUnprocessableEntity, "Virtual network not found")
	}
	if vn.Metro != d.Metro {
		return errorf(http.StatusUnprocessableEntity, "Virtual network is not in the device's metro")
	}
	if op != "assign" {
		if !hasTag(p.VLANs, vn.ID) {
			return errorf(http.StatusUnprocessableEntity, "Virtual network is not assigned to this port")
		}
		unassignVLAN(p, vn.ID)
		return nil
	}
	if hasTag(p.VLANs, vn.ID) {
		return errorf(http.StatusUnprocessableEntity, "Virtual network is already assigned to this port")
	}
	if err := canCarryVLANs(p); err != nil {
		return err
	}
	assignVLAN(p, vn.ID, now)
	return nil
}

// bondPorts bonds an eth port back into bond0 (or all of them, bulk), which needs its VLANs
// gone; bonding a bonded port changes nothing.
func bondPorts(d *Device, p *Port, bulk bool) error {
	for i := range d.Ports {
		if (d.Ports[i].ID == p.ID || bulk) && !d.Ports[i].Bonded && d.Ports[i].Type == "NetworkPort" && len(d.Ports[i].VLANs) > 0 {
			return errorf(http.StatusUnprocessableEntity, msgPortHasVLANs)
		}
	}
	for i := range d.Ports {
		if d.Ports[i].ID == p.ID || bulk {
			d.Ports[i].Bonded = true
		}
	}
	return nil
}

// disbondPorts takes port p (or, bulk, every eth port) out of its bond; a layer-3 bond cannot
// be disbonded in bulk. Disbonding a port out of its bond twice changes nothing.
func disbondPorts(d *Device, p *Port, bulk bool) error {
	if p.Type == "NetworkBondPort" && bulk && p.NetworkType != "layer2-bonded" && p.NetworkType != "layer2-individual" {
		return errorf(http.StatusUnprocessableEntity, msgBondLayer3Disbond)
	}
	for i := range d.Ports {
		if d.Ports[i].ID == p.ID || bulk && d.Ports[i].Type == "NetworkPort" {
			if d.Ports[i].Type == "NetworkBondPort" && !bulk {
				return errorf(http.StatusUnprocessableEntity, "Hardware invalid server type")
			}
			d.Ports[i].Bonded = d.Ports[i].Type == "NetworkBondPort" && !bulk
		}
	}
	return nil
}

// portConvert serves convert/layer-2 (the device loses its management IP
// assignments) and convert/layer-3 (they come back, only those of request_ips
// when it names any; VLANs must be gone).
func (s *Server) portConvert(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RequestIPs []ipAddressRequest `json:"request_ips"`
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
		layer := r.PathValue("layer")
		if layer != "layer-2" && layer != "layer-3" {
			return nil, notFound()
		}
		if err := requireActive(d); err != nil {
			return nil, err
		}
		if p.Type != "NetworkBondPort" {
			return nil, errorf(http.StatusUnprocessableEntity, "Port must be a bond port")
		}
		isLayer2 := p.NetworkType == "layer2-bonded" || p.NetworkType == "layer2-individual"
		if isLayer2 == (layer == "layer-2") {
			return s.renderPort(d, p), nil // already there (layer 3 includes hybrid): nothing to do
		}
		if layer == "layer-2" {
			s.convertToLayer2(d, p)
		} else if err := s.convertToLayer3(d, p, req.RequestIPs, now); err != nil {
			return nil, err
		}
		updateNetworkType(d)
		d.UpdatedAt = now
		return s.renderPort(d, p), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// convertToLayer2 makes the bond layer 2; the device loses its management IP assignments.
func (s *Server) convertToLayer2(d *Device, p *Port) {
	p.NetworkType = "layer2-bonded"
	for _, aid := range append([]string(nil), d.IPAssignmentIDs...) {
		if a := s.st.IPAssignments[aid]; a != nil && a.Management {
			s.deleteAssignment(aid)
		}
	}
}

// convertToLayer3 makes the bond layer 3 once no port carries VLANs: every port is bonded and
// the management IPs (only those of requestIPs when it names any) are allocated again.
func (s *Server) convertToLayer3(d *Device, p *Port, requestIPs []ipAddressRequest, now time.Time) error {
	for _, port := range d.Ports {
		if len(port.VLANs) > 0 {
			return errorf(http.StatusUnprocessableEntity, "Virtual networks must be unassigned before converting to layer 3")
		}
	}
	if len(requestIPs) > 0 {
		ips, err := planManagementIPs(requestIPs, s.catalog.os(d.OS), 0, false)
		if err != nil {
			return err
		}
		d.ManagementIPs = ips
	}
	p.NetworkType = "layer3"
	for i := range d.Ports {
		d.Ports[i].Bonded = true
	}
	if err := s.allocateManagementIPs(d, now); err != nil {
		return errorf(http.StatusUnprocessableEntity, err.Error())
	}
	return nil
}

func (s *Server) portNativeVLAN(w http.ResponseWriter, r *http.Request) {
	var req struct {
		VNID string `json:"vnid"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if v := r.URL.Query().Get("vnid"); v != "" {
		req.VNID = v
	}
	s.writeLock()
	body, err := func() (any, error) {
		d, p, err := s.port(r)
		if err != nil {
			return nil, err
		}
		if r.Method == http.MethodDelete {
			p.NativeVLAN = ""
			return s.renderPort(d, p), nil
		}
		vn := s.resolveVLAN(d.ProjectID, req.VNID)
		if vn == nil || !hasTag(p.VLANs, vn.ID) {
			return nil, errorf(http.StatusUnprocessableEntity, "Virtual network must be assigned to the port before it can be native")
		}
		p.NativeVLAN = vn.ID
		return s.renderPort(d, p), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) renderVirtualNetwork(vn *VirtualNetwork) map[string]any {
	out := map[string]any{"id": vn.ID, "description": vn.Description, "vxlan": vn.VXLAN, "metro_code": vn.Metro,
		"created_at": rfc3339(vn.CreatedAt), "href": apiPrefix + "/virtual-networks/" + vn.ID,
		"assigned_to": href{Href: apiPrefix + "/projects/" + vn.ProjectID}, "metro": s.catalog.metro(vn.Metro).json}
	// instances are the devices with a port on the network, as Packet lists them.
	instances := []href{}
	for _, id := range s.st.DeviceOrder[vn.ProjectID] {
		if d := s.st.Devices[id]; d != nil && deviceOnVLAN(d, vn.ID) {
			instances = append(instances, href{Href: apiPrefix + "/devices/" + d.ID})
		}
	}
	out["instances"] = instances
	if vn.Facility != "" {
		out["facility_code"] = vn.Facility
		out["facility"] = s.catalog.facility(vn.Facility).json
	}
	return out
}

func (s *Server) listVirtualNetworks(w http.ResponseWriter, r *http.Request) {
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
	metro := r.URL.Query().Get("metro")
	out := []any{}
	for _, id := range s.st.VNOrder {
		vn := s.st.VirtualNetworks[id]
		if vn.ProjectID == projectID && (metro == "" || strings.EqualFold(metro, vn.Metro)) {
			out = append(out, s.renderVirtualNetwork(vn))
		}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"virtual_networks": out})
}

func (s *Server) createVirtualNetwork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Description string `json:"description"`
		Metro       string `json:"metro"`
		Facility    string `json:"facility"`
		VXLAN       int    `json:"vxlan"`
	}
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
		if _, err := s.project(r, projectID); err != nil {
			return nil, err
		}
		vn := &VirtualNetwork{ID: uuid.NewString(), ProjectID: projectID, Description: req.Description, CreatedAt: now}
		if err := s.placeVirtualNetwork(vn, req.Metro, req.Facility); err != nil {
			return nil, err
		}
		vxlan, err := s.pickVXLAN(projectID, vn.Metro, req.VXLAN)
		if err != nil {
			return nil, err
		}
		vn.VXLAN = vxlan
		s.st.VirtualNetworks[vn.ID] = vn
		s.st.VNOrder = append(s.st.VNOrder, vn.ID)
		return s.renderVirtualNetwork(vn), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

// placeVirtualNetwork puts a new virtual network in the metro asked for, or in the facility (and
// its metro) asked for; one of them is required.
func (s *Server) placeVirtualNetwork(vn *VirtualNetwork, metro, facility string) error {
	switch {
	case metro != "":
		m := s.catalog.metro(metro)
		if m == nil {
			return errorf(http.StatusUnprocessableEntity, "Metro is not valid")
		}
		vn.Metro = m.Code
	case facility != "":
		f := s.catalog.facility(facility)
		if f == nil {
			return errorf(http.StatusUnprocessableEntity, "Facility is not valid")
		}
		vn.Metro, vn.Facility = f.metro.Code, f.Code
	default:
		return errorf(http.StatusUnprocessableEntity, "Metro can't be blank")
	}
	return nil
}

// pickVXLAN is the VXLAN of a new virtual network in the project's metro: the one asked for if
// it is valid and free there, otherwise the first free one from 1000 to 1999.
func (s *Server) pickVXLAN(projectID, metro string, want int) (int, error) {
	used := map[int]bool{}
	for _, other := range s.st.VirtualNetworks {
		if other.ProjectID == projectID && other.Metro == metro {
			used[other.VXLAN] = true
		}
	}
	if want != 0 {
		if want < 2 || want > 3999 || used[want] {
			return 0, errorf(http.StatusUnprocessableEntity, "Vxlan is invalid or already taken")
		}
		return want, nil
	}
	for n := 1000; n <= 1999; n++ {
		if !used[n] {
			return n, nil
		}
	}
	return 0, errorf(http.StatusUnprocessableEntity, "No free VXLAN left in 1000-1999")
}

func (s *Server) virtualNetwork(r *http.Request) (*VirtualNetwork, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	vn := s.st.VirtualNetworks[id]
	if vn == nil {
		return nil, notFound()
	}
	if !s.tokenAllows(r, vn.ProjectID) {
		return nil, forbidden("virtual network")
	}
	return vn, nil
}

func (s *Server) getVirtualNetwork(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	vn, err := s.virtualNetwork(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.renderVirtualNetwork(vn))
}

func (s *Server) deleteVirtualNetwork(w http.ResponseWriter, r *http.Request) {
	s.writeLock()
	err := func() error {
		vn, err := s.virtualNetwork(r)
		if err != nil {
			return err
		}
		for _, d := range s.st.Devices {
			for _, p := range d.Ports {
				if hasTag(p.VLANs, vn.ID) {
					return errorf(http.StatusUnprocessableEntity, "Virtual network is still assigned to ports and cannot be deleted")
				}
			}
		}
		delete(s.st.VirtualNetworks, vn.ID)
		s.st.VNOrder = removeID(s.st.VNOrder, vn.ID)
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

// deviceOnVLAN reports whether a port of the device carries the virtual network.
func deviceOnVLAN(d *Device, vnID string) bool {
	for _, p := range d.Ports {
		if hasTag(p.VLANs, vnID) {
			return true
		}
	}
	return false
}
