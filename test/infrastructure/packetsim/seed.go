package packetsim

import (
	_ "embed"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"
)

// Well-known identities of the built-in seed.
const (
	DefaultProjectID = "00000000-0000-4000-8000-000000000001"
	DefaultUserID    = "00000000-0000-4000-8000-0000000000aa"
)

// DefaultOrganizationName names the organization a seed without one gets,
// as every Packet account starts with one.
const DefaultOrganizationName = "Sim Organization"

//go:embed seed/default.yaml
var defaultSeedYAML []byte

// Seed is the initial data of a simulator: the catalog and the projects.
// IDs that are left empty are derived from names, so they are stable across
// restarts and runs.
type Seed struct {
	User SeedUser `json:"user"`
	// Organizations the user owns; the first is the user's default. Empty
	// means one, DefaultOrganizationName.
	Organizations    []SeedOrganization `json:"organizations"`
	Metros           []SeedMetro        `json:"metros"`
	Plans            []SeedPlan         `json:"plans"`
	OperatingSystems []SeedOS           `json:"operating_systems"`
	Projects         []SeedProject      `json:"projects"`
	IPPools          SeedIPPools        `json:"ip_pools"`
}

type SeedUser struct {
	ID        string       `json:"id"`
	Email     string       `json:"email"`
	FirstName string       `json:"first_name"`
	LastName  string       `json:"last_name"`
	SSHKeys   []SeedSSHKey `json:"ssh_keys"`
}

type SeedMetro struct {
	ID         string         `json:"id"`
	Code       string         `json:"code"`
	Name       string         `json:"name"`
	Country    string         `json:"country"`
	Facilities []SeedFacility `json:"facilities"`
}

type SeedFacility struct {
	ID       string      `json:"id"`
	Code     string      `json:"code"`
	Name     string      `json:"name"`
	Features []string    `json:"features"`
	Address  SeedAddress `json:"address"`
	// IPRanges are the prefixes registered in the facility (Packet lists them for GeoIP).
	IPRanges []string `json:"ip_ranges"`
}

// SeedAddress is a facility's postal address. Empty fields are sent as null; an empty
// country is the metro's.
type SeedAddress struct {
	Address   string `json:"address"`
	Address2  string `json:"address2"`
	City      string `json:"city"`
	State     string `json:"state"`
	ZipCode   string `json:"zip_code"`
	Country   string `json:"country"`
	Latitude  string `json:"latitude"`
	Longitude string `json:"longitude"`
}

type SeedPlan struct {
	ID          string `json:"id"`
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Class       string `json:"class"`
	Line        string `json:"line"`
	// Type is standard (the default), workload_optimized or custom.
	Type string `json:"type"`
	// Categories are like compute, storage, current_gen or legacy_gen (default: compute).
	Categories []string `json:"categories"`
	// DeploymentTypes are on_demand and spot_market (the default is both); an empty list is a
	// plan sold only through hardware reservations, which is left out of the spot market.
	DeploymentTypes []string `json:"deployment_types"`
	// Legacy is sent as the plan's legacy flag (Packet now always sends false).
	Legacy    bool      `json:"legacy"`
	PriceHour float64   `json:"price_hour"`
	Specs     PlanSpecs `json:"specs"`
	// Capacity is the number of on-demand servers per metro code. A plan is
	// offered in exactly the metros listed here.
	Capacity map[string]int `json:"capacity"`
}

// PlanSpecs is rendered as the plan's "specs" object.
type PlanSpecs struct {
	Cpus   []SpecItem `json:"cpus,omitempty"`
	Memory struct {
		Total string `json:"total,omitempty"`
	} `json:"memory"`
	Drives   []SpecItem `json:"drives,omitempty"`
	Nics     []SpecItem `json:"nics,omitempty"`
	Gpu      []SpecItem `json:"gpu,omitempty"`
	Features struct {
		Raid bool `json:"raid,omitempty"`
		Txt  bool `json:"txt,omitempty"`
	} `json:"features"`
}

type SpecItem struct {
	Count int    `json:"count,omitempty"`
	Type  string `json:"type,omitempty"`
	Size  string `json:"size,omitempty"`
}

type SeedOS struct {
	Slug    string `json:"slug"`
	Name    string `json:"name"`
	Distro  string `json:"distro"`
	Version string `json:"version"`
	// DistroLabel is the distro's display name (default: the distro).
	DistroLabel string `json:"distro_label"`
	// Default marks the image the console preselects (default_operating_system).
	Default bool `json:"default_operating_system"`
	// Licensed images are charged by the hour on top of the plan.
	Licensed bool `json:"licensed"`
	// ProvisionableOn lists plan slugs; empty means every plan.
	ProvisionableOn []string `json:"provisionable_on"`
}

type SeedOrganization struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

type SeedProject struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Organization is the name or ID of one of the seed's organizations;
	// empty means the first.
	Organization string `json:"organization"`
	// PublicIPv4Quota is the number of elastic public IPv4 addresses the
	// project may reserve without approval (0 means 64).
	PublicIPv4Quota int `json:"public_ipv4_quota"`
	// MaxDevices limits devices in the project (0 means unlimited).
	MaxDevices           int                       `json:"max_devices"`
	HardwareReservations []SeedHardwareReservation `json:"hardware_reservations"`
	SSHKeys              []SeedSSHKey              `json:"ssh_keys"`
}

type SeedHardwareReservation struct {
	ID            string `json:"id"`
	Plan          string `json:"plan"`
	Facility      string `json:"facility"`
	Spare         bool   `json:"spare"`
	NeedOfService bool   `json:"need_of_service"`
}

type SeedSSHKey struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Key   string `json:"key"`
}

// SeedIPPools are the ranges addresses are carved from. Nothing routes them.
type SeedIPPools struct {
	PublicIPv4  string `json:"public_ipv4"`
	PrivateIPv4 string `json:"private_ipv4"`
	PublicIPv6  string `json:"public_ipv6"`
}

// DefaultSeed returns the built-in seed (the same as seed/default.yaml).
func DefaultSeed() *Seed {
	s, err := ParseSeed(defaultSeedYAML)
	if err != nil {
		panic("packetsim: built-in seed is invalid: " + err.Error())
	}
	return s
}

// EmptySeed is the built-in seed without projects: a new Packet account,
// with its user, its organization and the catalog.
func EmptySeed() *Seed {
	s := DefaultSeed()
	s.Projects = nil
	return s
}

// LoadSeed reads a YAML (or JSON) seed file.
func LoadSeed(path string) (*Seed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSeed(data)
}

// ParseSeed parses and validates YAML/JSON seed data and fills derived IDs.
func ParseSeed(data []byte) (*Seed, error) {
	var s Seed
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if err := s.normalize(); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	return &s, nil
}

// stableID derives a UUID from a name, so seeds without IDs stay stable.
func stableID(kind, name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("packetsim:"+kind+":"+name)).String()
}

// normalize checks a seed and fills what it may leave out: IDs (stable ones derived from names),
// the user's email, plan and project names, the default organization and the IP pools.
func (s *Seed) normalize() error {
	if s.User.Email == "" {
		s.User.Email = "sim@example.com"
	}
	if err := fillID(&s.User.ID, "user", s.User.Email); err != nil {
		return err
	}
	metros, facilities, err := s.normalizeMetros()
	if err != nil {
		return err
	}
	plans, err := s.normalizePlans(metros)
	if err != nil {
		return err
	}
	for _, o := range s.OperatingSystems {
		if o.Slug == "" {
			return fmt.Errorf("operating system without slug")
		}
	}
	if err := s.normalizeOrganizations(fillID); err != nil {
		return err
	}
	for i := range s.Projects {
		if err := s.normalizeProject(i, plans, facilities); err != nil {
			return err
		}
	}
	for j := range s.User.SSHKeys {
		if err := fillID(&s.User.SSHKeys[j].ID, "ssh-key", "user/"+s.User.SSHKeys[j].Label); err != nil {
			return err
		}
	}
	return s.normalizePools()
}

// fillID derives a missing ID from the object's kind and name, or checks and lower-cases a given one.
func fillID(id *string, kind, name string) error {
	if *id == "" {
		*id = stableID(kind, name)
		return nil
	}
	if !isUUID(*id) {
		return fmt.Errorf("%s %q: id %q is not a UUID", kind, name, *id)
	}
	*id = strings.ToLower(*id)
	return nil
}

// normalizeMetros requires a code of every metro and facility, fills their IDs and returns
// the codes.
func (s *Seed) normalizeMetros() (metros, facilities map[string]bool, err error) {
	metros, facilities = map[string]bool{}, map[string]bool{}
	for i := range s.Metros {
		m := &s.Metros[i]
		if m.Code == "" {
			return nil, nil, fmt.Errorf("metro %d has no code", i)
		}
		metros[m.Code] = true
		if err := fillID(&m.ID, "metro", m.Code); err != nil {
			return nil, nil, err
		}
		for j := range m.Facilities {
			f := &m.Facilities[j]
			if f.Code == "" {
				return nil, nil, fmt.Errorf("metro %s: facility %d has no code", m.Code, j)
			}
			facilities[f.Code] = true
			if err := fillID(&f.ID, "facility", f.Code); err != nil {
				return nil, nil, err
			}
		}
	}
	return metros, facilities, nil
}

// normalizePlans requires a slug of every plan and capacity only in known metros, fills names
// and IDs, and returns the slugs.
func (s *Seed) normalizePlans(metros map[string]bool) (map[string]bool, error) {
	plans := map[string]bool{}
	for i := range s.Plans {
		p := &s.Plans[i]
		if p.Slug == "" {
			return nil, fmt.Errorf("plan %d has no slug", i)
		}
		plans[p.Slug] = true
		if p.Name == "" {
			p.Name = p.Slug
		}
		if err := fillID(&p.ID, "plan", p.Slug); err != nil {
			return nil, err
		}
		for code := range p.Capacity {
			if !metros[code] {
				return nil, fmt.Errorf("plan %s: capacity for unknown metro %q", p.Slug, code)
			}
		}
	}
	return plans, nil
}

// normalizeProject fills the i-th project's name and IDs (its own, its hardware reservations'
// and SSH keys') and resolves its organization; reservations must be of known plans and facilities.
func (s *Seed) normalizeProject(i int, plans, facilities map[string]bool) error {
	p := &s.Projects[i]
	if p.Name == "" {
		p.Name = fmt.Sprintf("project-%d", i+1)
	}
	if err := fillID(&p.ID, "project", p.Name); err != nil {
		return err
	}
	if p.Organization = s.organizationID(p.Organization); p.Organization == "" {
		return fmt.Errorf("project %s: unknown organization", p.Name)
	}
	for j := range p.HardwareReservations {
		h := &p.HardwareReservations[j]
		if !plans[h.Plan] || !facilities[h.Facility] {
			return fmt.Errorf("project %s: hardware reservation %d has unknown plan %q or facility %q", p.Name, j, h.Plan, h.Facility)
		}
		if err := fillID(&h.ID, "hardware-reservation", fmt.Sprintf("%s/%d", p.ID, j)); err != nil {
			return err
		}
	}
	for j := range p.SSHKeys {
		if err := fillID(&p.SSHKeys[j].ID, "ssh-key", p.ID+"/"+p.SSHKeys[j].Label); err != nil {
			return err
		}
	}
	return nil
}

// normalizeOrganizations gives a seed without organizations the default one
// (with the ID earlier versions rendered) and fills derived IDs.
func (s *Seed) normalizeOrganizations(fill func(id *string, kind, name string) error) error {
	if len(s.Organizations) == 0 {
		s.Organizations = []SeedOrganization{{ID: stableID("organization", "sim"), Name: DefaultOrganizationName}}
	}
	for i := range s.Organizations {
		o := &s.Organizations[i]
		if o.Name == "" {
			return fmt.Errorf("organization %d has no name", i)
		}
		if err := fill(&o.ID, "organization", o.Name); err != nil {
			return err
		}
	}
	return nil
}

// organizationID resolves a project's organization reference (name, ID or
// empty for the first); "" when it names none.
func (s *Seed) organizationID(ref string) string {
	if ref == "" {
		return s.Organizations[0].ID
	}
	for _, o := range s.Organizations {
		if strings.EqualFold(o.ID, ref) || o.Name == ref {
			return o.ID
		}
	}
	return ""
}

func (s *Seed) normalizePools() error {
	pools := []*string{&s.IPPools.PublicIPv4, &s.IPPools.PrivateIPv4, &s.IPPools.PublicIPv6}
	// Loopback and documentation prefixes only: see ip_pools in seed/default.yaml.
	defaults := []string{"127.64.0.0/16", "127.128.0.0/10", "2001:db8::/32"}
	for i, p := range pools {
		if *p == "" {
			*p = defaults[i]
		}
		if _, err := netip.ParsePrefix(*p); err != nil {
			return fmt.Errorf("ip pool %q: %w", *p, err)
		}
	}
	return nil
}
