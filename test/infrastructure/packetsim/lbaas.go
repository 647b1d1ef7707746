package packetsim

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
)

// The load-balancer service (LBaaS) is not part of the Metal API: a client
// exchanges its Metal API key for a short-lived bearer token at the token
// exchange (production: https://iam.metalctrl.io/api-keys/exchange) and calls
// the service (production: https://lb.metalctrl.io) with that token. The
// simulator serves both beside /metal/v1, each under its own prefix, through
// the same recording, faults and rate limit as the Metal API.
const (
	lbaasPrefix  = "/lbaas"
	iamPrefix    = "/iam"
	exchangePath = iamPrefix + "/api-keys/exchange"
)

// isLBaaSPath tells the service's and the token exchange's paths.
func isLBaaSPath(path string) bool {
	return strings.HasPrefix(path, lbaasPrefix+"/") || strings.HasPrefix(path, iamPrefix+"/")
}

// lbaasRoute is one route. Its pattern reads like the Metal API's route
// templates, prefix included: "GET /lbaas/v1/loadbalancers/{id}".
type lbaasRoute struct {
	pattern, method string
	segments        []string
	handler         http.HandlerFunc
	// exchange marks the token exchange, the one route a Metal API key opens.
	exchange bool
}

// lbaasRouter routes the service's requests. http.ServeMux cannot hold these
// routes: /v1/loadbalancers/{id}/ports and /v1/loadbalancers/pools/{id} both
// match /v1/loadbalancers/pools/ports without either being more specific,
// which the real service settles by its ID prefixes (no load balancer is
// called "pools"). Here a literal segment beats a wildcard, from the left.
type lbaasRouter []*lbaasRoute

func (rt *lbaasRouter) add(pattern string, h http.HandlerFunc) *lbaasRoute {
	method, path, _ := strings.Cut(pattern, " ")
	route := &lbaasRoute{pattern: pattern, method: method, segments: strings.Split(strings.TrimPrefix(path, "/"), "/"), handler: h}
	*rt = append(*rt, route)
	return route
}

func isWildcard(segment string) bool { return strings.HasPrefix(segment, "{") }

// match returns the route of a request and its path values, or nil.
func (rt lbaasRouter) match(method, path string) (*lbaasRoute, map[string]string) {
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var best *lbaasRoute
	for _, route := range rt {
		if route.method == method && route.fits(segments) && (best == nil || route.beats(best)) {
			best = route
		}
	}
	if best == nil {
		return nil, nil
	}
	values := map[string]string{}
	for i, seg := range best.segments {
		if isWildcard(seg) {
			values[strings.Trim(seg, "{}")] = segments[i]
		}
	}
	return best, values
}

func (route *lbaasRoute) fits(segments []string) bool {
	if len(segments) != len(route.segments) {
		return false
	}
	for i, seg := range route.segments {
		if isWildcard(seg) && segments[i] == "" || !isWildcard(seg) && seg != segments[i] {
			return false
		}
	}
	return true
}

// beats tells whether route is more specific than other: at the first
// segment where one has a literal and the other a wildcard, the literal wins.
func (route *lbaasRoute) beats(other *lbaasRoute) bool {
	for i, seg := range route.segments {
		if mine, theirs := isWildcard(seg), isWildcard(other.segments[i]); mine != theirs {
			return !mine
		}
	}
	return false
}

func (s *Server) lbaasRoutes() {
	api := func(pattern string, h http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		s.lbaas.add(method+" "+lbaasPrefix+path, h)
	}
	s.lbaas.add("POST "+exchangePath, s.exchangeAPIKey).exchange = true

	api("GET /v1/projects/{id}/loadbalancers", s.listLoadBalancers)
	api("POST /v1/projects/{id}/loadbalancers", s.createLoadBalancer)
	api("GET /v1/loadbalancers/{id}", s.getLoadBalancer)
	api("PATCH /v1/loadbalancers/{id}", s.updateLoadBalancer)
	api("DELETE /v1/loadbalancers/{id}", s.deleteLoadBalancer)

	api("GET /v1/loadbalancers/{id}/ports", s.listLBPorts)
	api("POST /v1/loadbalancers/{id}/ports", s.createLBPort)
	api("GET /v1/loadbalancers/{id}/ports/{number}", s.getLBPortByNumber)
	api("PATCH /v1/loadbalancers/ports/{id}", s.updateLBPort)
	api("DELETE /v1/loadbalancers/ports/{id}", s.deleteLBPort)

	api("GET /v1/projects/{id}/loadbalancers/pools", s.listLBPools)
	api("POST /v1/projects/{id}/loadbalancers/pools", s.createLBPool)
	api("GET /v1/loadbalancers/pools/{id}", s.getLBPool)
	api("PATCH /v1/loadbalancers/pools/{id}", s.updateLBPool)
	api("DELETE /v1/loadbalancers/pools/{id}", s.deleteLBPool)

	api("GET /v1/loadbalancers/pools/{id}/origins", s.listLBOrigins)
	api("POST /v1/loadbalancers/pools/{id}/origins", s.createLBOrigin)
	api("PATCH /v1/loadbalancers/pools/origins/{id}", s.updateLBOrigin)
	api("DELETE /v1/loadbalancers/pools/origins/{id}", s.deleteLBOrigin)
}

// lbaasTokenKey carries the request's access token to the handlers.
type lbaasTokenKey struct{}

// serveLBaaS is the front door of the service and its token exchange, in the
// Metal API's order: rate limit, auth, 404 for an unknown route, faults,
// handler. The bucket is the Metal API key's, apart from its Metal bucket.
func (s *Server) serveLBaaS(w http.ResponseWriter, r *http.Request, route *lbaasRoute) {
	now := s.clock.Now()
	bearer := bearerToken(r)
	key := keyDigest(bearer)
	var tok *lbaasToken
	var authErr error
	if route != nil && route.exchange {
		if !s.validToken(bearer) {
			authErr = errorf(http.StatusUnauthorized, msgInvalidToken)
		}
	} else if tok, authErr = s.accessToken(bearer, now); tok != nil {
		key = tok.Key
	}
	decision := s.limiter.take("lbaas|"+key, now)
	setRateHeaders(w, decision)
	switch {
	case authErr != nil:
		s.writeError(w, authErr)
	case !decision.allowed:
		s.tooManyRequests(w, decision.retryAfter)
	case route == nil:
		s.writeError(w, notFound())
	default:
		if tok != nil {
			r = r.WithContext(context.WithValue(r.Context(), lbaasTokenKey{}, tok))
		}
		s.withRequestFaults(route.handler)(w, r)
	}
}

// lbaasAllows tells whether the request's access token may touch the project.
func (s *Server) lbaasAllows(r *http.Request, projectID string) bool {
	tok, _ := r.Context().Value(lbaasTokenKey{}).(*lbaasToken)
	return tok != nil && !s.faults.isForbidden(projectID) && projectsAllow(tok.Projects, projectID)
}

// lbaasIDChars are the URL-safe characters of the service's IDs.
const lbaasIDChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// lbaasID is an ID as the service makes them: a kind prefix ("loadbal-")
// and 21 random URL-safe characters.
func lbaasID(prefix string) string {
	b := make([]byte, 21)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = lbaasIDChars[b[i]&63]
	}
	return prefix + string(b)
}
