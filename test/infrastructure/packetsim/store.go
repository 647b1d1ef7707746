package packetsim

import (
	"strings"
	"time"
)

// store is every mutable resource. All access goes through Server.mu.
// It is also what the state file holds, hence the exported JSON fields.
type store struct {
	Now time.Time `json:"now"`
	// User is the account's (the token's) user.
	User                 *User                           `json:"user"`
	Organizations        map[string]*Organization        `json:"organizations"`
	OrganizationOrder    []string                        `json:"organization_order"`
	Projects             map[string]*Project             `json:"projects"`
	ProjectOrder         []string                        `json:"project_order"`
	Devices              map[string]*Device              `json:"devices"`
	DeviceOrder          map[string][]string             `json:"device_order"` // per project, creation order
	IPReservations       map[string]*IPReservation       `json:"ip_reservations"`
	IPOrder              map[string][]string             `json:"ip_order"` // per project
	IPAssignments        map[string]*IPAssignment        `json:"ip_assignments"`
	HardwareReservations map[string]*HardwareReservation `json:"hardware_reservations"`
	HWOrder              map[string][]string             `json:"hw_order"`
	BGPConfigs           map[string]*BGPConfig           `json:"bgp_configs"` // per project
	BGPSessions          map[string]*BGPSession          `json:"bgp_sessions"`
	SSHKeys              map[string]*SSHKey              `json:"ssh_keys"`
	SSHKeyOrder          []string                        `json:"ssh_key_order"`
	VirtualNetworks      map[string]*VirtualNetwork      `json:"virtual_networks"`
	VNOrder              []string                        `json:"vn_order"`
	ProjectEvents        map[string][]Event              `json:"project_events"`
	Capacity             map[string]map[string]int       `json:"capacity"` // metro → plan → servers left
	// SpotPrices is the spot market: metro → plan → price per hour.
	SpotPrices map[string]map[string]float64 `json:"spot_prices"`
	// MgmtBlocks maps "project|facility|type" to the management reservation.
	MgmtBlocks map[string]string `json:"mgmt_blocks"`
	Alloc      allocator         `json:"alloc"`
	// Ghosts are deleted devices that lists still show (list_lag fault).
	Ghosts []ghostDevice `json:"ghosts,omitempty"`
	// The load-balancer service (lbaas*.go): its objects by ID, load balancers
	// and pools also in creation order per project, and its access tokens.
	LoadBalancers map[string]*LoadBalancer       `json:"load_balancers"`
	LBOrder       map[string][]string            `json:"lb_order"`
	LBPorts       map[string]*LoadBalancerPort   `json:"lb_ports"`
	LBPools       map[string]*LoadBalancerPool   `json:"lb_pools"`
	LBPoolOrder   map[string][]string            `json:"lb_pool_order"`
	LBOrigins     map[string]*LoadBalancerOrigin `json:"lb_origins"`
	LBaaSTokens   map[string]*lbaasToken         `json:"lbaas_tokens"`

	// portOwner maps a port ID to its device; rebuilt after loading.
	portOwner map[string]string
	// deviceLists holds each project's devices in creation order, the same as DeviceOrder but
	// without a map lookup per device, so listing a page of 10,000 devices stays cheap.
	deviceLists map[string][]*Device
}

type ghostDevice struct {
	Device Device    `json:"device"`
	Until  time.Time `json:"until"`
}

func newStore(seed *Seed, now time.Time) *store {
	st := &store{
		Now: now, Projects: map[string]*Project{}, Devices: map[string]*Device{}, DeviceOrder: map[string][]string{},
		IPReservations: map[string]*IPReservation{}, IPOrder: map[string][]string{}, IPAssignments: map[string]*IPAssignment{},
		HardwareReservations: map[string]*HardwareReservation{}, HWOrder: map[string][]string{},
		BGPConfigs: map[string]*BGPConfig{}, BGPSessions: map[string]*BGPSession{}, SSHKeys: map[string]*SSHKey{},
		VirtualNetworks: map[string]*VirtualNetwork{}, ProjectEvents: map[string][]Event{},
		Capacity: map[string]map[string]int{}, MgmtBlocks: map[string]string{}, Alloc: newAllocator(),
		portOwner: map[string]string{}, deviceLists: map[string][]*Device{},
		Organizations: map[string]*Organization{},
	}
	st.initLBaaS()
	st.adoptAccount(seed, now)
	for _, p := range seed.Plans {
		for metro, n := range p.Capacity {
			if st.Capacity[metro] == nil {
				st.Capacity[metro] = map[string]int{}
			}
			st.Capacity[metro][p.Slug] = n
		}
	}
	st.SpotPrices = seedSpotPrices(seed)
	for _, k := range seed.User.SSHKeys {
		st.addSSHKey(&SSHKey{ID: k.ID, Label: k.Label, Key: k.Key, Fingerprint: fingerprint(k.Key), CreatedAt: now, UpdatedAt: now})
	}
	for _, sp := range seed.Projects {
		quota := sp.PublicIPv4Quota
		if quota == 0 {
			quota = 64
		}
		st.addProject(&Project{ID: sp.ID, Name: sp.Name, OrganizationID: sp.Organization, PublicIPv4Quota: quota,
			MaxDevices: sp.MaxDevices, CreatedAt: now, UpdatedAt: now})
		for _, h := range sp.HardwareReservations {
			st.HardwareReservations[h.ID] = &HardwareReservation{ID: h.ID, ShortID: h.ID[:8], ProjectID: sp.ID, Plan: h.Plan,
				Facility: h.Facility, Spare: h.Spare, NeedOfService: h.NeedOfService, CreatedAt: now}
			st.HWOrder[sp.ID] = append(st.HWOrder[sp.ID], h.ID)
		}
		for _, k := range sp.SSHKeys {
			st.addSSHKey(&SSHKey{ID: k.ID, Label: k.Label, Key: k.Key, Fingerprint: fingerprint(k.Key), ProjectID: sp.ID, CreatedAt: now, UpdatedAt: now})
		}
	}
	return st
}

// adoptAccount gives the store the seed's user and organizations when it has
// none: a new store, or a state file written before organizations existed
// (its projects join the default organization).
func (st *store) adoptAccount(seed *Seed, now time.Time) {
	if st.User != nil {
		return
	}
	st.User = &User{ID: seed.User.ID, Email: seed.User.Email, FirstName: seed.User.FirstName, LastName: seed.User.LastName,
		DefaultOrganizationID: seed.Organizations[0].ID, CreatedAt: now, UpdatedAt: now}
	if st.Organizations == nil {
		st.Organizations = map[string]*Organization{}
	}
	for _, so := range seed.Organizations {
		st.addOrganization(&Organization{ID: so.ID, Name: so.Name, Description: so.Description,
			PaymentMethodID: stableID("payment-method", so.ID), CreatedAt: now, UpdatedAt: now})
	}
	for _, p := range st.Projects {
		if p.OrganizationID == "" {
			p.OrganizationID = st.User.DefaultOrganizationID
		}
	}
}

// afterLoad rebuilds indexes that the state file does not carry.
func (st *store) afterLoad() {
	st.portOwner = map[string]string{}
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			st.portOwner[p.ID] = d.ID
		}
	}
	st.deviceLists = map[string][]*Device{}
	for project, ids := range st.DeviceOrder {
		for _, id := range ids {
			if d := st.Devices[id]; d != nil {
				st.deviceLists[project] = append(st.deviceLists[project], d)
			}
		}
	}
	if st.Alloc.Next == nil {
		st.Alloc = newAllocator()
	}
	st.initLBaaS()
}

// initLBaaS makes the load-balancer service's maps that a new store, or a
// state file written before the service existed, lacks.
func (st *store) initLBaaS() {
	for _, m := range []*map[string][]string{&st.LBOrder, &st.LBPoolOrder} {
		if *m == nil {
			*m = map[string][]string{}
		}
	}
	if st.LoadBalancers == nil {
		st.LoadBalancers = map[string]*LoadBalancer{}
	}
	if st.LBPorts == nil {
		st.LBPorts = map[string]*LoadBalancerPort{}
	}
	if st.LBPools == nil {
		st.LBPools = map[string]*LoadBalancerPool{}
	}
	if st.LBOrigins == nil {
		st.LBOrigins = map[string]*LoadBalancerOrigin{}
	}
	if st.LBaaSTokens == nil {
		st.LBaaSTokens = map[string]*lbaasToken{}
	}
}

func (st *store) addProject(p *Project) {
	st.Projects[p.ID] = p
	st.ProjectOrder = append(st.ProjectOrder, p.ID)
}

func (st *store) addOrganization(o *Organization) {
	st.Organizations[o.ID] = o
	st.OrganizationOrder = append(st.OrganizationOrder, o.ID)
}

func (st *store) addSSHKey(k *SSHKey) {
	st.SSHKeys[k.ID] = k
	st.SSHKeyOrder = append(st.SSHKeyOrder, k.ID)
}

// removeID deletes id from an order slice, keeping the order.
// addDevice stores a new device at the end of its project's creation order.
func (st *store) addDevice(d *Device) {
	st.Devices[d.ID] = d
	st.DeviceOrder[d.ProjectID] = append(st.DeviceOrder[d.ProjectID], d.ID)
	st.deviceLists[d.ProjectID] = append(st.deviceLists[d.ProjectID], d)
}

// deleteDevice forgets a device.
func (st *store) deleteDevice(d *Device) {
	delete(st.Devices, d.ID)
	st.DeviceOrder[d.ProjectID] = removeID(st.DeviceOrder[d.ProjectID], d.ID)
	list := st.deviceLists[d.ProjectID]
	for i, v := range list {
		if v == d {
			st.deviceLists[d.ProjectID] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
}

func removeID(list []string, id string) []string {
	for i, v := range list {
		if v == id {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
