// Package packetsim is a simulator of the Packet / Equinix Metal REST API,
// faithful to what github.com/packethost/packngo v0.31.0 sends and decodes.
// It serves the API under /metal/v1/, a control API under /_sim/ and
// Prometheus metrics under /metrics, and offers the same control operations
// as Go methods for tests. README.md beside this file says what it serves and
// how to drive it.
package packetsim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim/metalspec"
)

const apiPrefix = "/metal/v1"

// Server is one simulated Packet API.
type Server struct {
	opts    Options
	clock   Clock
	timing  Timing
	seed    *Seed
	catalog *catalog

	mu      sync.RWMutex
	st      *store
	nextDue time.Time // earliest pending transition; zero means none
	dirty   bool

	faults   *faultSet
	limiter  *rateLimiter
	recorder *recorder
	metrics  *metrics
	// conformance checks every Metal API exchange against the published spec; nil with NoSpecCheck.
	conformance *conformance
	consoles    consoles
	mux         *http.ServeMux
	lbaas       lbaasRouter // the load-balancer service and its token exchange (lbaas.go)
	handler     http.Handler

	closeOnce sync.Once
	done      chan struct{}
	flushWG   sync.WaitGroup
}

// New builds a simulator. With a StateFile that exists, state is restored.
func New(opts Options) (*Server, error) {
	s := &Server{opts: opts, seed: opts.Seed, clock: opts.Clock, done: make(chan struct{})}
	if s.seed == nil {
		s.seed = DefaultSeed()
	}
	if s.clock == nil {
		s.clock = NewRealClock()
	}
	s.timing = TimingFast
	if opts.Timing != nil {
		s.timing = *opts.Timing
	}
	s.applyDefaults()
	s.catalog = newCatalog(s.seed)
	s.st = newStore(s.seed, s.clock.Now())
	if opts.StateFile != "" {
		st, err := loadStateFile(opts.StateFile)
		if err != nil {
			return nil, err
		}
		if st != nil {
			st.adoptAccount(s.seed, s.clock.Now())
			s.st = st
			if vc, ok := s.clock.(*VirtualClock); ok && st.Now.After(vc.Now()) {
				vc.Advance(st.Now.Sub(vc.Now()))
			}
			s.recomputeNextDue()
		}
	}
	if !opts.NoSpecCheck {
		if err := s.startConformance(); err != nil {
			return nil, err
		}
	}
	s.faults = newFaultSet(opts.RandomSeed)
	s.limiter = newRateLimiter(opts.RateLimit)
	s.recorder = newRecorder(opts.MaxRecordedRequests)
	s.metrics = newMetrics(s)
	s.routes()
	s.handler = http.HandlerFunc(s.serve)
	if opts.StateFile != "" {
		s.startFlusher()
	}
	return s, nil
}

// applyDefaults fills the options a zero Options leaves unset.
func (s *Server) applyDefaults() {
	if s.opts.PerPage <= 0 {
		s.opts.PerPage = 10
	}
	if s.opts.Tokens == nil {
		s.opts.Tokens = map[string][]string{DefaultToken: nil}
	}
	if s.opts.Knobs.CapacityStatus == 0 {
		s.opts.Knobs.CapacityStatus = http.StatusServiceUnavailable
	}
	if s.opts.LBaaSTokenTTL <= 0 {
		s.opts.LBaaSTokenTTL = time.Hour
	}
	if s.opts.Knobs.MaxUserdataBytes == 0 {
		s.opts.Knobs.MaxUserdataBytes = 64 << 10
	}
}

// startConformance loads the published spec (Options.Spec, else the module's copy) and
// starts checking every exchange against it.
func (s *Server) startConformance() error {
	spec := s.opts.Spec
	if spec == nil {
		var err error
		if spec, err = metalspec.Default(); err != nil {
			return err
		}
	}
	s.conformance = newConformance(spec, s.opts.SpecLog)
	return nil
}

// Handler serves /metal/v1/, the load-balancer service under /lbaas/ and
// its token exchange under /iam/, /_sim/ and /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops background work and writes the state file, if any.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		s.flushWG.Wait()
		if s.opts.StateFile != "" {
			err = s.SaveState()
		}
	})
	return err
}

// apiRoute registers a handler for "METHOD /path" under the Metal API's prefix.
type apiRoute func(pattern string, h http.HandlerFunc)

func (s *Server) routes() {
	m := http.NewServeMux()
	api := func(pattern string, h http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		m.HandleFunc(method+" "+apiPrefix+path, s.withRequestFaults(h))
	}
	s.accountRoutes(api)
	s.deviceRoutes(api)
	s.ipRoutes(api)
	s.hardwareReservationRoutes(api)
	s.catalogRoutes(api)
	s.bgpRoutes(api)
	s.sshKeyRoutes(api)
	s.networkRoutes(api)

	s.lbaasRoutes()
	s.controlRoutes(m)
	s.spotControlRoutes(m)
	s.consoleRoutes(m)
	m.Handle("GET /metrics", s.metrics.handler)
	s.mux = m
}

// accountRoutes registers the Metal API routes of users, organizations, projects and their events.
func (s *Server) accountRoutes(api apiRoute) {
	api("GET /user", s.getCurrentUser)
	api("PUT /user", s.updateCurrentUser)
	api("GET /users", s.listUsers)
	api("GET /users/{id}", s.getUser)
	api("GET /organizations", s.listOrganizations)
	api("POST /organizations", s.createOrganization)
	api("GET /organizations/{id}", s.getOrganization)
	api("PATCH /organizations/{id}", s.updateOrganization)
	api("DELETE /organizations/{id}", s.deleteOrganization)
	api("GET /organizations/{id}/payment-methods", s.listPaymentMethods)
	api("GET /organizations/{id}/events", s.listOrganizationEvents)
	api("GET /organizations/{id}/plans", s.listOrganizationPlans)
	api("GET /projects", s.listProjects)
	api("POST /projects", s.createProject)
	api("GET /projects/{id}", s.getProject)
	api("PATCH /projects/{id}", s.updateProject)
	api("DELETE /projects/{id}", s.deleteProject)
	api("GET /projects/{id}/events", s.listProjectEvents)
	api("POST /bgp/discover/{id}", s.discoverBGPSessions)
	api("GET /events/{id}", s.getEvent)
}

// deviceRoutes registers the Metal API routes of devices.
func (s *Server) deviceRoutes(api apiRoute) {
	api("POST /projects/{id}/devices", s.createDevice)
	api("GET /projects/{id}/devices", s.listDevices)
	api("GET /devices/{id}", s.getDevice)
	api("PUT /devices/{id}", s.updateDevice)
	api("PATCH /devices/{id}", s.updateDevice)
	api("DELETE /devices/{id}", s.deleteDevice)
	api("POST /devices/{id}/actions", s.deviceAction)
	api("GET /devices/{id}/events", s.listDeviceEvents)
}

// ipRoutes registers the Metal API routes of IP reservations and assignments.
func (s *Server) ipRoutes(api apiRoute) {
	api("GET /projects/{id}/ips", s.listProjectIPs)
	api("POST /projects/{id}/ips", s.createIPReservation)
	api("GET /ips/{id}", s.getIP)
	api("PATCH /ips/{id}", s.updateIP)
	api("DELETE /ips/{id}", s.deleteIP)
	api("GET /ips/{id}/available", s.availableAddresses)
	api("GET /devices/{id}/ips", s.listDeviceIPs)
	api("POST /devices/{id}/ips", s.assignIP)
}

// hardwareReservationRoutes registers the Metal API routes of hardware reservations.
func (s *Server) hardwareReservationRoutes(api apiRoute) {
	api("GET /projects/{id}/hardware-reservations", s.listHardwareReservations)
	api("GET /hardware-reservations/{id}", s.getHardwareReservation)
}

// catalogRoutes registers the Metal API routes of metros, facilities, plans, operating systems, spot prices and capacity.
func (s *Server) catalogRoutes(api apiRoute) {
	api("GET /locations/metros", s.listMetros)
	api("GET /locations/metros/{id}", s.getMetro)
	api("GET /facilities", s.listFacilities)
	api("GET /plans", s.listPlans)
	api("GET /projects/{id}/plans", s.listPlans)
	api("GET /operating-systems", s.listOperatingSystems)
	api("GET /market/spot/prices", s.listSpotPrices(false))
	api("GET /market/spot/prices/metros", s.listSpotPrices(true))
	api("GET /capacity/metros", s.listCapacity)
	api("POST /capacity/metros", s.checkCapacity)
	api("GET /capacity", s.listCapacity)
	api("POST /capacity", s.checkCapacity)
}

// bgpRoutes registers the Metal API routes of BGP configuration and sessions.
func (s *Server) bgpRoutes(api apiRoute) {
	api("GET /projects/{id}/bgp-config", s.getBGPConfig)
	api("POST /projects/{id}/bgp-configs", s.createBGPConfig)
	api("GET /projects/{id}/bgp/sessions", s.listProjectBGPSessions)
	api("GET /devices/{id}/bgp/sessions", s.listDeviceBGPSessions)
	api("POST /devices/{id}/bgp/sessions", s.createBGPSession)
	api("GET /devices/{id}/bgp/neighbors", s.listBGPNeighbors)
	api("GET /bgp/sessions/{id}", s.getBGPSession)
	api("PUT /bgp/sessions/{id}", s.updateBGPSession)
	api("DELETE /bgp/sessions/{id}", s.deleteBGPSession)
}

// sshKeyRoutes registers the Metal API routes of SSH keys.
func (s *Server) sshKeyRoutes(api apiRoute) {
	api("GET /ssh-keys", s.listUserSSHKeys)
	api("POST /ssh-keys", s.createSSHKey)
	api("GET /projects/{id}/ssh-keys", s.listProjectSSHKeys)
	api("POST /projects/{id}/ssh-keys", s.createSSHKey)
	api("GET /ssh-keys/{id}", s.getSSHKey)
	api("PATCH /ssh-keys/{id}", s.updateSSHKey)
	api("DELETE /ssh-keys/{id}", s.deleteSSHKey)
}

// networkRoutes registers the Metal API routes of ports, VLAN assignments and virtual networks.
func (s *Server) networkRoutes(api apiRoute) {
	api("GET /ports/{id}", s.getPort)
	api("POST /ports/{id}/{op}", s.portAction)
	api("GET /ports/{id}/vlan-assignments", s.listVLANAssignments)
	api("GET /ports/{id}/vlan-assignments/{assignment}", s.getVLANAssignment)
	api("GET /ports/{id}/vlan-assignments/batches", s.listVLANBatches)
	api("POST /ports/{id}/vlan-assignments/batches", s.createVLANBatch)
	api("GET /ports/{id}/vlan-assignments/batches/{batch}", s.getVLANBatch)
	api("POST /ports/{id}/convert/{layer}", s.portConvert)
	api("POST /ports/{id}/native-vlan", s.portNativeVLAN)
	api("DELETE /ports/{id}/native-vlan", s.portNativeVLAN)
	api("GET /projects/{id}/virtual-networks", s.listVirtualNetworks)
	api("POST /projects/{id}/virtual-networks", s.createVirtualNetwork)
	api("GET /virtual-networks/{id}", s.getVirtualNetwork)
	api("DELETE /virtual-networks/{id}", s.deleteVirtualNetwork)
}

// routeOf is the route template of a request without the Metal API's prefix,
// e.g. "GET /devices/{id}"; the load-balancer service's keep theirs, e.g.
// "GET /lbaas/v1/loadbalancers/{id}". Unknown paths are "METHOD unmatched".
func routeOf(r *http.Request) string {
	if r.Pattern == "" {
		return r.Method + " unmatched"
	}
	method, path, _ := strings.Cut(r.Pattern, " ")
	return method + " " + strings.TrimPrefix(path, apiPrefix)
}

// statusWriter remembers the status for logs, metrics and the recorder.
type statusWriter struct {
	http.ResponseWriter
	status int
	// record is called once, when the status is set and before any of the answer is sent: a
	// body larger than the server's buffer goes out during the handler, and a client reading
	// it by its length could otherwise see the answer before the recorder counted it.
	record   func()
	recorded bool
	// answer keeps a copy of the body for the spec check; nil when nothing checks it.
	answer *bytes.Buffer
	// injected is true when a fault wrote the answer: an HTML page of a load balancer, a dropped
	// connection, which model the network, not the API, and are not held to the spec.
	injected bool
}

func (w *statusWriter) setStatus(code int) {
	if w.status == 0 {
		w.status = code
	}
	if !w.recorded && w.record != nil {
		w.recorded = true
		w.record()
	}
}

func (w *statusWriter) WriteHeader(code int) {
	w.setStatus(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.setStatus(http.StatusOK)
	if w.answer != nil {
		w.answer.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// serve is the front door: routing, auth, rate limit, faults, recording.
func (s *Server) serve(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	lbRoute, isLBaaS := s.matchRoute(r)
	isAPI := strings.HasPrefix(r.URL.Path, apiPrefix+"/") || isLBaaS
	if isAPI {
		route := routeOf(r)
		s.recorder.arrive(route, 1)
		defer s.recorder.arrive(route, -1)
	}
	body := bufferBody(r, isAPI)
	w.record = func() { s.finish(w, r, start, isAPI, body) }
	checked := isAPI && !isLBaaS && s.conformance != nil
	if checked {
		w.answer = &bytes.Buffer{}
	}
	defer func() {
		p := recover()
		if p != nil && p != http.ErrAbortHandler && w.status == 0 { //nolint:errorlint // recover() returns the sentinel itself
			// Last resort only: handlers return 4xx for every bad input.
			s.writeError(w, errorf(http.StatusInternalServerError, msgOhSnap))
		}
		// Records an answer that wrote nothing.
		w.setStatus(http.StatusOK)
		if checked && !w.injected && p == nil {
			s.conformance.check(r, body, w.status, w.Header(), w.answer.Bytes())
		}
		if p == http.ErrAbortHandler { //nolint:errorlint // recover() returns the sentinel itself
			panic(p)
		}
	}()

	switch {
	case !isAPI:
		s.serveRouted(w, r)
	case isLBaaS:
		s.serveLBaaS(w, r, lbRoute)
	default:
		s.serveMetalAPI(w, r)
	}
}

// matchRoute sets r.Pattern to the route r matches ("" for none). A load-balancer service path
// is matched by the lbaas router, which also fills the path values, and returned.
func (s *Server) matchRoute(r *http.Request) (lbRoute *lbaasRoute, isLBaaS bool) {
	_, pattern := s.mux.Handler(r)
	isLBaaS = isLBaaSPath(r.URL.Path)
	if isLBaaS {
		var values map[string]string
		if lbRoute, values = s.lbaas.match(r.Method, r.URL.Path); lbRoute != nil {
			pattern = lbRoute.pattern
			for name, v := range values {
				r.SetPathValue(name, v)
			}
		}
	}
	r.Pattern = pattern
	return lbRoute, isLBaaS
}

// bufferBody reads (up to 4 MiB of) an API write's body for the recorder and puts it back for
// the handler; nil for reads and non-API requests.
func bufferBody(r *http.Request, isAPI bool) []byte {
	if !isAPI || r.Method == http.MethodGet || r.Body == nil {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// serveRouted serves a request that matched a route of the mux, or answers 404.
func (s *Server) serveRouted(w http.ResponseWriter, r *http.Request) {
	if r.Pattern == "" {
		s.writeError(w, notFound())
		return
	}
	// The mux (not the handler directly) fills the path values.
	s.mux.ServeHTTP(w, r)
}

// serveMetalAPI authenticates and rate-limits a Metal API request before serving it.
func (s *Server) serveMetalAPI(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get("X-Auth-Token")
	decision := s.limiter.take(token, s.clock.Now())
	setRateHeaders(w, decision)
	if !s.validToken(token) {
		s.writeError(w, errorf(http.StatusUnauthorized, msgInvalidToken))
		return
	}
	if !decision.allowed {
		s.tooManyRequests(w, decision.retryAfter)
		return
	}
	s.serveRouted(w, r)
}

// withRequestFaults runs the request-level faults before an API handler.
func (s *Server) withRequestFaults(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.applyRequestFaults(w, r, h) {
			h(w, r)
		} else if sw, ok := w.(*statusWriter); ok {
			sw.injected = true
		}
	}
}

func setRateHeaders(w http.ResponseWriter, d rateDecision) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, d.remaining)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(d.reset.Unix(), 10))
}

func (s *Server) tooManyRequests(w http.ResponseWriter, retryAfter int) {
	if retryAfter <= 0 {
		retryAfter = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	w.Header().Set("X-RateLimit-Remaining", "0")
	s.writeError(w, errorf(http.StatusTooManyRequests, msgTooManyRequests))
}

func (s *Server) finish(w *statusWriter, r *http.Request, start time.Time, isAPI bool, body []byte) {
	elapsed := time.Since(start)
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	route := routeOf(r)
	if isAPI {
		rec := Request{Time: s.clock.Now(), Method: r.Method, Path: r.URL.Path, Route: route, Query: r.URL.RawQuery,
			Status: status, Duration: elapsed, Authenticated: r.Header.Get("X-Auth-Token") != "" || r.Header.Get("Authorization") != "",
			ConsumerToken: r.Header.Get("X-Consumer-Token"), UserAgent: r.Header.Get("User-Agent")}
		if len(body) > 0 {
			rec.Body = redactBody(body)
			rec.RawBody = body
		}
		s.recorder.add(rec)
		_, tmpl, _ := strings.Cut(route, " ")
		s.metrics.observe(r.Method, tmpl, status, elapsed)
	}
	if s.opts.Log != nil {
		// Path only: the query may carry search terms but never secrets,
		// and neither the token nor the body is logged.
		fmt.Fprintf(s.opts.Log, "%s %s %s %d %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path, status, elapsed.Round(time.Microsecond))
	}
}

// validToken checks the token and the auth-rotation fault.
func (s *Server) validToken(token string) bool {
	if token == "" {
		return false
	}
	if _, ok := s.opts.Tokens[token]; !ok {
		return false
	}
	return !s.faults.isRevoked(token)
}

// tokenAllows tells whether the request's token may access the project.
func (s *Server) tokenAllows(r *http.Request, projectID string) bool {
	if s.faults.isForbidden(projectID) {
		return false
	}
	return projectsAllow(s.opts.Tokens[r.Header.Get("X-Auth-Token")], projectID)
}

// projectsAllow tells whether a token's project list (empty: all) holds the
// project.
func projectsAllow(allowed []string, projectID string) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, p := range allowed {
		if p == "*" || strings.EqualFold(p, projectID) {
			return true
		}
	}
	return false
}

// applyRequestFaults runs the request-level faults. It reports whether the
// response has been fully handled.
func (s *Server) applyRequestFaults(w http.ResponseWriter, r *http.Request, h http.Handler) bool {
	call := callOf(r)
	kinds := []string{FaultLatency, FaultChaos, FaultHang, FaultRateLimit, FaultHTTPError, FaultCommitThenFail}
	for {
		f, ok := s.faults.take(call, kinds...)
		if !ok {
			return false
		}
		if f.Kind == FaultChaos {
			if f, ok = s.faults.chaosPick(f); !ok {
				return false
			}
		}
		switch f.Kind {
		case FaultLatency:
			time.Sleep(f.Latency + s.faults.jitter(f.Jitter))
			// Latency combines with the other faults, but delays a request once: taken again,
			// an always-on latency fault would match every time and never let the request go.
			kinds = kinds[2:]
			continue
		case FaultHang:
			limit := f.Duration
			if limit <= 0 {
				limit = 10 * time.Minute
			}
			select {
			case <-r.Context().Done():
			case <-s.done:
			case <-time.After(limit):
			}
			hijackClose(w)
			return true
		case FaultRateLimit:
			s.tooManyRequests(w, max(f.RetryAfter, 1))
			return true
		case FaultHTTPError:
			s.failResponse(w, f)
			return true
		case FaultCommitThenFail:
			// Run the real handler into a discarded recorder: the resource is
			// stored, but the client never learns about it.
			h.ServeHTTP(&discardWriter{header: http.Header{}}, r)
			s.failResponse(w, f)
			return true
		}
		return false
	}
}

// failResponse writes an error in one of the shapes a failing API or its
// load balancer produces.
func (s *Server) failResponse(w http.ResponseWriter, f Fault) {
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	msg := f.Message
	if msg == "" {
		msg = msgOhSnap
	}
	switch f.Body {
	case "html":
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html><head><title>%d %s</title></head><body><center><h1>%d %s</h1></center></body></html>\n",
			status, http.StatusText(status), status, http.StatusText(status))
	case "truncated":
		// Promise more bytes than we send, then drop the connection: the
		// client sees "unexpected EOF".
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4096")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"errors":["`)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		hijackClose(w)
	case "reset":
		hijackClose(w)
	default:
		s.writeError(w, errorf(status, msg))
	}
}

// hijackClose drops the client connection without a (complete) response.
func hijackClose(w http.ResponseWriter) {
	if sw, ok := w.(*statusWriter); ok {
		if sw.status == 0 {
			sw.status = 499 // "client saw no response", for records and metrics
		}
		w = sw.ResponseWriter
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, buf, err := hj.Hijack(); err == nil {
			if buf != nil && buf.Writer.Buffered() > 0 {
				_ = buf.Flush()
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
