package packetsim

import "time"

// The load-balancer service's objects, stored like those of models.go: the
// store keeps them flat, by ID, and links them by ID; the inspection
// accessors fill the nested fields (Ports, Pools, Origins) of their copies.

// LBaaSProviderID is the one provider_id the load-balancer service accepts.
const LBaaSProviderID = "loadpvd-gOB_-byp5ebFo7A3LHv2B"

// LBaaSLocation is a location of the load-balancer service and the metro it
// is in.
type LBaaSLocation struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Metro string `json:"metro"`
}

// LBaaSLocations are the service's locations (their real IDs), by metro code.
var LBaaSLocations = map[string]LBaaSLocation{
	"am": {ID: "lctnloc-1ttCRz-P8aY0rda9BxOiL", Name: "AM", Metro: "am"},
	"da": {ID: "lctnloc--uxs0GLeAELHKV8GxO_AI", Name: "DA", Metro: "da"},
	"dc": {ID: "lctnloc-1lJjVT6Zp_Fs4UpW5LWQu", Name: "DC", Metro: "dc"},
	"ny": {ID: "lctnloc-Vy-1Qpw31mPi6RJQwVf9A", Name: "NY", Metro: "ny"},
	"sg": {ID: "lctnloc-AxCxpIrNUaaoGBkM02uuw", Name: "SG", Metro: "sg"},
	"sv": {ID: "lctnloc-H5rl2M2VL5dcFmdxhbEKx", Name: "SV", Metro: "sv"},
}

// lbaasLocation finds a location by ID.
func lbaasLocation(id string) (LBaaSLocation, bool) {
	for _, l := range LBaaSLocations {
		if l.ID == id {
			return l, true
		}
	}
	return LBaaSLocation{}, false
}

// LoadBalancer is a load balancer with its one public IPv4 address.
type LoadBalancer struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"project_id"`
	Name       string    `json:"name"`
	LocationID string    `json:"location_id"`
	Metro      string    `json:"metro"`
	IP         string    `json:"ip"`
	ProviderID string    `json:"provider_id"`
	PortIDs    []string  `json:"port_ids"` // in the order they were attached
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Ports are filled in the accessors' copies only.
	Ports []LoadBalancerPort `json:"-"`
}

// LoadBalancerPort is a listening port of a load balancer, forwarding to pools.
// A port removed from its load balancer (PATCH remove_port_ids) lives on
// with an empty LoadBalancerID until it is attached again or deleted.
type LoadBalancerPort struct {
	ID             string    `json:"id"`
	ProjectID      string    `json:"project_id"`
	LoadBalancerID string    `json:"load_balancer_id,omitempty"`
	Name           string    `json:"name"`
	Number         int       `json:"number"`
	PoolIDs        []string  `json:"pool_ids"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Pools are filled in the accessors' copies only.
	Pools []LoadBalancerPool `json:"-"`
}

// LoadBalancerPool is a project's set of origins; ports point at pools.
type LoadBalancerPool struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"project_id"`
	Name      string    `json:"name"`
	Protocol  string    `json:"protocol"`
	OriginIDs []string  `json:"origin_ids"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Origins are filled in the accessors' copies only.
	Origins []LoadBalancerOrigin `json:"-"`
}

// LoadBalancerOrigin is one backend of a pool: an IPv4 address and port.
type LoadBalancerOrigin struct {
	ID         string    `json:"id"`
	PoolID     string    `json:"pool_id"`
	Name       string    `json:"name"`
	Target     string    `json:"target"`
	PortNumber int       `json:"port_number"`
	Active     bool      `json:"active"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// lbaasToken is an access token of the load-balancer service. It keeps a
// digest of the Metal API key it was exchanged for, never the key.
type lbaasToken struct {
	Key       string    `json:"key"`
	Projects  []string  `json:"projects,omitempty"` // nil: every project
	ExpiresAt time.Time `json:"expires_at"`
}
