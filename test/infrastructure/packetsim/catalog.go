package packetsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// catalog is the read-only part of the seed (metros, facilities, plans,
// operating systems) with their JSON forms rendered once.
type catalog struct {
	metros     []*metroEntry
	facilities []*facilityEntry
	plans      []*planEntry
	oses       []*osEntry

	metroByKey    map[string]*metroEntry // code and id, lower-case
	facilityByKey map[string]*facilityEntry
	planByKey     map[string]*planEntry
	osBySlug      map[string]*osEntry
}

type metroEntry struct {
	SeedMetro
	json json.RawMessage
}

type facilityEntry struct {
	SeedFacility
	metro *metroEntry
	json  json.RawMessage
}

type planEntry struct {
	SeedPlan
	deploymentTypes []string
	base            planJSON        // without available_in and available_in_metros
	jsonLite        json.RawMessage // inside devices and reservations
	facilities      []*facilityEntry
	metros          []*metroEntry
}

type osEntry struct {
	SeedOS
	json json.RawMessage
}

// metroJSON is Packet's Metro: it has no href.
type metroJSON struct {
	ID      string `json:"id"`
	Code    string `json:"code"`
	Name    string `json:"name"`
	Country string `json:"country"`
}

type facilityJSON struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Code     string          `json:"code"`
	Features []string        `json:"features"`
	Address  any             `json:"address"`
	IPRanges []string        `json:"ip_ranges"`
	Metro    json.RawMessage `json:"metro"`
	Href     string          `json:"href"`
}

type addressJSON struct {
	ID          string  `json:"id"`
	Address     string  `json:"address"`
	Address2    *string `json:"address2,omitempty"` // the spec's optional fields are not nullable
	City        *string `json:"city,omitempty"`
	State       *string `json:"state,omitempty"`
	ZipCode     string  `json:"zip_code"`
	Country     string  `json:"country"`
	Coordinates struct {
		Latitude  *string `json:"latitude,omitempty"`
		Longitude *string `json:"longitude,omitempty"`
	} `json:"coordinates"`
}

type planJSON struct {
	ID                string            `json:"id"`
	Slug              string            `json:"slug"`
	Name              string            `json:"name"`
	Description       string            `json:"description"`
	Line              string            `json:"line"`
	Legacy            bool              `json:"legacy"`
	Class             string            `json:"class"`
	Type              string            `json:"type"`
	Categories        []string          `json:"categories"`
	Specs             PlanSpecs         `json:"specs"`
	Pricing           map[string]any    `json:"pricing"`
	DeploymentTypes   []string          `json:"deployment_types"`
	AvailableIn       []json.RawMessage `json:"available_in,omitempty"`
	AvailableInMetros []json.RawMessage `json:"available_in_metros,omitempty"`
	Href              string            `json:"href"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only static catalog types reach here
	}
	return b
}

// orNull is nil for "", so the field is sent as null, as Packet does for unknown parts.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Defaults of the optional seed fields.
var (
	defaultDeploymentTypes = []string{"on_demand", "spot_market"}
	defaultPlanCategories  = []string{"compute"}
)

// deploymentTypes are the ways a plan is sold; nil in the seed means on demand and spot.
func (p SeedPlan) deploymentTypes() []string {
	if p.DeploymentTypes == nil {
		return defaultDeploymentTypes
	}
	return p.DeploymentTypes
}

func (p SeedPlan) soldAs(deploymentType string) bool {
	return slices.Contains(p.deploymentTypes(), deploymentType)
}

func newFacilityEntry(f SeedFacility, me *metroEntry) *facilityEntry {
	fe := &facilityEntry{SeedFacility: f, metro: me}
	features, ranges := f.Features, f.IPRanges
	if features == nil {
		features = []string{}
	}
	if ranges == nil {
		ranges = []string{}
	}
	a := f.Address
	addr := addressJSON{ID: stableID("address", f.Code), Address: a.Address, Address2: orNull(a.Address2), City: orNull(a.City),
		State: orNull(a.State), ZipCode: a.ZipCode, Country: a.Country}
	addr.Coordinates.Latitude, addr.Coordinates.Longitude = orNull(a.Latitude), orNull(a.Longitude)
	if addr.Address == "" {
		addr.Address = f.Name
	}
	if addr.Country == "" {
		addr.Country = me.Country
	}
	// The address comes whole, included or not: the spec's Facility.address is an Address with
	// its address, country and zip_code required, not a reference.
	out := facilityJSON{ID: f.ID, Name: f.Name, Code: f.Code, Features: features, IPRanges: ranges,
		Address: addr, Metro: me.json, Href: apiPrefix + "/facilities/" + f.ID}
	fe.json = mustJSON(out)
	return fe
}

func newCatalog(seed *Seed) *catalog {
	c := &catalog{metroByKey: map[string]*metroEntry{}, facilityByKey: map[string]*facilityEntry{},
		planByKey: map[string]*planEntry{}, osBySlug: map[string]*osEntry{}}
	for _, m := range seed.Metros {
		c.addMetro(m)
	}
	for _, p := range seed.Plans {
		c.addPlan(p)
	}
	for _, o := range seed.OperatingSystems {
		c.addOS(o, seed.Plans)
	}
	return c
}

// addMetro adds a metro and its facilities, found by code (any case) or ID.
func (c *catalog) addMetro(m SeedMetro) {
	me := &metroEntry{SeedMetro: m}
	me.json = mustJSON(metroJSON{ID: m.ID, Code: m.Code, Name: m.Name, Country: m.Country})
	c.metros = append(c.metros, me)
	c.metroByKey[strings.ToLower(m.Code)] = me
	c.metroByKey[m.ID] = me
	for _, f := range m.Facilities {
		fe := newFacilityEntry(f, me)
		c.facilities = append(c.facilities, fe)
		c.facilityByKey[strings.ToLower(f.Code)] = fe
		c.facilityByKey[f.ID] = fe
	}
}

// addPlan adds a plan, found by slug (any case) or ID, available in the metros (already added)
// it has capacity in and their facilities.
func (c *catalog) addPlan(p SeedPlan) {
	pe := &planEntry{SeedPlan: p, deploymentTypes: p.deploymentTypes()}
	categories, kind := p.Categories, p.Type
	if categories == nil {
		categories = defaultPlanCategories
	}
	if kind == "" {
		kind = "standard"
	}
	pe.base = planJSON{ID: p.ID, Slug: p.Slug, Name: p.Name, Description: p.Description, Line: p.Line, Legacy: p.Legacy,
		Class: p.Class, Type: kind, Categories: categories, Specs: p.Specs, Pricing: map[string]any{"hour": p.PriceHour},
		DeploymentTypes: pe.deploymentTypes, Href: apiPrefix + "/plans/" + p.ID}
	pe.jsonLite = mustJSON(pe.base)
	for _, m := range c.metros {
		if _, ok := p.Capacity[m.Code]; !ok {
			continue
		}
		pe.metros = append(pe.metros, m)
		for _, f := range m.Facilities {
			pe.facilities = append(pe.facilities, c.facility(f.Code))
		}
	}
	c.plans = append(c.plans, pe)
	c.planByKey[strings.ToLower(p.Slug)] = pe
	c.planByKey[p.ID] = pe
}

// addOS adds an operating system, provisionable on every plan unless the seed says on which.
func (c *catalog) addOS(o SeedOS, plans []SeedPlan) {
	oe := &osEntry{SeedOS: o}
	on := o.ProvisionableOn
	if len(on) == 0 {
		for _, p := range plans {
			on = append(on, p.Slug)
		}
	}
	label := o.DistroLabel
	if label == "" {
		label = o.Distro
	}
	oe.json = mustJSON(map[string]any{"id": stableID("os", o.Slug), "slug": o.Slug, "name": o.Name, "distro": o.Distro,
		"distro_label": label, "version": o.Version, "provisionable_on": on, "preinstallable": false, "pricing": map[string]any{},
		"licensed": o.Licensed, "default_operating_system": o.Default})
	c.oses = append(c.oses, oe)
	c.osBySlug[strings.ToLower(o.Slug)] = oe
}

// render is the plan as /plans sends it. available_in and available_in_metros are references
// with the plan's price there, as Packet sends them, unless include= asks for the full facilities
// or metros.
func (p *planEntry) render(inc includes) planJSON {
	out := p.base
	for _, f := range p.facilities {
		if inc.has("available_in") {
			out.AvailableIn = append(out.AvailableIn, f.json)
		} else {
			out.AvailableIn = append(out.AvailableIn, mustJSON(map[string]any{"href": apiPrefix + "/facilities/" + f.ID, "price": p.base.Pricing}))
		}
	}
	for _, m := range p.metros {
		if inc.has("available_in_metros") {
			out.AvailableInMetros = append(out.AvailableInMetros, m.json)
		} else {
			out.AvailableInMetros = append(out.AvailableInMetros,
				mustJSON(map[string]any{"href": apiPrefix + "/locations/metros/" + m.ID, "price": p.base.Pricing}))
		}
	}
	return out
}

// matches applies the plan filters of GET /plans: deployment_type (what packngo's own tests
// send), slug, type and categories (any of them; repeated or comma-separated).
func (p *planEntry) matches(q url.Values) bool {
	if v := q.Get("deployment_type"); v != "" && !slices.Contains(p.deploymentTypes, v) {
		return false
	}
	if v := q.Get("slug"); v != "" && !strings.EqualFold(v, p.Slug) {
		return false
	}
	if v := q.Get("type"); v != "" && v != p.base.Type {
		return false
	}
	var wanted []string
	for _, v := range append(q["categories"], q["categories[]"]...) {
		wanted = append(wanted, strings.Split(v, ",")...)
	}
	return len(wanted) == 0 || slices.ContainsFunc(wanted, func(c string) bool { return slices.Contains(p.base.Categories, c) })
}

func (c *catalog) metro(key string) *metroEntry { return c.metroByKey[strings.ToLower(key)] }
func (c *catalog) facility(key string) *facilityEntry {
	return c.facilityByKey[strings.ToLower(key)]
}
func (c *catalog) plan(key string) *planEntry { return c.planByKey[strings.ToLower(key)] }
func (c *catalog) os(slug string) *osEntry    { return c.osBySlug[strings.ToLower(slug)] }

func (o *osEntry) provisionableOn(plan string) bool {
	if len(o.ProvisionableOn) == 0 {
		return true
	}
	for _, p := range o.ProvisionableOn {
		if p == plan {
			return true
		}
	}
	return false
}

// Catalog handlers. These lists are not paginated by packngo, so they return
// everything in one response.

func (s *Server) listMetros(w http.ResponseWriter, r *http.Request) {
	out := make([]json.RawMessage, 0, len(s.catalog.metros))
	for _, m := range s.catalog.metros {
		out = append(out, m.json)
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"metros": out})
}

func (s *Server) getMetro(w http.ResponseWriter, r *http.Request) {
	m := s.catalog.metro(r.PathValue("id"))
	if m == nil {
		s.writeError(w, notFound())
		return
	}
	s.writeBody(w, http.StatusOK, m.json)
}

func (s *Server) listFacilities(w http.ResponseWriter, r *http.Request) {
	out := make([]json.RawMessage, 0, len(s.catalog.facilities))
	for _, f := range s.catalog.facilities {
		out = append(out, f.json)
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"facilities": out})
}

func (s *Server) listPlans(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != "" {
		if _, err := s.readProject(r, id); err != nil {
			s.writeError(w, err)
			return
		}
	}
	s.writePlans(w, r)
}

// writePlans writes the plans that match the request's filters.
func (s *Server) writePlans(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	inc := s.parseIncludes(q)
	out := make([]planJSON, 0, len(s.catalog.plans))
	for _, p := range s.catalog.plans {
		if p.matches(q) {
			out = append(out, p.render(inc))
		}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"plans": out})
}

func (s *Server) listOperatingSystems(w http.ResponseWriter, r *http.Request) {
	out := make([]json.RawMessage, 0, len(s.catalog.oses))
	for _, o := range s.catalog.oses {
		out = append(out, o.json)
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"operating_systems": out})
}

// capacityLevel maps servers left to the API's levels.
func capacityLevel(left int) string {
	switch {
	case left <= 0:
		return "unavailable"
	case left <= 5:
		return "limited"
	}
	return "normal"
}

// listCapacity answers GET /capacity (keyed by facility code, as packngo's CapacityService.List
// reads it) and GET /capacity/metros (keyed by metro code). The simulator counts servers per
// metro, so every facility of a metro shows the metro's level.
func (s *Server) listCapacity(w http.ResponseWriter, r *http.Request) {
	byMetro := strings.HasSuffix(r.URL.Path, "/metros")
	s.readLock()
	report := map[string]map[string]map[string]string{}
	for metro, plans := range s.st.Capacity {
		for _, key := range s.locationKeys(metro, byMetro) {
			report[key] = map[string]map[string]string{}
			for plan, left := range plans {
				report[key][plan] = map[string]string{"level": capacityLevel(left)}
			}
		}
	}
	s.mu.RUnlock()
	s.writeJSON(w, http.StatusOK, map[string]any{"capacity": report})
}

type capacityServer struct {
	Metro     string `json:"metro,omitempty"`
	Facility  string `json:"facility,omitempty"`
	Plan      string `json:"plan"`
	Quantity  any    `json:"quantity"`
	Available bool   `json:"available"`
}

// checkCapacity answers POST /capacity and /capacity/metros: each server line comes back as
// sent, with available set. Metros, facilities and plans are named by code (slug) or ID.
func (s *Server) checkCapacity(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Servers []capacityServer `json:"servers"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	s.readLock()
	for i, srv := range req.Servers {
		m := s.catalog.metro(srv.Metro)
		if f := s.catalog.facility(srv.Facility); m == nil && f != nil {
			m = f.metro
		}
		p := s.catalog.plan(srv.Plan)
		qty := 1
		switch q := srv.Quantity.(type) {
		case float64:
			qty = int(q)
		case string:
			if n, err := json.Number(q).Int64(); err == nil {
				qty = int(n)
			}
		}
		req.Servers[i].Available = m != nil && p != nil && s.st.Capacity[m.Code][p.Slug] >= qty
	}
	s.mu.RUnlock()
	s.writeJSON(w, http.StatusOK, req)
}

// locationKeys are the keys a per-metro figure is reported under: the metro
// itself, or each of its facilities for the facility-keyed endpoints.
func (s *Server) locationKeys(metro string, byMetro bool) []string {
	if byMetro {
		return []string{metro}
	}
	var keys []string
	if m := s.catalog.metro(metro); m != nil {
		for _, f := range m.Facilities {
			keys = append(keys, f.Code)
		}
	}
	return keys
}
