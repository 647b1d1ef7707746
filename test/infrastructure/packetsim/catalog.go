package packetsim

import (
	"encoding/json"
	"net/http"
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
	json     json.RawMessage // full, for /plans
	jsonLite json.RawMessage // inside devices and reservations
}

type osEntry struct {
	SeedOS
	json json.RawMessage
}

type metroJSON struct {
	ID      string `json:"id"`
	Code    string `json:"code"`
	Name    string `json:"name"`
	Country string `json:"country"`
	Href    string `json:"href"`
}

type facilityJSON struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Code     string          `json:"code"`
	Features []string        `json:"features"`
	Address  map[string]any  `json:"address"`
	Metro    json.RawMessage `json:"metro"`
	Href     string          `json:"href"`
}

type planJSON struct {
	ID                string            `json:"id"`
	Slug              string            `json:"slug"`
	Name              string            `json:"name"`
	Description       string            `json:"description"`
	Line              string            `json:"line"`
	Legacy            bool              `json:"legacy"`
	Class             string            `json:"class"`
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

func newCatalog(seed *Seed) *catalog {
	c := &catalog{metroByKey: map[string]*metroEntry{}, facilityByKey: map[string]*facilityEntry{},
		planByKey: map[string]*planEntry{}, osBySlug: map[string]*osEntry{}}
	for _, m := range seed.Metros {
		me := &metroEntry{SeedMetro: m}
		me.json = mustJSON(metroJSON{ID: m.ID, Code: m.Code, Name: m.Name, Country: m.Country, Href: apiPrefix + "/locations/metros/" + m.ID})
		c.metros = append(c.metros, me)
		c.metroByKey[strings.ToLower(m.Code)] = me
		c.metroByKey[m.ID] = me
		for _, f := range m.Facilities {
			fe := &facilityEntry{SeedFacility: f, metro: me}
			features := f.Features
			if features == nil {
				features = []string{}
			}
			fe.json = mustJSON(facilityJSON{ID: f.ID, Name: f.Name, Code: f.Code, Features: features,
				Address: map[string]any{"address": f.Name, "zip_code": "00000", "country": m.Country},
				Metro:   me.json, Href: apiPrefix + "/facilities/" + f.ID})
			c.facilities = append(c.facilities, fe)
			c.facilityByKey[strings.ToLower(f.Code)] = fe
			c.facilityByKey[f.ID] = fe
		}
	}
	for _, p := range seed.Plans {
		pe := &planEntry{SeedPlan: p}
		base := planJSON{ID: p.ID, Slug: p.Slug, Name: p.Name, Description: p.Description, Line: p.Line, Class: p.Class,
			Specs: p.Specs, Pricing: map[string]any{"hour": p.PriceHour}, DeploymentTypes: []string{"on_demand", "reserved"},
			Href: apiPrefix + "/plans/" + p.ID}
		pe.jsonLite = mustJSON(base)
		for _, m := range c.metros {
			if _, ok := p.Capacity[m.Code]; !ok {
				continue
			}
			base.AvailableInMetros = append(base.AvailableInMetros, m.json)
			for _, f := range m.Facilities {
				base.AvailableIn = append(base.AvailableIn, mustJSON(map[string]string{"href": apiPrefix + "/facilities/" + f.ID, "code": f.Code}))
			}
		}
		pe.json = mustJSON(base)
		c.plans = append(c.plans, pe)
		c.planByKey[strings.ToLower(p.Slug)] = pe
		c.planByKey[p.ID] = pe
	}
	for _, o := range seed.OperatingSystems {
		oe := &osEntry{SeedOS: o}
		on := o.ProvisionableOn
		if len(on) == 0 {
			for _, p := range seed.Plans {
				on = append(on, p.Slug)
			}
		}
		oe.json = mustJSON(map[string]any{"id": stableID("os", o.Slug), "slug": o.Slug, "name": o.Name, "distro": o.Distro,
			"version": o.Version, "provisionable_on": on, "preinstallable": false, "pricing": map[string]any{}, "licensed": false})
		c.oses = append(c.oses, oe)
		c.osBySlug[strings.ToLower(o.Slug)] = oe
	}
	return c
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
	out := make([]json.RawMessage, 0, len(s.catalog.plans))
	for _, p := range s.catalog.plans {
		out = append(out, p.json)
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

func (s *Server) listCapacity(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	report := map[string]map[string]map[string]string{}
	for metro, plans := range s.st.Capacity {
		report[metro] = map[string]map[string]string{}
		for plan, left := range plans {
			report[metro][plan] = map[string]string{"level": capacityLevel(left)}
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
		metro := srv.Metro
		if f := s.catalog.facility(srv.Facility); metro == "" && f != nil {
			metro = f.metro.Code
		}
		qty := 1
		switch q := srv.Quantity.(type) {
		case float64:
			qty = int(q)
		case string:
			if n, err := json.Number(q).Int64(); err == nil {
				qty = int(n)
			}
		}
		req.Servers[i].Available = s.st.Capacity[strings.ToLower(metro)][srv.Plan] >= qty
	}
	s.mu.RUnlock()
	s.writeJSON(w, http.StatusOK, req)
}
