package packetsim

import (
	"encoding/json"
	"net/netip"
	"time"
)

// JSON shapes of the API. They follow what packngo v0.31.0 decodes and avoid
// the shapes that break it (reference section 1.9): customdata is always an
// object, project references are objects, timestamps are RFC 3339.

type deviceJSON struct {
	ID                     string          `json:"id"`
	ShortID                string          `json:"short_id"`
	Href                   string          `json:"href"`
	Hostname               string          `json:"hostname"`
	Description            *string         `json:"description,omitempty"`
	State                  string          `json:"state"`
	CreatedAt              string          `json:"created_at"`
	UpdatedAt              string          `json:"updated_at"`
	Locked                 bool            `json:"locked"`
	BillingCycle           string          `json:"billing_cycle"`
	Tags                   []string        `json:"tags"`
	IPAddresses            []ipJSON        `json:"ip_addresses"`
	Volumes                []href          `json:"volumes"`
	OS                     json.RawMessage `json:"operating_system"`
	Plan                   json.RawMessage `json:"plan"`
	Facility               json.RawMessage `json:"facility"`
	Metro                  json.RawMessage `json:"metro"`
	Project                any             `json:"project"`
	ProvisioningEvents     any             `json:"provisioning_events,omitempty"` // []eventJSON, or []href when excluded
	ProvisioningPercentage float64         `json:"provisioning_percentage,omitempty"`
	UserData               string          `json:"userdata"`
	User                   string          `json:"user"`
	RootPassword           string          `json:"root_password,omitempty"`
	Storage                json.RawMessage `json:"storage,omitempty"`
	IPXEScriptURL          string          `json:"ipxe_script_url,omitempty"`
	AlwaysPXE              bool            `json:"always_pxe"`
	HardwareReservation    any             `json:"hardware_reservation,omitempty"`
	SpotInstance           bool            `json:"spot_instance"`
	SpotPriceMax           float64         `json:"spot_price_max,omitempty"`
	TerminationTime        *string         `json:"termination_time,omitempty"`
	NetworkPorts           any             `json:"network_ports"`
	NetworkType            string          `json:"network_type,omitempty"`
	CustomData             map[string]any  `json:"customdata"`
	SSHKeys                []any           `json:"ssh_keys"`
	SwitchUUID             string          `json:"switch_uuid"`
	SOS                    string          `json:"sos"`
	CreatedBy              any             `json:"created_by"`
}

func (s *Server) renderDevice(d *Device, inc includes, now time.Time) deviceJSON {
	fac := s.catalog.facility(d.Facility)
	osEntry := s.catalog.os(d.OS)
	out := deviceJSON{ID: d.ID, ShortID: d.ShortID, Href: apiPrefix + "/devices/" + d.ID, Hostname: d.Hostname,
		State: d.State, CreatedAt: rfc3339(d.CreatedAt), UpdatedAt: rfc3339(d.UpdatedAt), Locked: d.Locked,
		BillingCycle: d.BillingCycle, Tags: d.Tags, IPAddresses: []ipJSON{}, Volumes: []href{},
		OS: osEntry.json, User: loginUser(osEntry), Storage: d.Storage, Plan: s.catalog.plan(d.Plan).jsonLite, Facility: fac.json, Metro: fac.metro.json,
		UserData: d.UserData, IPXEScriptURL: d.IPXEScriptURL, AlwaysPXE: d.AlwaysPXE, SpotInstance: d.SpotInstance,
		SpotPriceMax: d.SpotPriceMax, CustomData: d.CustomData, SwitchUUID: stableID("switch", d.Facility+d.ID[:2]),
		SOS:       d.ShortID + "@sos." + d.Facility + ".platformequinix.com",
		CreatedBy: s.renderUserLite()}
	if d.Description != "" {
		desc := d.Description
		out.Description = &desc
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.CustomData == nil {
		out.CustomData = map[string]any{}
	}
	if d.TerminationTime != nil {
		t := rfc3339(*d.TerminationTime)
		out.TerminationTime = &t
	}
	if d.State == StateActive && now.Sub(d.StateSince) < s.timing.RootPasswordExpiry {
		out.RootPassword = d.RootPassword
	}
	s.renderDeviceReferences(&out, d, inc, now)
	for _, aid := range d.IPAssignmentIDs {
		if a := s.st.IPAssignments[aid]; a != nil && !a.VisibleAt.After(now) {
			out.IPAddresses = append(out.IPAddresses, s.renderAssignment(a))
		}
	}
	var ports []portJSON
	for _, p := range d.Ports {
		ports = append(ports, s.renderPort(d, &p))
		// The device's network type is its bond's, which alone tells hybrid-bonded (layer 3
		// with VLANs on bond0) from layer3: packngo's GetNetworkType cannot.
		if p.Type == "NetworkBondPort" && out.NetworkType == "" {
			out.NetworkType = p.NetworkType
		}
	}
	out.NetworkPorts = ports
	out.SSHKeys = make([]any, 0, len(d.SSHKeyIDs))
	for _, kid := range d.SSHKeyIDs {
		if k := s.st.SSHKeys[kid]; k != nil && inc.has("ssh_keys") {
			out.SSHKeys = append(out.SSHKeys, s.renderSSHKey(k))
		} else {
			out.SSHKeys = append(out.SSHKeys, href{Href: apiPrefix + "/ssh-keys/" + kid})
		}
	}
	renderProvisioning(&out, d, now)
	s.collapseExcluded(&out, d, inc)
	return out
}

// collapseExcluded turns the nested objects a request excluded into references, as Packet does
// for exclude=: {"href": ...} in place of each object.
func (s *Server) collapseExcluded(out *deviceJSON, d *Device, inc includes) {
	ref := func(path string) json.RawMessage { return mustJSON(href{Href: apiPrefix + path}) }
	if inc.excludes("plan") {
		out.Plan = ref("/plans/" + s.catalog.plan(d.Plan).ID)
	}
	if inc.excludes("operating_system") {
		out.OS = ref("/operating-systems/" + d.OS)
	}
	if inc.excludes("facility") {
		out.Facility = ref("/facilities/" + s.catalog.facility(d.Facility).ID)
	}
	if events, ok := out.ProvisioningEvents.([]eventJSON); ok && inc.excludes("provisioning_events") {
		refs := make([]href, 0, len(events))
		for _, ev := range events {
			refs = append(refs, href{Href: ev.Href})
		}
		out.ProvisioningEvents = refs
	}
	if inc.excludes("network_ports") {
		refs := make([]href, 0, len(d.Ports))
		for _, p := range d.Ports {
			refs = append(refs, href{Href: apiPrefix + "/ports/" + p.ID})
		}
		out.NetworkPorts = refs
	}
}

// renderDeviceReferences fills the device's project, creator and hardware reservation: whole
// when include= asks for them, otherwise as references (the creator is one already).
func (s *Server) renderDeviceReferences(out *deviceJSON, d *Device, inc includes, now time.Time) {
	if inc.has("project") {
		out.Project = s.renderProject(s.st.Projects[d.ProjectID], includes{})
	} else {
		out.Project = href{Href: apiPrefix + "/projects/" + d.ProjectID}
	}
	if inc.has("created_by") {
		out.CreatedBy = s.renderUser()
	}
	if d.HardwareReservationID != "" {
		if hw := s.st.HardwareReservations[d.HardwareReservationID]; hw != nil && inc.has("hardware_reservation") {
			out.HardwareReservation = s.renderHardwareReservation(hw, includes{}, now)
		} else {
			out.HardwareReservation = href{Href: apiPrefix + "/hardware-reservations/" + d.HardwareReservationID}
		}
	}
}

// renderProvisioning fills the provisioning events of a device that has started provisioning,
// and how far along a (re)install under way is.
func renderProvisioning(out *deviceJSON, d *Device, now time.Time) {
	if d.ProvisioningStarted.IsZero() {
		return
	}
	events := make([]eventJSON, 0, len(d.Events))
	for _, ev := range d.Events {
		events = append(events, renderEvent(ev, d.ID))
	}
	if len(events) > 0 {
		out.ProvisioningEvents = events
	}
	if d.State == StateProvisioning || d.State == StateReinstalling {
		pct := 100.0
		if d.ProvisioningDuration > 0 {
			pct = min(100, float64(now.Sub(d.ProvisioningStarted))/float64(d.ProvisioningDuration)*100)
		}
		out.ProvisioningPercentage = pct
	}
}

// loginUser is the account a device's operating system is provisioned with: Packet reports
// "root", and "Admin" on Windows.
func loginUser(o *osEntry) string {
	if o.Distro == "windows" {
		return "Admin"
	}
	return "root"
}

type eventJSON struct {
	ID            string `json:"id"`
	State         string `json:"state"`
	Type          string `json:"type"`
	Body          string `json:"body"`
	Interpolated  string `json:"interpolated"`
	Relationships []href `json:"relationships"`
	CreatedAt     string `json:"created_at"`
	Href          string `json:"href"`
}

// renderEvent renders an event; its relationships name the device it is about, also when it
// is listed with the project's events.
func renderEvent(ev Event, deviceID string) eventJSON {
	rel := []href{}
	if deviceID == "" {
		deviceID = ev.DeviceID
	}
	if deviceID != "" {
		rel = append(rel, href{Href: apiPrefix + "/devices/" + deviceID})
	}
	return eventJSON{ID: ev.ID, State: ev.State, Type: ev.Type, Body: ev.Body, Interpolated: ev.Body, Relationships: rel,
		CreatedAt: rfc3339(ev.CreatedAt), Href: apiPrefix + "/events/" + ev.ID}
}

// ipJSON covers both IP reservations and assignments (IpAddressCommon plus
// the extras of each kind).
type ipJSON struct {
	ID            string          `json:"id"`
	Href          string          `json:"href"`
	Type          string          `json:"type"`
	AddressFamily int             `json:"address_family"`
	Public        bool            `json:"public"`
	Management    bool            `json:"management"`
	Manageable    bool            `json:"manageable"`
	GlobalIP      bool            `json:"global_ip"`
	Enabled       bool            `json:"enabled"`
	Address       string          `json:"address"`
	Network       string          `json:"network"`
	Gateway       string          `json:"gateway"`
	Netmask       string          `json:"netmask"`
	CIDR          int             `json:"cidr"`
	Metro         json.RawMessage `json:"metro,omitempty"` // none for global addresses
	Project       href            `json:"project"`
	Tags          []string        `json:"tags,omitempty"`
	ParentBlock   *parentBlock    `json:"parent_block,omitempty"`
	CustomData    map[string]any  `json:"customdata"`
	CreatedAt     string          `json:"created_at"`
	UpdatedAt     string          `json:"updated_at,omitempty"`
	// Assignment only.
	AssignedTo *href `json:"assigned_to,omitempty"`
	// Reservation only.
	Assignments []any           `json:"assignments,omitempty"`
	Facility    json.RawMessage `json:"facility,omitempty"`
	Available   string          `json:"available,omitempty"`
	Addon       *bool           `json:"addon,omitempty"`
	Bill        *bool           `json:"bill,omitempty"`
	State       string          `json:"state,omitempty"`
	Details     *string         `json:"details,omitempty"`
}

type parentBlock struct {
	Network string `json:"network"`
	Netmask string `json:"netmask"`
	CIDR    int    `json:"cidr"`
	Href    string `json:"href"`
}

func (s *Server) renderAssignment(a *IPAssignment) ipJSON {
	r := s.st.IPReservations[a.ReservationID]
	network, _ := netip.ParseAddr(a.Network)
	out := ipJSON{ID: a.ID, Href: apiPrefix + "/ips/" + a.ID, Type: "IPAssignment", AddressFamily: 4, Public: r.Type != "private_ipv4",
		Management: a.Management, Manageable: true, Enabled: true, Address: a.Address, Network: a.Network,
		Gateway: a.Network, Netmask: netmask(network, a.CIDR), CIDR: a.CIDR, Metro: s.ipMetro(r), GlobalIP: r.Type == "global_ipv4",
		Project: href{Href: apiPrefix + "/projects/" + r.ProjectID}, CustomData: map[string]any{},
		CreatedAt: rfc3339(a.CreatedAt), AssignedTo: &href{Href: apiPrefix + "/devices/" + a.DeviceID}}
	if network.Is6() {
		out.AddressFamily = 6
	}
	if a.CIDR == network.BitLen() {
		out.Gateway = a.Address
	} else if a.Management && a.CIDR < network.BitLen()-1 {
		// A management /30 or larger (Windows, ESXi, or asked for): the first host is the gateway.
		out.Gateway = addrAdd(network, 1).String()
	}
	pb := parentBlock{Network: r.Network, CIDR: r.CIDR, Href: apiPrefix + "/ips/" + r.ID}
	if a.Management {
		// Management addresses come from the pool, so their parent block is
		// the enclosing block of the management size.
		if p, err := network.Prefix(min(r.CIDR, a.CIDR)); err == nil {
			pb.Network, pb.CIDR = p.Addr().String(), p.Bits()
		}
	}
	pb.Netmask = netmask(network, pb.CIDR)
	out.ParentBlock = &pb
	return out
}

// ipMetro is the metro of a block: none for global addresses (the spec's metro is not nullable,
// so the field is left out).
func (s *Server) ipMetro(r *IPReservation) json.RawMessage {
	if r.Metro == "" {
		return nil
	}
	return s.catalog.metro(r.Metro).json
}

func (s *Server) renderReservation(r *IPReservation, inc includes, now time.Time) ipJSON {
	// Elastic blocks are add-ons billed on their own; management blocks come
	// with the devices and are neither.
	addon := !r.Management
	out := ipJSON{ID: r.ID, Href: apiPrefix + "/ips/" + r.ID, Type: r.Type, AddressFamily: 4, Public: r.Type != "private_ipv4",
		Management: r.Management, Manageable: true, GlobalIP: r.Type == "global_ipv4", Enabled: true, CIDR: r.CIDR,
		Metro: s.ipMetro(r), Project: href{Href: apiPrefix + "/projects/" + r.ProjectID}, Tags: r.Tags, CustomData: r.CustomData,
		CreatedAt: rfc3339(r.CreatedAt), Assignments: []any{},
		Available: apiPrefix + "/ips/" + r.ID + "/available", Addon: &addon, Bill: &addon, State: r.State, Details: r.Details}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.CustomData == nil {
		out.CustomData = map[string]any{}
	}
	if r.Type == "public_ipv6" {
		out.AddressFamily = 6
	}
	if r.Facility != "" {
		out.Facility = s.catalog.facility(r.Facility).json
	}
	if r.Network != "" {
		network, _ := netip.ParseAddr(r.Network)
		out.Network, out.Netmask = r.Network, netmask(network, r.CIDR)
		out.Address, out.Gateway = r.Network, r.Network
		if r.CIDR < network.BitLen()-1 {
			out.Gateway = addrAdd(network, 1).String()
			out.Address = addrAdd(network, 2).String()
			if r.CIDR == network.BitLen()-2 {
				out.Address = addrAdd(network, 1).String()
			}
		}
	}
	for _, aid := range r.AssignmentIDs {
		a := s.st.IPAssignments[aid]
		if a == nil || a.VisibleAt.After(now) {
			continue
		}
		if inc.has("assignments") {
			out.Assignments = append(out.Assignments, s.renderAssignment(a))
		} else {
			out.Assignments = append(out.Assignments, href{Href: apiPrefix + "/ips/" + a.ID})
		}
	}
	return out
}

type portJSON struct {
	ID                        string    `json:"id"`
	Href                      string    `json:"href"`
	Type                      string    `json:"type"`
	Name                      string    `json:"name"`
	Data                      portData  `json:"data"`
	DisbondOperationSupported bool      `json:"disbond_operation_supported"`
	NetworkType               string    `json:"network_type,omitempty"`
	NativeVirtualNetwork      any       `json:"native_virtual_network,omitempty"`
	VirtualNetworks           []any     `json:"virtual_networks"`
	Bond                      *bondData `json:"bond,omitempty"`
}

type portData struct {
	MAC    string `json:"mac,omitempty"`
	Bonded bool   `json:"bonded"`
}

type bondData struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (s *Server) renderPort(d *Device, p *Port) portJSON {
	out := portJSON{ID: p.ID, Href: apiPrefix + "/ports/" + p.ID, Type: p.Type, Name: p.Name,
		Data: portData{MAC: p.MAC, Bonded: p.Bonded}, DisbondOperationSupported: true, NetworkType: p.NetworkType,
		VirtualNetworks: []any{}}
	if p.BondName != "" {
		for _, b := range d.Ports {
			if b.Name == p.BondName {
				out.Bond = &bondData{ID: b.ID, Name: b.Name}
			}
		}
	}
	for _, vid := range p.VLANs {
		if vn := s.st.VirtualNetworks[vid]; vn != nil {
			out.VirtualNetworks = append(out.VirtualNetworks, s.renderVirtualNetwork(vn))
		}
	}
	if vn := s.st.VirtualNetworks[p.NativeVLAN]; vn != nil {
		out.NativeVirtualNetwork = s.renderVirtualNetwork(vn)
	}
	return out
}
