package packetsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// deviceCreateRequest accepts every shape packngo and the spec send:
// facility as string or array, customdata as string or object, tags null,
// spot_price_max as number or string, features as map or array.
type deviceCreateRequest struct {
	Hostname              string             `json:"hostname"`
	Plan                  string             `json:"plan"`
	Metro                 string             `json:"metro"`
	Facility              json.RawMessage    `json:"facility"`
	OS                    string             `json:"operating_system"`
	BillingCycle          string             `json:"billing_cycle"`
	UserData              string             `json:"userdata"`
	CustomData            json.RawMessage    `json:"customdata"`
	Tags                  []string           `json:"tags"`
	Description           string             `json:"description"`
	IPXEScriptURL         string             `json:"ipxe_script_url"`
	AlwaysPXE             bool               `json:"always_pxe"`
	HardwareReservationID string             `json:"hardware_reservation_id"`
	SpotInstance          bool               `json:"spot_instance"`
	SpotPriceMax          json.RawMessage    `json:"spot_price_max"`
	TerminationTime       *time.Time         `json:"termination_time"`
	ProjectSSHKeys        []string           `json:"project_ssh_keys"`
	UserSSHKeys           []string           `json:"user_ssh_keys"`
	NoSSHKeys             bool               `json:"no_ssh_keys"`
	IPAddresses           []ipAddressRequest `json:"ip_addresses"`
	PublicIPv4SubnetSize  int                `json:"public_ipv4_subnet_size"`
	Storage               json.RawMessage    `json:"storage"`
}

// parseCustomData turns a JSON object, a JSON string holding an object, or
// nothing into a map (the API always returns an object).
func parseCustomData(raw json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if strings.TrimSpace(str) == "" {
			return out, nil
		}
		raw = json.RawMessage(str)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "Customdata must be a JSON object")
	}
	return out, nil
}

func parseFacilities(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "Facility is invalid")
	}
	return many, nil
}

func parseFloat(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return strconv.ParseFloat(str, 64)
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err
}

// userdataPrefixes are the formats cloud-init and friends recognise. "## template: jinja" is
// cloud-init's header for a Jinja-rendered part; Cluster API's kubeadm bootstrap data starts with
// it ("## template: jinja\n#cloud-config"), and the real API provisions such devices.
var userdataPrefixes = []string{"#!", "#cloud-config", "#cloud-boothook", "#include", "#part-handler", "#upstart-job", "## template: jinja",
	"#ps1", "#ps1_sysnative", "Content-Type: multipart", "{", "<script>", "<powershell>"}

func (s *Server) validateUserdata(u string) error {
	if u == "" || s.opts.Knobs.SkipUserdataValidation {
		return nil
	}
	if len(u) > s.opts.Knobs.MaxUserdataBytes {
		return errorf(http.StatusUnprocessableEntity, msgUserdataTooLong)
	}
	trimmed := strings.TrimLeft(u, " \t\r\n")
	for _, p := range userdataPrefixes {
		if strings.HasPrefix(trimmed, p) {
			return nil
		}
	}
	return errorf(http.StatusUnprocessableEntity, msgUserdataFormat)
}

// validateBillingCycle accepts the billing cycles of Packet's API ("" means hourly).
func validateBillingCycle(c string) error {
	switch c {
	case "", "hourly", "daily", "monthly", "yearly":
		return nil
	}
	return errorf(http.StatusUnprocessableEntity, "Billing cycle is not included in the list")
}

var hostnamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

// readProject checks the project exists and the token may see it. Callers
// hold no lock; it takes the read lock briefly.
func (s *Server) readProject(r *http.Request, rawID string) (*Project, error) {
	if !isUUID(rawID) {
		return nil, notFound()
	}
	id := strings.ToLower(rawID)
	s.readLock()
	defer s.mu.RUnlock()
	return s.project(r, id)
}

// project looks a project up under a held lock.
func (s *Server) project(r *http.Request, id string) (*Project, error) {
	p := s.st.Projects[id]
	if p == nil {
		return nil, notFound()
	}
	if !s.tokenAllows(r, id) {
		return nil, forbidden("project")
	}
	return p, nil
}

// device looks a device up under a held lock, with project scoping.
func (s *Server) device(r *http.Request) (*Device, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	d := s.st.Devices[id]
	if d == nil {
		return nil, notFound()
	}
	if !s.tokenAllows(r, d.ProjectID) {
		return nil, forbidden("device")
	}
	return d, nil
}

func (s *Server) createDevice(w http.ResponseWriter, r *http.Request) {
	var req deviceCreateRequest
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
	d, err := s.buildDevice(r, projectID, &req, now)
	var body any
	if err == nil {
		body = s.renderDevice(d, s.parseIncludes(r.URL.Query()), now)
	}
	s.mu.Unlock()
	s.respond(w, http.StatusCreated, body, err)
}

// buildDevice validates a create request and stores the device. Caller
// holds the write lock, which makes hardware-reservation claims atomic.
func (s *Server) buildDevice(r *http.Request, projectID string, req *deviceCreateRequest, now time.Time) (*Device, error) {
	project, err := s.project(r, projectID)
	if err != nil {
		return nil, err
	}
	choice, err := s.deviceChoice(req)
	if err != nil {
		return nil, err
	}
	if err := s.validateDeviceCreate(req, choice); err != nil {
		return nil, err
	}
	parsed, err := parseDeviceCreate(req, choice, now)
	if err != nil {
		return nil, err
	}
	if project.MaxDevices > 0 && len(s.st.DeviceOrder[projectID]) >= project.MaxDevices {
		return nil, errorf(http.StatusUnprocessableEntity, "Project has reached its device limit")
	}

	d := newDevice(projectID, req, choice, parsed, now)
	call := callOf(r)
	call.tags = d.Tags
	if err := s.placeDevice(call, d, req, choice, parsed.spotMax, now); err != nil {
		return nil, err
	}
	d.SSHKeyIDs = s.deviceSSHKeys(projectID, req)
	d.Ports = s.newPorts(d)
	s.applyDeviceFaults(call, d, now)

	s.st.addDevice(d)
	// The 201 always shows "queued", as the real API does; with zero
	// timings the device moves on the next request.
	s.enterState(d, StateQueued, now)
	return d, nil
}

// deviceChoice is the plan, operating system and location a create asks for.
type deviceChoice struct {
	plan       *planEntry
	os         *osEntry
	metro      *metroEntry // nil when the create names facilities (or a hardware reservation) instead
	facilities []string
}

// deviceChoice looks up the plan, operating system, metro and facilities a create names; every
// one that is missing or unknown is reported in one 422, as the API does.
func (s *Server) deviceChoice(req *deviceCreateRequest) (deviceChoice, error) {
	var errs []string
	c := deviceChoice{plan: s.catalog.plan(req.Plan), os: s.catalog.os(req.OS)}
	if req.Plan == "" || c.plan == nil {
		errs = append(errs, "Plan is not valid")
	}
	if req.OS == "" || c.os == nil {
		errs = append(errs, "Operating system is not valid")
	}
	var err error
	if c.facilities, err = parseFacilities(req.Facility); err != nil {
		return c, err
	}
	if req.Metro == "" && len(c.facilities) == 0 && req.HardwareReservationID == "" {
		errs = append(errs, msgFacilityBlank)
	}
	if req.Metro != "" {
		if c.metro = s.catalog.metro(req.Metro); c.metro == nil {
			errs = append(errs, "Metro is not valid")
		}
	}
	for _, f := range c.facilities {
		if f != "any" && s.catalog.facility(f) == nil {
			errs = append(errs, "Facility is not valid")
			break
		}
	}
	if len(errs) > 0 {
		return c, errorf(http.StatusUnprocessableEntity, errs...)
	}
	return c, nil
}

// validateDeviceCreate checks that the operating system suits the plan, the hostname, billing
// cycle and user-data, and that a custom_ipxe device has exactly one iPXE script.
func (s *Server) validateDeviceCreate(req *deviceCreateRequest, c deviceChoice) error {
	if !c.os.provisionableOn(c.plan.Slug) {
		return errorf(http.StatusUnprocessableEntity, fmt.Sprintf("Operating system %s is not provisionable on plan %s", c.os.Slug, c.plan.Slug))
	}
	if req.Hostname != "" && !hostnamePattern.MatchString(req.Hostname) {
		return errorf(http.StatusUnprocessableEntity, "Hostname is invalid")
	}
	if err := validateBillingCycle(req.BillingCycle); err != nil {
		return err
	}
	if err := s.validateUserdata(req.UserData); err != nil {
		return err
	}
	if c.os.Slug == "custom_ipxe" {
		ipxeUserdata := strings.HasPrefix(req.UserData, "#!ipxe")
		if req.IPXEScriptURL != "" && ipxeUserdata {
			return errorf(http.StatusUnprocessableEntity, msgIPXEBoth)
		}
		if req.IPXEScriptURL == "" && !ipxeUserdata {
			return errorf(http.StatusUnprocessableEntity, msgIPXENeither)
		}
	}
	return nil
}

// parsedDeviceCreate are the fields of a create that are parsed rather than copied.
type parsedDeviceCreate struct {
	customData    map[string]any
	managementIPs []ManagementIP
	storage       json.RawMessage
	spotMax       float64
}

// parseDeviceCreate parses a create's customdata, ip_addresses, storage and spot bid, and checks
// the spot bid, termination time and tags.
func parseDeviceCreate(req *deviceCreateRequest, choice deviceChoice, now time.Time) (parsedDeviceCreate, error) {
	var p parsedDeviceCreate
	var err error
	if p.customData, err = parseCustomData(req.CustomData); err != nil {
		return p, err
	}
	if p.managementIPs, err = planManagementIPs(req.IPAddresses, choice.os, req.PublicIPv4SubnetSize, true); err != nil {
		return p, err
	}
	if p.storage, err = validateStorage(req.Storage, choice.plan); err != nil {
		return p, err
	}
	if p.spotMax, err = parseFloat(req.SpotPriceMax); err != nil {
		return p, errorf(http.StatusUnprocessableEntity, "Spot price max is not a number")
	}
	if req.SpotInstance && p.spotMax <= 0 {
		return p, errorf(http.StatusUnprocessableEntity, "Spot price max must be greater than 0")
	}
	if req.TerminationTime != nil && req.TerminationTime.Before(now) {
		return p, errorf(http.StatusUnprocessableEntity, "Termination time must be in the future")
	}
	for _, tag := range req.Tags {
		if len(tag) > 255 {
			return p, errorf(http.StatusUnprocessableEntity, "Tags are too long (maximum is 255 characters)")
		}
	}
	return p, nil
}

// newDevice is the device a validated create describes, with the API's defaults filled in; it
// has no location yet.
func newDevice(projectID string, req *deviceCreateRequest, c deviceChoice, p parsedDeviceCreate, now time.Time) *Device {
	d := &Device{ID: uuid.NewString(), ProjectID: projectID, Plan: c.plan.Slug, OS: c.os.Slug, Hostname: req.Hostname,
		Description: req.Description, Tags: req.Tags, UserData: req.UserData, CustomData: p.customData, BillingCycle: req.BillingCycle,
		IPXEScriptURL: req.IPXEScriptURL, AlwaysPXE: req.AlwaysPXE, SpotInstance: req.SpotInstance, SpotPriceMax: p.spotMax,
		ManagementIPs: p.managementIPs, Storage: p.storage, CreatedAt: now, UpdatedAt: now}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	if d.BillingCycle == "" {
		d.BillingCycle = "hourly"
	}
	if req.TerminationTime != nil {
		t := req.TerminationTime.UTC()
		d.TerminationTime = &t
	}
	d.ShortID = d.ID[:8]
	if d.Hostname == "" {
		d.Hostname = "sim-" + d.ShortID
	}
	return d
}

// placeDevice puts the device on the hardware reservation the create names, or in a facility
// with capacity for its plan (taking one server of it), checking a spot bid against the price.
func (s *Server) placeDevice(call faultCall, d *Device, req *deviceCreateRequest, c deviceChoice, spotMax float64, now time.Time) error {
	if req.SpotInstance && req.HardwareReservationID != "" {
		return errorf(http.StatusUnprocessableEntity, "Spot instances cannot be created on hardware reservations")
	}
	if req.HardwareReservationID != "" {
		hw, err := s.claimHardwareReservation(call, d.ProjectID, req.HardwareReservationID, c.plan, c.metro, c.facilities, now)
		if err != nil {
			return err
		}
		hw.DeviceID = d.ID
		d.HardwareReservationID = hw.ID
		d.Plan, d.Facility = hw.Plan, hw.Facility
		d.Metro = s.catalog.facility(hw.Facility).metro.Code
		return nil
	}
	if way := deploymentType(req.SpotInstance); !hasTag(c.plan.deploymentTypes, way) {
		// Packet's words unverified; the point is a 422 that names the plan,
		// not the capacity 503 an on-demand plan without servers gets.
		return errorf(http.StatusUnprocessableEntity, "Plan "+c.plan.Slug+" is not available for "+way+" deployment")
	}
	fac, err := s.placeOnDemand(call, c.plan, c.metro, c.facilities)
	if err != nil {
		return err
	}
	d.Facility, d.Metro = fac.Code, fac.metro.Code
	if req.SpotInstance {
		if err := s.checkSpotBid(d.Metro, d.Plan, spotMax); err != nil {
			return err
		}
	}
	s.st.Capacity[d.Metro][d.Plan]--
	return nil
}

// deploymentType is how a device without a hardware reservation is sold.
func deploymentType(spot bool) string {
	if spot {
		return "spot_market"
	}
	return "on_demand"
}

// placeOnDemand picks a facility with on-demand capacity for the plan.
func (s *Server) placeOnDemand(call faultCall, plan *planEntry, metro *metroEntry, facilities []string) (*facilityEntry, error) {
	if f, ok := s.faults.take(call, FaultCapacity); ok && f.Metro == "" && f.Plan == "" {
		return nil, errorf(s.opts.Knobs.CapacityStatus, msgNoCapacity)
	}
	var candidates []*facilityEntry
	if metro != nil {
		for _, f := range metro.Facilities {
			candidates = append(candidates, s.catalog.facility(f.Code))
		}
	}
	for _, code := range facilities {
		if code == "any" {
			candidates = append(candidates, s.catalog.facilities...)
			continue
		}
		candidates = append(candidates, s.catalog.facility(code))
	}
	offered := false
	for _, f := range candidates {
		if metro != nil && f.metro != metro {
			continue
		}
		if _, ok := plan.Capacity[f.metro.Code]; !ok {
			continue
		}
		offered = true
		if s.st.Capacity[f.metro.Code][plan.Slug] > 0 {
			return f, nil
		}
	}
	if !offered {
		return nil, errorf(http.StatusUnprocessableEntity, fmt.Sprintf("Plan %s is not available in the selected location", plan.Slug))
	}
	return nil, errorf(s.opts.Knobs.CapacityStatus, msgNoCapacity)
}

// applyDeviceFaults attaches create-time behaviour faults to a new device.
func (s *Server) applyDeviceFaults(call faultCall, d *Device, now time.Time) {
	if f, ok := s.faults.take(call, FaultDeviceStuck); ok {
		d.Hold, d.HoldState = true, f.State
		if d.HoldState == "" {
			d.HoldState = StateProvisioning
		}
		if f.Duration > 0 {
			d.HoldUntil = now.Add(f.Duration)
		}
	}
	if f, ok := s.faults.take(call, FaultDeviceFail); ok {
		d.FailAt = now.Add(f.Duration)
		d.Forbidden = f.Forbidden403
	}
	if f, ok := s.faults.take(call, FaultDeviceVanish); ok && f.ResourceID == "" {
		d.VanishAt = now.Add(f.Duration)
	}
	if f, ok := s.faults.take(call, FaultListLag); ok {
		d.ListVisibleAt = now.Add(f.Duration)
	}
	s.noteDue(deviceDue(d))
}

func (s *Server) getDevice(w http.ResponseWriter, r *http.Request) {
	now := s.readLock()
	d, err := s.device(r)
	var body any
	if err == nil && d.Forbidden && d.State == StateFailed || err == nil && s.opts.Knobs.FailedDevicesReturn403 && d.State == StateFailed {
		err = forbidden("device")
	}
	if err == nil {
		body = s.renderDevice(d, s.parseIncludes(r.URL.Query()), now)
	}
	s.mu.RUnlock()
	s.respond(w, http.StatusOK, body, err)
}

func (s *Server) listDevices(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	projectID, err := pathID(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	now := s.readLock()
	defer s.mu.RUnlock()
	if _, err := s.project(r, projectID); err != nil {
		s.writeError(w, err)
		return
	}
	match := s.deviceFilter(q)
	devices := s.st.deviceLists[projectID]
	matched := make([]*Device, 0, len(devices))
	for _, d := range devices {
		if d.ListVisibleAt.After(now) || !match(d) {
			continue
		}
		matched = append(matched, d)
	}
	for i := range s.st.Ghosts {
		g := &s.st.Ghosts[i]
		if g.Device.ProjectID == projectID && g.Until.After(now) && match(&g.Device) {
			matched = append(matched, &g.Device)
		}
	}
	p := s.parsePage(q, s.opts.PerPage)
	from, to := p.window(len(matched))
	inc := s.parseIncludes(q)
	out := make([]deviceJSON, 0, to-from)
	for _, d := range matched[from:to] {
		out = append(out, s.renderDevice(d, inc, now))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"devices": out, "meta": s.meta(r, p)})
}

// deviceFilter implements the list filters of the spec.
func (s *Server) deviceFilter(q map[string][]string) func(*Device) bool {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	hostname, tag, metro, facility, state := get("hostname"), get("tag"), get("metro"), get("facility"), get("state")
	search, reserved, typ := get("search"), get("reserved"), get("type")
	return func(d *Device) bool {
		switch {
		case hostname != "" && !containsFold(d.Hostname, hostname),
			tag != "" && !hasTag(d.Tags, tag),
			metro != "" && !strings.EqualFold(d.Metro, metro),
			facility != "" && !strings.EqualFold(d.Facility, facility),
			state != "" && d.State != state,
			reserved == "true" && d.HardwareReservationID == "",
			reserved == "false" && d.HardwareReservationID != "",
			typ == "spot" && !d.SpotInstance,
			typ == "reserved" && d.HardwareReservationID == "",
			typ == "ondemand" && (d.SpotInstance || d.HardwareReservationID != ""):
			return false
		}
		return search == "" || s.deviceMatchesSearch(d, search)
	}
}

// deviceMatchesSearch reports whether search= is part of (any case) one of the fields the API
// searches: hostname, description, IDs, plan, facility, OS, reservation, tags and addresses.
func (s *Server) deviceMatchesSearch(d *Device, search string) bool {
	fields := append([]string{d.Hostname, d.Description, d.ID, d.ShortID, d.Plan, d.Facility, d.OS, d.HardwareReservationID}, d.Tags...)
	for _, aid := range d.IPAssignmentIDs {
		if a := s.st.IPAssignments[aid]; a != nil {
			fields = append(fields, a.Address)
		}
	}
	for _, f := range fields {
		if containsFold(f, search) {
			return true
		}
	}
	return false
}

type deviceUpdateRequest struct {
	Hostname      *string         `json:"hostname"`
	Description   *string         `json:"description"`
	UserData      *string         `json:"userdata"`
	Locked        *bool           `json:"locked"`
	Tags          *[]string       `json:"tags"`
	AlwaysPXE     *bool           `json:"always_pxe"`
	IPXEScriptURL *string         `json:"ipxe_script_url"`
	CustomData    json.RawMessage `json:"customdata"`
	BillingCycle  *string         `json:"billing_cycle"`
	SpotInstance  *bool           `json:"spot_instance"`
}

// updateDevice serves PUT (the spec) and PATCH (packngo's Lock/Unlock).
func (s *Server) updateDevice(w http.ResponseWriter, r *http.Request) {
	var req deviceUpdateRequest
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
		customData, err := s.validateDeviceUpdate(&req)
		if err != nil {
			return nil, err
		}
		applyDeviceUpdate(d, &req, customData)
		d.UpdatedAt = now
		return s.renderDevice(d, s.parseIncludes(r.URL.Query()), now), nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusOK, body, err)
}

// validateDeviceUpdate checks an update's hostname, user-data and billing cycle, and parses its
// customdata (nil when it sets none).
func (s *Server) validateDeviceUpdate(req *deviceUpdateRequest) (map[string]any, error) {
	if req.Hostname != nil && !hostnamePattern.MatchString(*req.Hostname) {
		return nil, errorf(http.StatusUnprocessableEntity, "Hostname is invalid")
	}
	if req.UserData != nil {
		if err := s.validateUserdata(*req.UserData); err != nil {
			return nil, err
		}
	}
	if req.BillingCycle != nil {
		if err := validateBillingCycle(*req.BillingCycle); err != nil {
			return nil, err
		}
	}
	if len(req.CustomData) == 0 {
		return nil, nil
	}
	return parseCustomData(req.CustomData)
}

// applyDeviceUpdate sets the fields an update names; turning spot_instance off makes the device
// an on-demand one.
func applyDeviceUpdate(d *Device, req *deviceUpdateRequest, customData map[string]any) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&d.Hostname, req.Hostname)
	set(&d.Description, req.Description)
	set(&d.UserData, req.UserData)
	set(&d.IPXEScriptURL, req.IPXEScriptURL)
	set(&d.BillingCycle, req.BillingCycle)
	if req.Locked != nil {
		d.Locked = *req.Locked
	}
	if req.AlwaysPXE != nil {
		d.AlwaysPXE = *req.AlwaysPXE
	}
	if req.SpotInstance != nil && !*req.SpotInstance {
		d.SpotInstance, d.SpotPriceMax, d.TerminationTime = false, 0, nil
	}
	if req.Tags != nil {
		d.Tags = append([]string{}, (*req.Tags)...)
	}
	if customData != nil {
		d.CustomData = customData
	}
}

// deleteDevice accepts force_delete in the JSON body (packngo) or the query
// (the spec); it only matters for storage, which the simulator has none of.
func (s *Server) deleteDevice(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ForceDelete bool `json:"force_delete"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if v := r.URL.Query().Get("force_delete"); v != "" {
		req.ForceDelete, _ = strconv.ParseBool(v)
	}
	now := s.writeLock()
	err := func() error {
		d, err := s.device(r)
		if err != nil {
			return err
		}
		if d.Locked {
			return errorf(http.StatusUnprocessableEntity, msgLockedDevice)
		}
		if d.State == StateDeprovisioning {
			return nil
		}
		call := callOf(r)
		call.tags = d.Tags
		if f, ok := s.faults.take(call, FaultSlowDeprovision); ok {
			d.ExtraDeprovision = f.Duration
		}
		if f, ok := s.faults.take(call, FaultListLag); ok {
			d.GhostFor = f.Duration
		}
		d.Hold, d.FailAt = false, time.Time{}
		s.enterState(d, StateDeprovisioning, now)
		s.advanceDevice(d, now)
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusNoContent, nil, err)
}

type deviceActionRequest struct {
	Type            string `json:"type"`
	OperatingSystem string `json:"operating_system"`
	PreserveData    bool   `json:"preserve_data"`
	DeprovisionFast bool   `json:"deprovision_fast"`
}

func (s *Server) deviceAction(w http.ResponseWriter, r *http.Request) {
	var req deviceActionRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	now := s.writeLock()
	err := func() error {
		d, err := s.device(r)
		if err != nil {
			return err
		}
		invalid := errorf(http.StatusUnprocessableEntity, fmt.Sprintf("Cannot %s a device that is %s", strings.ReplaceAll(req.Type, "_", " "), d.State))
		switch req.Type {
		case "power_off":
			if d.State != StateActive {
				return invalid
			}
			s.enterState(d, StatePoweringOff, now)
		case "power_on":
			if d.State != StateInactive {
				return invalid
			}
			s.enterState(d, StatePoweringOn, now)
		case "reboot":
			if d.State != StateActive {
				return invalid
			}
			s.addEvent(d, now, "power.reboot", "Device rebooted")
		case "rescue":
			if d.State != StateActive {
				return invalid
			}
			s.enterState(d, StateProvisioning, now)
		case "reinstall":
			if d.State != StateActive && d.State != StateInactive && d.State != StateFailed {
				return invalid
			}
			if err := s.reinstallWith(d, req.OperatingSystem); err != nil {
				return err
			}
			s.enterState(d, StateReinstalling, now)
		default:
			return errorf(http.StatusUnprocessableEntity, "Type is not a valid action")
		}
		s.advanceDevice(d, now)
		return nil
	}()
	s.mu.Unlock()
	s.respond(w, http.StatusAccepted, nil, err)
}

// reinstallWith switches a device about to be reinstalled to operating system slug (none: keep
// its own), which must be provisionable on its plan.
func (s *Server) reinstallWith(d *Device, slug string) error {
	if slug == "" {
		return nil
	}
	o := s.catalog.os(slug)
	if o == nil {
		return errorf(http.StatusUnprocessableEntity, "Operating system is not valid")
	}
	if !o.provisionableOn(d.Plan) {
		return errorf(http.StatusUnprocessableEntity, fmt.Sprintf("Operating system %s is not provisionable on plan %s", o.Slug, d.Plan))
	}
	d.OS = o.Slug
	return nil
}

func (s *Server) listDeviceEvents(w http.ResponseWriter, r *http.Request) {
	s.readLock()
	defer s.mu.RUnlock()
	d, err := s.device(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeEvents(w, r, d.Events, d.ID)
}
