package packetsim

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Fault kinds (reference section 6.3).
const (
	// Request-level faults, applied before the handler runs.
	FaultLatency        = "latency"          // sleep Latency + random(Jitter)
	FaultHang           = "hang"             // never answer until the client gives up (or Duration, default 10m)
	FaultRateLimit      = "rate_limit"       // forced 429 with Retry-After
	FaultHTTPError      = "http_error"       // Status (500) with Body json|html|truncated|reset
	FaultCommitThenFail = "commit_then_fail" // the handler runs and stores, then Status/Body replaces the answer
	FaultChaos          = "chaos"            // a random mix of latency, 5xx, 429 and truncation at Probability

	// Behaviour faults, consulted by handlers when they create or change things.
	FaultListLag         = "list_lag"         // new devices/IPs appear in lists Duration late, deleted devices linger
	FaultDeviceStuck     = "device_stuck"     // new device holds State (provisioning) for Duration (0 = forever)
	FaultDeviceFail      = "device_fail"      // new device (or ResourceID) goes failed after Duration; Forbidden403
	FaultDeviceVanish    = "device_vanish"    // device deleted out of band (ResourceID now, or new devices after Duration)
	FaultDevicePower     = "device_power"     // ResourceID forced to State (inactive, powering_off, reinstalling...)
	FaultSlowDeprovision = "slow_deprovision" // deprovisioning and hardware wipe last Duration longer
	FaultCapacity        = "capacity"         // Metro/Plan left to Remaining servers
	FaultHWExhausted     = "hw_exhausted"     // hardware reservation creates answer 503
	FaultProjectQuota    = "project_quota"    // ProjectID gets MaxDevices / IPv4Quota
	FaultEIPPending      = "eip_pending"      // new reservations pending for Duration, then State created|denied
	FaultEIPSlowAssign   = "eip_slow_assign"  // assignments show on reservation/device Duration late; or Message → 422
	FaultBGP             = "bgp"              // Target config|session → 422, neighbors → empty
	FaultAuth            = "auth"             // Token rotated → 401; ProjectID forbidden → 403

	// FaultHostDown is for the boot emulation (bootemu): the operating system of ResourceID (or of
	// every device carrying Tag) stops answering, as a hung kernel or a dead disk would, while the
	// device stays active in the API. Its Node goes NotReady. Every boot (reboot, power-on,
	// reinstall) counts as one firing: the host comes back up at the Count-th boot after the
	// fault, or never while the fault exists when Count is 0.
	FaultHostDown = "host_down"
)

// Fault is one injected misbehaviour. Scope fields narrow where it applies;
// trigger fields decide how often; the rest are kind-specific parameters.
type Fault struct {
	ID   string `json:"id,omitempty"`
	Kind string `json:"kind"`

	// Route is a route template as in Counters ("POST /projects/{id}/devices"),
	// a template without method ("/devices/{id}"), or a prefix ending in "*".
	Route      string `json:"route,omitempty"`
	Method     string `json:"method,omitempty"`
	ResourceID string `json:"resource_id,omitempty"`
	Tag        string `json:"tag,omitempty"` // device/IP tag, for create-time faults

	Count       int     `json:"count,omitempty"`       // fire this many times, then expire (0 = forever)
	EveryNth    int     `json:"every_nth,omitempty"`   // fire on every Nth matching call
	Probability float64 `json:"probability,omitempty"` // fire with this probability (0 = always)

	Latency    time.Duration `json:"latency,omitempty"`
	Jitter     time.Duration `json:"jitter,omitempty"`
	Duration   time.Duration `json:"duration,omitempty"`
	Status     int           `json:"status,omitempty"`
	Body       string        `json:"body,omitempty"` // json (default), html, truncated, reset
	Message    string        `json:"message,omitempty"`
	RetryAfter int           `json:"retry_after,omitempty"` // seconds
	State      string        `json:"state,omitempty"`
	Metro      string        `json:"metro,omitempty"`
	Plan       string        `json:"plan,omitempty"`
	Remaining  int           `json:"remaining,omitempty"`
	Token      string        `json:"token,omitempty"`
	ProjectID  string        `json:"project_id,omitempty"`
	Target     string        `json:"target,omitempty"`
	MaxDevices int           `json:"max_devices,omitempty"`
	IPv4Quota  int           `json:"ipv4_quota,omitempty"`
	// Forbidden403 makes a failed device answer 403 on GET (CAPP's quirk).
	Forbidden403 bool `json:"forbidden_403,omitempty"`

	seen, fired int
}

// faultJSON accepts durations as "30s" strings (or nanoseconds).
type faultJSON struct {
	Latency  any `json:"latency,omitempty"`
	Jitter   any `json:"jitter,omitempty"`
	Duration any `json:"duration,omitempty"`
}

func parseDuration(v any) (time.Duration, error) {
	switch d := v.(type) {
	case nil:
		return 0, nil
	case float64:
		return time.Duration(d), nil
	case string:
		return time.ParseDuration(d)
	}
	return 0, fmt.Errorf("invalid duration %v", v)
}

func (f *Fault) UnmarshalJSON(data []byte) error {
	type plain Fault
	var durations faultJSON
	if err := json.Unmarshal(data, &durations); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	delete(raw, "latency")
	delete(raw, "jitter")
	delete(raw, "duration")
	rest, _ := json.Marshal(raw)
	var p plain
	if err := json.Unmarshal(rest, &p); err != nil {
		return err
	}
	*f = Fault(p)
	var err error
	if f.Latency, err = parseDuration(durations.Latency); err != nil {
		return err
	}
	if f.Jitter, err = parseDuration(durations.Jitter); err != nil {
		return err
	}
	f.Duration, err = parseDuration(durations.Duration)
	return err
}

func (f Fault) MarshalJSON() ([]byte, error) {
	type plain Fault
	out := struct {
		plain
		Latency  string `json:"latency,omitempty"`
		Jitter   string `json:"jitter,omitempty"`
		Duration string `json:"duration,omitempty"`
	}{plain: plain(f)}
	if f.Latency != 0 {
		out.Latency = f.Latency.String()
	}
	if f.Jitter != 0 {
		out.Jitter = f.Jitter.String()
	}
	if f.Duration != 0 {
		out.Duration = f.Duration.String()
	}
	return json.Marshal(out)
}

// FaultProfile is the file format of --faults: a list of faults.
type FaultProfile struct {
	Faults []Fault `json:"faults"`
}

// faultSet holds the active faults and the seeded RNG that drives them.
type faultSet struct {
	mu     sync.Mutex
	faults []*Fault
	rng    *rand.Rand
	// revoked tokens and forbidden projects (auth faults).
	revoked   map[string]bool
	forbidden map[string]bool
}

func newFaultSet(seed int64) *faultSet {
	return &faultSet{rng: rand.New(rand.NewSource(seed)), revoked: map[string]bool{}, forbidden: map[string]bool{}}
}

func (fs *faultSet) add(f Fault) string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.ID == "" {
		f.ID = uuid.NewString()
	}
	if f.Kind == FaultAuth {
		if f.Token != "" {
			fs.revoked[f.Token] = true
		}
		if f.ProjectID != "" {
			fs.forbidden[strings.ToLower(f.ProjectID)] = true
		}
	}
	fs.faults = append(fs.faults, &f)
	return f.ID
}

func (fs *faultSet) remove(id string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.faults {
		if f.ID == id {
			fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
			fs.rebuildAuth()
			return true
		}
	}
	return false
}

func (fs *faultSet) clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.faults = nil
	fs.rebuildAuth()
}

func (fs *faultSet) rebuildAuth() {
	fs.revoked, fs.forbidden = map[string]bool{}, map[string]bool{}
	for _, f := range fs.faults {
		if f.Kind == FaultAuth {
			if f.Token != "" {
				fs.revoked[f.Token] = true
			}
			if f.ProjectID != "" {
				fs.forbidden[strings.ToLower(f.ProjectID)] = true
			}
		}
	}
}

func (fs *faultSet) list() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, len(fs.faults))
	for i, f := range fs.faults {
		out[i] = *f
	}
	return out
}

func (fs *faultSet) isRevoked(token string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.revoked[token]
}

func (fs *faultSet) isForbidden(projectID string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.forbidden[projectID]
}

// faultCall describes the call a fault may apply to.
type faultCall struct {
	method, route, path, resourceID string
	tags                            []string
}

func callOf(r *http.Request) faultCall {
	return faultCall{method: r.Method, route: routeOf(r), path: r.URL.Path, resourceID: strings.ToLower(r.PathValue("id"))}
}

func (f *Fault) matches(c faultCall) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, c.method) {
		return false
	}
	if f.Route != "" {
		switch {
		case strings.HasSuffix(f.Route, "*"):
			prefix := strings.TrimSuffix(f.Route, "*")
			if !strings.HasPrefix(c.route, prefix) && !strings.HasPrefix(strings.TrimPrefix(c.route, c.method+" "), prefix) &&
				!strings.HasPrefix(strings.TrimPrefix(c.path, apiPrefix), prefix) {
				return false
			}
		case strings.Contains(f.Route, " "):
			if f.Route != c.route {
				return false
			}
		default:
			if strings.TrimPrefix(c.route, c.method+" ") != f.Route {
				return false
			}
		}
	}
	if f.ResourceID != "" && !strings.EqualFold(f.ResourceID, c.resourceID) {
		return false
	}
	if f.Tag != "" && !hasTag(c.tags, f.Tag) {
		return false
	}
	return true
}

// take returns a copy of the first fault of one of kinds that matches and
// fires for this call, updating its counters.
func (fs *faultSet) take(c faultCall, kinds ...string) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i := 0; i < len(fs.faults); i++ {
		f := fs.faults[i]
		if !kindIn(f.Kind, kinds) || !f.matches(c) {
			continue
		}
		f.seen++
		if f.EveryNth > 0 && f.seen%f.EveryNth != 0 {
			continue
		}
		if f.Probability > 0 && f.Kind != FaultChaos && fs.rng.Float64() >= f.Probability {
			continue
		}
		f.fired++
		if f.Count > 0 && f.fired >= f.Count {
			fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
		}
		return *f, true
	}
	return Fault{}, false
}

// holds reports whether a fault of kind applies to c, without counting a firing.
func (fs *faultSet) holds(c faultCall, kind string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.faults {
		if f.Kind == kind && f.matches(c) {
			return true
		}
	}
	return false
}

func kindIn(kind string, kinds []string) bool {
	for _, k := range kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// chaosPick turns a chaos fault into a concrete one with the seeded RNG, or
// reports that this call is spared.
func (fs *faultSet) chaosPick(f Fault) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.rng.Float64() >= f.Probability {
		return Fault{}, false
	}
	switch fs.rng.Intn(5) {
	case 0:
		return Fault{Kind: FaultLatency, Latency: time.Duration(50+fs.rng.Intn(450)) * time.Millisecond}, true
	case 1:
		return Fault{Kind: FaultHTTPError, Status: 500}, true
	case 2:
		return Fault{Kind: FaultHTTPError, Status: 502, Body: "html"}, true
	case 3:
		return Fault{Kind: FaultRateLimit, RetryAfter: 1}, true
	}
	return Fault{Kind: FaultHTTPError, Status: 500, Body: "truncated"}, true
}

func (fs *faultSet) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return time.Duration(fs.rng.Int63n(int64(d)))
}
