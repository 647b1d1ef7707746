package tlsproxy

import (
	"slices"
	"strings"
)

// The hosts the previous provider's v0.9.0 manager calls. They are compiled into it, so a test
// that runs it unmodified can only redirect them on the network path: HTTPS_PROXY brings its
// requests here, SSL_CERT_FILE makes it trust the certificates the proxy mints for them.
const (
	// MetalAPIHost serves the Metal API under /metal/v1/.
	MetalAPIHost = "api.equinix.com"
	// LBaaSHost serves the load-balancer service under /v1/.
	LBaaSHost = "lb.metalctrl.io"
	// IAMHost serves the token exchange at /api-keys/exchange.
	IAMHost = "iam.metalctrl.io"
)

// Route maps the paths of one intercepted host onto the simulator: a path that begins with
// From is forwarded with From replaced by To.
type Route struct {
	// From is the path prefix the production host serves, such as "/v1/". A path outside it
	// is answered 404 by the proxy itself, so a production host name cannot reach the
	// simulator's other surfaces (/_sim/, /metrics, another service's prefix).
	From string
	// To is what From becomes upstream, such as "/lbaas/v1/".
	To string
}

// PreviousProviderRoutes returns the routes for the hosts of the previous provider's v0.9.0
// manager, onto the prefixes packetsim serves them under (packetsim's lbaas.go: /lbaas for the
// service, /iam for the token exchange; the Metal API keeps its own /metal/v1).
func PreviousProviderRoutes() map[string]Route {
	return map[string]Route{
		MetalAPIHost: {From: "/metal/v1/", To: "/metal/v1/"},
		LBaaSHost:    {From: "/v1/", To: "/lbaas/v1/"},
		IAMHost:      {From: "/api-keys/", To: "/iam/api-keys/"},
	}
}

// rewrite maps a request path (or its escaped form) onto the upstream's; false when the path
// is outside the route.
func (r Route) rewrite(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, r.From)
	if !ok {
		return "", false
	}
	return r.To + rest, true
}

// normalizeHost folds the spellings of one host name: DNS names are case-insensitive and a
// trailing dot names the same host.
func normalizeHost(host string) string {
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// normalizeRoutes copies routes with their host names folded, so a caller's map is never
// shared with the serving goroutines.
func normalizeRoutes(routes map[string]Route) map[string]Route {
	out := make(map[string]Route, len(routes))
	for host, route := range routes {
		out[normalizeHost(host)] = route
	}
	return out
}

// routedHosts lists the routed host names, sorted, for the messages of refusals.
func routedHosts(routes map[string]Route) []string {
	hosts := make([]string, 0, len(routes))
	for host := range routes {
		hosts = append(hosts, host)
	}
	slices.Sort(hosts)
	return hosts
}
