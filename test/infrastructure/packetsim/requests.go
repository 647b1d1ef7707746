package packetsim

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Request is one recorded API call.
type Request struct {
	Time     time.Time     `json:"time"`
	Method   string        `json:"method"`
	Path     string        `json:"path"`
	Route    string        `json:"route"` // e.g. "GET /devices/{id}"
	Query    string        `json:"query,omitempty"`
	Status   int           `json:"status"`
	Duration time.Duration `json:"duration"`
	// Body is the request body of writes with userdata, passwords, md5
	// secrets and tokens replaced by "[redacted]".
	Body string `json:"body,omitempty"`
	// Authenticated tells whether X-Auth-Token (or, for the load-balancer
	// service, Authorization) was present (its value is never recorded).
	Authenticated bool   `json:"authenticated"`
	ConsumerToken string `json:"consumer_token,omitempty"`
	UserAgent     string `json:"user_agent,omitempty"`
	// RawBody is the unredacted body, for in-process assertions only (never
	// logged, exported over /_sim or written to the state file).
	RawBody []byte `json:"-"`
}

// recorder keeps the last N requests and counts every request per route.
type recorder struct {
	mu       sync.Mutex
	max      int
	requests []Request
	counts   map[string]int
	// inFlight counts the requests of each route being served.
	inFlight map[string]int
}

// arrive adds delta to the requests of route being served.
func (rc *recorder) arrive(route string, delta int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.inFlight[route] += delta
}

func newRecorder(max int) *recorder {
	if max <= 0 {
		max = 50000
	}
	return &recorder{max: max, counts: map[string]int{}, inFlight: map[string]int{}}
}

func (rc *recorder) add(req Request) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.counts[req.Route]++
	if len(rc.requests) >= rc.max {
		// Drop the oldest half at once, so appends stay amortised O(1).
		n := copy(rc.requests, rc.requests[len(rc.requests)/2:])
		clear(rc.requests[n:])
		rc.requests = rc.requests[:n]
	}
	rc.requests = append(rc.requests, req)
}

func (rc *recorder) snapshot() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.requests...)
}

func (rc *recorder) counters() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]int, len(rc.counts))
	for k, v := range rc.counts {
		out[k] = v
	}
	return out
}

func (rc *recorder) reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests = nil
	rc.counts = map[string]int{}
}

// secretFields are never logged or exported.
var secretFields = map[string]bool{"userdata": true, "password": true, "md5": true, "token": true, "md5_password": true, "root_password": true}

// redactBody replaces secret JSON fields (at any depth) of a request body.
func redactBody(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "[unparseable body redacted]"
	}
	out, _ := json.Marshal(redactValue(v))
	return string(out)
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if secretFields[strings.ToLower(k)] {
				t[k] = "[redacted]"
			} else {
				t[k] = redactValue(child)
			}
		}
		return t
	case []any:
		for i := range t {
			t[i] = redactValue(t[i])
		}
		return t
	}
	return v
}

// Route counting helpers for the control API.
func (s *Server) handleCounters(w http.ResponseWriter, r *http.Request) {
	counts := s.recorder.counters()
	total := 0
	for _, n := range counts {
		total += n
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"total": total, "routes": counts})
}

func (s *Server) handleRequests(w http.ResponseWriter, r *http.Request) {
	reqs := s.recorder.snapshot()
	if route := r.URL.Query().Get("route"); route != "" {
		filtered := reqs[:0]
		for _, q := range reqs {
			if q.Route == route {
				filtered = append(filtered, q)
			}
		}
		reqs = filtered
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Time.Before(reqs[j].Time) })
	// counts covers every request since the last reset, also those the log has dropped.
	s.writeJSON(w, http.StatusOK, map[string]any{"requests": reqs, "counts": s.recorder.counters()})
}
