package packetsim

import (
	"encoding/json"
	"time"
)

// The types below are both the simulator's storage and what the inspection
// accessors return (as deep copies). They are not the API's JSON shapes;
// render.go builds those.

// Device states of the real API.
const (
	StateQueued         = "queued"
	StateProvisioning   = "provisioning"
	StateActive         = "active"
	StateDeprovisioning = "deprovisioning"
	StatePoweringOff    = "powering_off"
	StatePoweringOn     = "powering_on"
	StateInactive       = "inactive"
	StateReinstalling   = "reinstalling"
	StateFailed         = "failed"
	// StateGone is not an API state: entering it deletes the device.
	StateGone = "gone"
)

type Project struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	OrganizationID  string    `json:"organization_id"`
	PaymentMethodID string    `json:"payment_method_id,omitempty"`
	BackendTransfer bool      `json:"backend_transfer_enabled,omitempty"`
	PublicIPv4Quota int       `json:"public_ipv4_quota"`
	MaxDevices      int       `json:"max_devices"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

type Device struct {
	ID                    string         `json:"id"`
	ShortID               string         `json:"short_id"`
	ProjectID             string         `json:"project_id"`
	Hostname              string         `json:"hostname"`
	Description           string         `json:"description,omitempty"`
	State                 string         `json:"state"`
	StateSince            time.Time      `json:"state_since"`
	NextState             string         `json:"next_state,omitempty"`
	DueAt                 time.Time      `json:"due_at,omitzero"`
	Plan                  string         `json:"plan"`
	OS                    string         `json:"operating_system"`
	Metro                 string         `json:"metro"`
	Facility              string         `json:"facility"`
	Tags                  []string       `json:"tags"`
	UserData              string         `json:"userdata,omitempty"`
	CustomData            map[string]any `json:"customdata,omitempty"`
	BillingCycle          string         `json:"billing_cycle"`
	IPXEScriptURL         string         `json:"ipxe_script_url,omitempty"`
	AlwaysPXE             bool           `json:"always_pxe,omitempty"`
	Locked                bool           `json:"locked,omitempty"`
	SpotInstance          bool           `json:"spot_instance,omitempty"`
	SpotPriceMax          float64        `json:"spot_price_max,omitempty"`
	TerminationTime       *time.Time     `json:"termination_time,omitempty"`
	HardwareReservationID string         `json:"hardware_reservation_id,omitempty"`
	SSHKeyIDs             []string       `json:"ssh_key_ids,omitempty"`
	// IPAssignmentIDs are the device's assignments, management ones first.
	IPAssignmentIDs []string `json:"ip_assignment_ids,omitempty"`
	Ports           []Port   `json:"ports"`
	// VLANBatches are the VLAN assignment batches of the device's ports, oldest first.
	VLANBatches  []VLANBatch `json:"vlan_batches,omitempty"`
	Events       []Event     `json:"events,omitempty"`
	RootPassword string      `json:"root_password,omitempty"`
	// ManagementIPs are the management addresses the create request asked for
	// (ip_addresses); nil means Packet's default three.
	ManagementIPs []ManagementIP `json:"management_ips,omitempty"`
	// Storage is the custom partitioning and RAID layout (CPR) as sent.
	Storage json.RawMessage `json:"storage,omitempty"`
	// ProvisioningStarted and ProvisioningDuration give the percentage.
	ProvisioningStarted  time.Time     `json:"provisioning_started,omitzero"`
	ProvisioningDuration time.Duration `json:"provisioning_duration,omitempty"`
	// Hold keeps the device in its state (device_stuck fault) until HoldUntil
	// (zero means forever).
	Hold      bool      `json:"hold,omitempty"`
	HoldState string    `json:"hold_state,omitempty"`
	HoldUntil time.Time `json:"hold_until,omitzero"`
	// FailAt and VanishAt are out-of-band events (device_fail/vanish faults).
	FailAt   time.Time `json:"fail_at,omitzero"`
	VanishAt time.Time `json:"vanish_at,omitzero"`
	// GhostFor keeps a deleted device in lists that long (list_lag).
	GhostFor time.Duration `json:"ghost_for,omitempty"`
	// Forbidden answers 403 on GET (device_fail with failed_get_returns_403).
	Forbidden bool `json:"forbidden,omitempty"`
	// ExtraDeprovision lengthens deprovisioning (slow_deprovision fault).
	ExtraDeprovision time.Duration `json:"extra_deprovision,omitempty"`
	// ListVisibleAt hides a new device from lists until then (list_lag).
	ListVisibleAt time.Time `json:"list_visible_at,omitzero"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

type Port struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Type        string   `json:"type"` // NetworkBondPort or NetworkPort
	MAC         string   `json:"mac,omitempty"`
	Bonded      bool     `json:"bonded"`
	NetworkType string   `json:"network_type,omitempty"`
	BondName    string   `json:"bond_name,omitempty"`
	VLANs       []string `json:"vlans,omitempty"` // virtual network IDs
	NativeVLAN  string   `json:"native_vlan,omitempty"`
	// AssignedAt is when each virtual network of VLANs was assigned.
	AssignedAt map[string]time.Time `json:"assigned_at,omitempty"`
}

// VLANBatch is a port's VLAN assignment batch: queued until StartAt, in_progress until
// DoneAt, then applied at once, completed or failed (Result).
type VLANBatch struct {
	ID        string          `json:"id"`
	PortID    string          `json:"port_id"`
	Items     []VLANBatchItem `json:"items"`
	CreatedAt time.Time       `json:"created_at"`
	StartAt   time.Time       `json:"start_at"`
	DoneAt    time.Time       `json:"done_at"`
	Result    string          `json:"result,omitempty"` // completed or failed once applied
	Errors    []string        `json:"errors,omitempty"`
}

// VLANBatchItem is one assignment of a batch, with its virtual network resolved.
type VLANBatchItem struct {
	VNID   string `json:"vnid"`
	State  string `json:"state"` // assigned or unassigned
	Native bool   `json:"native,omitempty"`
}

type Event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Body      string    `json:"body"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	// DeviceID is the device the event is about (its relationship).
	DeviceID string `json:"device_id,omitempty"`
}

// IPReservation is a block of addresses owned by a project: an elastic IP
// reservation, or a management block created with the first device.
type IPReservation struct {
	ID            string         `json:"id"`
	ProjectID     string         `json:"project_id"`
	Type          string         `json:"type"`
	State         string         `json:"state"` // pending, created, denied
	Network       string         `json:"network,omitempty"`
	CIDR          int            `json:"cidr"`
	Metro         string         `json:"metro,omitempty"`
	Facility      string         `json:"facility,omitempty"`
	Management    bool           `json:"management,omitempty"`
	Tags          []string       `json:"tags"`
	Details       *string        `json:"details,omitempty"`
	CustomData    map[string]any `json:"customdata,omitempty"`
	PendingUntil  time.Time      `json:"pending_until,omitzero"`
	DenyAfterWait bool           `json:"deny_after_wait,omitempty"`
	ListVisibleAt time.Time      `json:"list_visible_at,omitzero"`
	AssignmentIDs []string       `json:"assignment_ids,omitempty"`
	Quantity      int            `json:"quantity"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

// IPAssignment is a part of a reservation bound to a device.
type IPAssignment struct {
	ID            string    `json:"id"`
	ReservationID string    `json:"reservation_id"`
	DeviceID      string    `json:"device_id"`
	Address       string    `json:"address"` // the device's address
	Network       string    `json:"network"` // network of the assigned prefix
	CIDR          int       `json:"cidr"`
	Management    bool      `json:"management,omitempty"`
	VisibleAt     time.Time `json:"visible_at,omitzero"` // eip_slow_assign
	CreatedAt     time.Time `json:"created_at"`
}

type HardwareReservation struct {
	ID            string    `json:"id"`
	ShortID       string    `json:"short_id"`
	ProjectID     string    `json:"project_id"`
	Plan          string    `json:"plan"`
	Facility      string    `json:"facility"`
	Spare         bool      `json:"spare,omitempty"`
	NeedOfService bool      `json:"need_of_service,omitempty"`
	DeviceID      string    `json:"device_id,omitempty"`
	WipeUntil     time.Time `json:"wipe_until,omitzero"`
	CreatedAt     time.Time `json:"created_at"`
}

type BGPConfig struct {
	ID             string    `json:"id"`
	ProjectID      string    `json:"project_id"`
	Status         string    `json:"status"`
	DeploymentType string    `json:"deployment_type"`
	ASN            int       `json:"asn"`
	MD5            string    `json:"md5,omitempty"`
	UseCase        string    `json:"use_case,omitempty"`
	MaxPrefix      int       `json:"max_prefix"`
	CreatedAt      time.Time `json:"created_at"`
}

type BGPSession struct {
	ID            string    `json:"id"`
	DeviceID      string    `json:"device_id"`
	AddressFamily string    `json:"address_family"`
	DefaultRoute  bool      `json:"default_route"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

type SSHKey struct {
	ID          string    `json:"id"`
	Label       string    `json:"label"`
	Key         string    `json:"key"`
	Fingerprint string    `json:"fingerprint"`
	ProjectID   string    `json:"project_id,omitempty"` // empty for user keys
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

type VirtualNetwork struct {
	ID          string    `json:"id"`
	ProjectID   string    `json:"project_id"`
	Description string    `json:"description"`
	VXLAN       int       `json:"vxlan"`
	Metro       string    `json:"metro"`
	Facility    string    `json:"facility,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func (d *Device) clone() Device {
	c := *d
	c.Tags = cloneStrings(d.Tags)
	c.SSHKeyIDs = cloneStrings(d.SSHKeyIDs)
	c.IPAssignmentIDs = cloneStrings(d.IPAssignmentIDs)
	c.Ports = make([]Port, len(d.Ports))
	for i, p := range d.Ports {
		p.VLANs = cloneStrings(p.VLANs)
		if p.AssignedAt != nil {
			at := make(map[string]time.Time, len(p.AssignedAt))
			for k, v := range p.AssignedAt {
				at[k] = v
			}
			p.AssignedAt = at
		}
		c.Ports[i] = p
	}
	c.VLANBatches = make([]VLANBatch, len(d.VLANBatches))
	for i, b := range d.VLANBatches {
		b.Items = append([]VLANBatchItem(nil), b.Items...)
		b.Errors = cloneStrings(b.Errors)
		c.VLANBatches[i] = b
	}
	if d.VLANBatches == nil {
		c.VLANBatches = nil
	}
	c.Events = append([]Event(nil), d.Events...)
	c.ManagementIPs = append([]ManagementIP(nil), d.ManagementIPs...)
	if d.CustomData != nil {
		c.CustomData = make(map[string]any, len(d.CustomData))
		for k, v := range d.CustomData {
			c.CustomData[k] = v
		}
	}
	if d.TerminationTime != nil {
		t := *d.TerminationTime
		c.TerminationTime = &t
	}
	return c
}

func (r *IPReservation) clone() IPReservation {
	c := *r
	c.Tags = cloneStrings(r.Tags)
	c.AssignmentIDs = cloneStrings(r.AssignmentIDs)
	if r.Details != nil {
		d := *r.Details
		c.Details = &d
	}
	return c
}
