// Package catalog holds what Packet offers where, as facts the provider knows without asking:
// the metros with Equinix Metal Load Balancers and their LBaaS locations. Its subpackages derive
// the rest from Packet's own catalogue: what a plan's machine offers (capacity) and where a
// cluster's machines may go (failuredomains).
//
// The webhooks read it, so it imports no Packet client.
package catalog

import (
	"maps"
	"slices"
	"sync"
)

// loadBalancerLocations maps the metros with load balancers to their LBaaS location IDs, which
// LBaaS offers no API to look up. SetLoadBalancerLocations adds to it at start-up.
var loadBalancerLocations = struct {
	sync.RWMutex
	byMetro map[string]string
}{byMetro: map[string]string{
	"am": "lctnloc-1ttCRz-P8aY0rda9BxOiL",
	"da": "lctnloc--uxs0GLeAELHKV8GxO_AI",
	"dc": "lctnloc-1lJjVT6Zp_Fs4UpW5LWQu",
	"ny": "lctnloc-Vy-1Qpw31mPi6RJQwVf9A",
	"sg": "lctnloc-AxCxpIrNUaaoGBkM02uuw",
	"sv": "lctnloc-H5rl2M2VL5dcFmdxhbEKx",
}}

// LoadBalancerLocation returns the LBaaS location of a metro, false when the metro has none.
func LoadBalancerLocation(metro string) (string, bool) {
	loadBalancerLocations.RLock()
	defer loadBalancerLocations.RUnlock()
	id, ok := loadBalancerLocations.byMetro[metro]
	return id, ok
}

// LoadBalancerMetros returns the metros with load balancers, sorted.
func LoadBalancerMetros() []string {
	loadBalancerLocations.RLock()
	defer loadBalancerLocations.RUnlock()
	return slices.Sorted(maps.Keys(loadBalancerLocations.byMetro))
}

// SetLoadBalancerLocations adds or replaces metro → location entries (the manager's
// --emlb-locations), for locations Equinix opens after this release.
func SetLoadBalancerLocations(byMetro map[string]string) {
	loadBalancerLocations.Lock()
	defer loadBalancerLocations.Unlock()
	maps.Copy(loadBalancerLocations.byMetro, byMetro)
}
