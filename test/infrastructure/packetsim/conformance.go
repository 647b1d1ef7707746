package packetsim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim/metalspec"
)

// SpecFinding is one way the simulator's traffic differs from the published Metal API spec,
// with how often it was seen.
type SpecFinding struct {
	metalspec.Finding
	Count int `json:"count"`
}

// ConformanceReport is what the spec check has seen since the simulator started.
type ConformanceReport struct {
	// Checked is false when the simulator runs without the spec (Options.NoSpecCheck).
	Checked bool `json:"checked"`
	// Answers counts the Metal API answers validated, by operation ("GET /devices/{id} (findDeviceById)").
	Answers map[string]int `json:"answers"`
	// Off lists the answers off the spec: each is a defect of the simulator, and fails a strict suite.
	Off []SpecFinding `json:"off"`
	// Requests lists what clients sent off the spec (packngo's PATCH where the spec says PUT, say):
	// accepted, as Packet accepts it, and listed so that it is known.
	Requests []SpecFinding `json:"requests"`
}

// Total is the number of validated answers.
func (r ConformanceReport) Total() int {
	n := 0
	for _, c := range r.Answers {
		n += c
	}
	return n
}

// Err is nil when every answer met the spec, else an error naming each finding.
func (r ConformanceReport) Err() error {
	if len(r.Off) == 0 {
		return nil
	}
	lines := make([]string, 0, len(r.Off))
	for _, f := range r.Off {
		lines = append(lines, fmt.Sprintf("  %s (%d×)", f.Finding, f.Count))
	}
	return fmt.Errorf("%d kinds of Metal API answers off the published spec, in %d validated answers:\n%s",
		len(r.Off), r.Total(), strings.Join(lines, "\n"))
}

// conformance runs every Metal API exchange through the spec, off the request's path.
type conformance struct {
	spec *metalspec.Spec
	log  io.Writer // each new finding, once; nil for none
	sem  chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	answers  map[string]int
	findings map[metalspec.Finding]int
}

func newConformance(spec *metalspec.Spec, log io.Writer) *conformance {
	return &conformance{spec: spec, log: log, sem: make(chan struct{}, runtime.GOMAXPROCS(0)),
		answers: map[string]int{}, findings: map[metalspec.Finding]int{}}
}

// check validates the exchange in the background: the client has its answer already, and a
// large device page costs the check milliseconds the client need not wait for. At most
// GOMAXPROCS checks run at once; past that the request's goroutine waits for a slot.
func (c *conformance) check(r *http.Request, reqBody []byte, status int, header http.Header, answer []byte) {
	if c == nil {
		return
	}
	ex := metalspec.Exchange{Request: r.Clone(context.Background()), RequestBody: reqBody, Status: status,
		Header: header.Clone(), Body: answer}
	c.sem <- struct{}{}
	c.wg.Add(1)
	go func() {
		defer func() { <-c.sem; c.wg.Done() }()
		op, findings := c.spec.Check(context.Background(), ex)
		c.record(op, findings)
	}()
}

func (c *conformance) record(op string, findings []metalspec.Finding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if op != "" {
		c.answers[op]++
	}
	for _, f := range findings {
		f.Message = firstLine(f.Message)
		if c.findings[f]++; c.findings[f] == 1 && c.log != nil && !f.Request {
			fmt.Fprintf(c.log, "packetsim: answer off the Metal API spec: %s\n", f)
		}
	}
}

// report waits for the checks under way and tallies them.
func (c *conformance) report() ConformanceReport {
	if c == nil {
		return ConformanceReport{}
	}
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := ConformanceReport{Checked: true, Answers: make(map[string]int, len(c.answers))}
	for op, n := range c.answers {
		rep.Answers[op] = n
	}
	for f, n := range c.findings {
		sf := SpecFinding{Finding: f, Count: n}
		if f.Request {
			rep.Requests = append(rep.Requests, sf)
		} else {
			rep.Off = append(rep.Off, sf)
		}
	}
	byText := func(a, b SpecFinding) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(rep.Off, byText)
	slices.SortFunc(rep.Requests, byText)
	return rep
}

// firstLine keeps a finding's message short: kin-openapi appends the schema and the value.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Conformance reports what the spec check has seen, after the checks under way.
func (s *Server) Conformance() ConformanceReport { return s.conformance.report() }

// handleConformance answers GET /_sim/conformance.
func (s *Server) handleConformance(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.Conformance())
}

// Tally adds up the reports of the simulators a suite starts, for the line it ends with.
type Tally struct {
	mu      sync.Mutex
	answers map[string]int
	off     map[metalspec.Finding]int
	reqs    map[metalspec.Finding]int
}

// Add counts one simulator's report.
func (t *Tally) Add(r ConformanceReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.answers == nil {
		t.answers, t.off, t.reqs = map[string]int{}, map[metalspec.Finding]int{}, map[metalspec.Finding]int{}
	}
	for op, n := range r.Answers {
		t.answers[op] += n
	}
	for _, f := range r.Off {
		t.off[f.Finding] += f.Count
	}
	for _, f := range r.Requests {
		t.reqs[f.Finding] += f.Count
	}
}

// Report is the sum of the reports added.
func (t *Tally) Report() ConformanceReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	rep := ConformanceReport{Checked: true, Answers: map[string]int{}}
	for op, n := range t.answers {
		rep.Answers[op] = n
	}
	for f, n := range t.off {
		rep.Off = append(rep.Off, SpecFinding{Finding: f, Count: n})
	}
	for f, n := range t.reqs {
		rep.Requests = append(rep.Requests, SpecFinding{Finding: f, Count: n})
	}
	byText := func(a, b SpecFinding) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(rep.Off, byText)
	slices.SortFunc(rep.Requests, byText)
	return rep
}

// Summary is one line: how many answers were validated in how many operations, how many were off.
func (r ConformanceReport) Summary() string {
	off := 0
	for _, f := range r.Off {
		off += f.Count
	}
	return fmt.Sprintf("Metal API spec: %d answers validated in %d operations, %d off the spec; %d kinds of request off the spec (accepted)",
		r.Total(), len(r.Answers), off, len(r.Requests))
}

// TestingT is the part of testing.TB (or Ginkgo's GinkgoT()) CheckConformance reports through.
type TestingT interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// CheckConformance fails t if the simulator answered off the spec, naming each finding, and logs
// how many answers were checked. Suites call it when they are done with a simulator.
func CheckConformance(t TestingT, s *Server) {
	t.Helper()
	rep := s.Conformance()
	if !rep.Checked {
		return
	}
	t.Logf("%s", rep.Summary())
	if err := rep.Err(); err != nil {
		t.Errorf("%v", err)
	}
}
