package packet

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capp_api_requests_total",
		Help: "Packet API requests by operation and HTTP status code (\"error\" when no response arrived).",
	}, []string{"operation", "code"})
	apiRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "capp_api_request_duration_seconds",
		Help:    "Packet API request latency by operation.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"operation"})
)

func init() {
	metrics.Registry.MustRegister(apiRequests, apiRequestDuration)
}

var (
	// uuidSegment matches the IDs in Metal API paths, so operations group by route.
	uuidSegment = regexp.MustCompile(`/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	// lbaasIDSegment matches the prefixed IDs of the load-balancer API (loadbal-…, loadpol-…).
	lbaasIDSegment = regexp.MustCompile(`/load[a-z]{3}-[A-Za-z0-9_-]+`)
	// lbaasPortNumber matches the listener port number that GET .../ports/{number} names.
	lbaasPortNumber = regexp.MustCompile(`/ports/[0-9]+$`)
)

// operationOf names a request by method and route, e.g. "GET /devices/{id}" (Metal API),
// "LBaaS GET /v1/loadbalancers/{id}" (load-balancer API) or "POST /api-keys/exchange". It never
// includes the query string or any header, so it is safe to log and to use as a metric label.
func operationOf(r *http.Request) string { return operation(r.Method, r.URL.Path) }

func operation(method, p string) string {
	switch i := strings.Index(p, "/v1/"); {
	case strings.Contains(p, "/metal/v1/"):
		p = p[strings.Index(p, "/metal/v1/")+len("/metal/v1"):]
	case strings.HasSuffix(p, "/api-keys/exchange"):
		return method + " /api-keys/exchange"
	case i >= 0:
		p = lbaasIDSegment.ReplaceAllString(uuidSegment.ReplaceAllString(p[i:], "/{id}"), "/{id}")
		return "LBaaS " + method + " " + lbaasPortNumber.ReplaceAllString(p, "/ports/{number}")
	}
	return method + " " + uuidSegment.ReplaceAllString(p, "/{id}")
}

// metricsTransport records every Packet API request in the capp_api_* metrics.
type metricsTransport struct {
	next http.RoundTripper
}

func (t metricsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := operationOf(r)
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	apiRequestDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	apiRequests.WithLabelValues(op, code).Inc()
	return resp, err
}

// RequestsTotal exposes capp_api_requests_total to tests of other packages.
func RequestsTotal() *prometheus.CounterVec { return apiRequests }
