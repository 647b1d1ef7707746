package packet

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// LoadBalancers is what the controllers need from Equinix Metal's load-balancer service (LBaaS):
// a separate REST API from the Metal API, reached with bearer tokens exchanged for the Metal
// API key. packngo has no client for it; lbaasClient is this package's own.
type LoadBalancers interface {
	// ListLoadBalancers returns the project's load balancers with their ports.
	ListLoadBalancers(ctx context.Context, projectID string) ([]LoadBalancer, error)
	// GetLoadBalancer returns a load balancer with its ports.
	GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error)
	// CreateLoadBalancer creates a load balancer and returns its ID. After a KindTransient error
	// it may exist anyway.
	CreateLoadBalancer(ctx context.Context, req CreateLoadBalancerRequest) (string, error)
	// RenameLoadBalancer changes a load balancer's name.
	RenameLoadBalancer(ctx context.Context, id, name string) error
	// DeleteLoadBalancer deletes a load balancer and its ports; one already gone is no error.
	DeleteLoadBalancer(ctx context.Context, id string) error
	// CreateLoadBalancerPort opens a listener port that forwards to the pools and returns its ID.
	CreateLoadBalancerPort(ctx context.Context, lbID, name string, number int, poolIDs []string) (string, error)
	// AddPoolsToPort makes a listener port forward to more pools.
	AddPoolsToPort(ctx context.Context, portID string, poolIDs []string) error
	// ListLoadBalancerPools returns the project's pools with their origins.
	ListLoadBalancerPools(ctx context.Context, projectID string) ([]LoadBalancerPool, error)
	// CreateLoadBalancerPool creates a TCP pool and returns its ID.
	CreateLoadBalancerPool(ctx context.Context, projectID, name string) (string, error)
	// RenameLoadBalancerPool changes a pool's name.
	RenameLoadBalancerPool(ctx context.Context, id, name string) error
	// DeleteLoadBalancerPool deletes a pool and its origins; one already gone is no error.
	DeleteLoadBalancerPool(ctx context.Context, id string) error
	// CreateLoadBalancerOrigin adds an active origin to a pool and returns its ID.
	CreateLoadBalancerOrigin(ctx context.Context, poolID string, origin LoadBalancerOrigin) (string, error)
	// RenameLoadBalancerOrigin changes an origin's name.
	RenameLoadBalancerOrigin(ctx context.Context, id, name string) error
	// DeleteLoadBalancerOrigin removes an origin; one already gone is no error.
	DeleteLoadBalancerOrigin(ctx context.Context, id string) error
}

// LoadBalancer is an Equinix Metal Load Balancer.
type LoadBalancer struct {
	ID, Name   string
	LocationID string
	// IPs are the load balancer's public addresses; the first is the one clients use.
	IPs       []string
	Ports     []LoadBalancerPort
	CreatedAt time.Time
}

// LoadBalancerPort is a listener port of a load balancer.
type LoadBalancerPort struct {
	ID, Name string
	Number   int
	PoolIDs  []string
}

// LoadBalancerPool is a set of origins a port forwards to.
type LoadBalancerPool struct {
	ID, Name  string
	Protocol  string
	Origins   []LoadBalancerOrigin
	CreatedAt time.Time
}

// LoadBalancerOrigin is a backend of a pool: an address and port traffic is sent to.
type LoadBalancerOrigin struct {
	ID, Name string
	// Target is the origin's IPv4 address (a device's public address).
	Target string
	Port   int
	Active bool
	PoolID string
}

// CreateLoadBalancerRequest describes a load balancer to create.
type CreateLoadBalancerRequest struct {
	ProjectID, Name string
	// LocationID is the LBaaS location (see catalog.LoadBalancerLocation), not a metro code.
	LocationID string
}

// LoadBalancerProviderID is the only load-balancer provider LBaaS offers.
const LoadBalancerProviderID = "loadpvd-gOB_-byp5ebFo7A3LHv2B"

// DefaultLBaaSURL and DefaultTokenExchangeURL are the production load-balancer API and the IAM
// endpoint that exchanges a Metal API key for its bearer tokens.
const (
	DefaultLBaaSURL         = "https://lb.metalctrl.io/"
	DefaultTokenExchangeURL = "https://iam.metalctrl.io/api-keys/exchange" //nolint:gosec // a URL, not a credential
)

// Wire shapes of the load-balancer API.
type (
	lbJSON struct {
		ID        string              `json:"id"`
		Name      string              `json:"name"`
		Location  struct{ ID string } `json:"location"`
		IPs       []string            `json:"ips"`
		Ports     []lbPortJSON        `json:"ports"`
		CreatedAt time.Time           `json:"created_at"`
	}
	lbPortJSON struct {
		ID      string   `json:"id"`
		Name    string   `json:"name"`
		Number  int      `json:"number"`
		PoolIDs []string `json:"pool_ids"`
	}
	lbPoolJSON struct {
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Protocol  string         `json:"protocol"`
		Origins   []lbOriginJSON `json:"origins"`
		CreatedAt time.Time      `json:"created_at"`
	}
	lbOriginJSON struct {
		ID         string `json:"id,omitempty"`
		Name       string `json:"name"`
		Target     string `json:"target"`
		PortNumber int    `json:"port_number"`
		Active     bool   `json:"active"`
		PoolID     string `json:"pool_id"`
	}
	idJSON struct {
		ID string `json:"id"`
	}
)

func (j *lbJSON) loadBalancer() LoadBalancer {
	lb := LoadBalancer{ID: j.ID, Name: j.Name, LocationID: j.Location.ID, IPs: j.IPs, CreatedAt: j.CreatedAt}
	for _, p := range j.Ports {
		lb.Ports = append(lb.Ports, LoadBalancerPort(p))
	}
	return lb
}

func (j *lbPoolJSON) pool() LoadBalancerPool {
	p := LoadBalancerPool{ID: j.ID, Name: j.Name, Protocol: j.Protocol, CreatedAt: j.CreatedAt}
	for _, o := range j.Origins {
		p.Origins = append(p.Origins, LoadBalancerOrigin{ID: o.ID, Name: o.Name, Target: o.Target,
			Port: o.PortNumber, Active: o.Active, PoolID: o.PoolID})
	}
	return p
}

func (c *client) ListLoadBalancers(ctx context.Context, projectID string) ([]LoadBalancer, error) {
	var root struct {
		LoadBalancers []lbJSON `json:"loadbalancers"`
	}
	if err := c.lbaas.do(ctx, http.MethodGet, "v1/projects/"+url.PathEscape(projectID)+"/loadbalancers", nil, &root); err != nil {
		return nil, err
	}
	out := make([]LoadBalancer, 0, len(root.LoadBalancers))
	for i := range root.LoadBalancers {
		out = append(out, root.LoadBalancers[i].loadBalancer())
	}
	return out, nil
}

func (c *client) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	var j lbJSON
	if err := c.lbaas.do(ctx, http.MethodGet, "v1/loadbalancers/"+url.PathEscape(id), nil, &j); err != nil {
		return nil, err
	}
	lb := j.loadBalancer()
	return &lb, nil
}

func (c *client) CreateLoadBalancer(ctx context.Context, req CreateLoadBalancerRequest) (string, error) {
	body := map[string]any{"name": req.Name, "location_id": req.LocationID, "provider_id": LoadBalancerProviderID}
	var created idJSON
	err := c.lbaas.do(ctx, http.MethodPost, "v1/projects/"+url.PathEscape(req.ProjectID)+"/loadbalancers", body, &created)
	return created.ID, err
}

func (c *client) RenameLoadBalancer(ctx context.Context, id, name string) error {
	return c.lbaas.do(ctx, http.MethodPatch, "v1/loadbalancers/"+url.PathEscape(id), map[string]any{"name": name}, nil)
}

func (c *client) DeleteLoadBalancer(ctx context.Context, id string) error {
	return ignoreNotFound(c.lbaas.do(ctx, http.MethodDelete, "v1/loadbalancers/"+url.PathEscape(id), nil, nil))
}

func (c *client) CreateLoadBalancerPort(ctx context.Context, lbID, name string, number int, poolIDs []string) (string, error) {
	body := map[string]any{"name": name, "number": number, "pool_ids": nonNil(poolIDs)}
	var created idJSON
	err := c.lbaas.do(ctx, http.MethodPost, "v1/loadbalancers/"+url.PathEscape(lbID)+"/ports", body, &created)
	return created.ID, err
}

func (c *client) AddPoolsToPort(ctx context.Context, portID string, poolIDs []string) error {
	return c.lbaas.do(ctx, http.MethodPatch, "v1/loadbalancers/ports/"+url.PathEscape(portID),
		map[string]any{"add_pool_ids": nonNil(poolIDs)}, nil)
}

func (c *client) ListLoadBalancerPools(ctx context.Context, projectID string) ([]LoadBalancerPool, error) {
	var root struct {
		Pools []lbPoolJSON `json:"pools"`
	}
	if err := c.lbaas.do(ctx, http.MethodGet, "v1/projects/"+url.PathEscape(projectID)+"/loadbalancers/pools", nil, &root); err != nil {
		return nil, err
	}
	out := make([]LoadBalancerPool, 0, len(root.Pools))
	for i := range root.Pools {
		out = append(out, root.Pools[i].pool())
	}
	return out, nil
}

func (c *client) CreateLoadBalancerPool(ctx context.Context, projectID, name string) (string, error) {
	var created idJSON
	err := c.lbaas.do(ctx, http.MethodPost, "v1/projects/"+url.PathEscape(projectID)+"/loadbalancers/pools",
		map[string]any{"name": name, "protocol": "tcp"}, &created)
	return created.ID, err
}

func (c *client) RenameLoadBalancerPool(ctx context.Context, id, name string) error {
	return c.lbaas.do(ctx, http.MethodPatch, "v1/loadbalancers/pools/"+url.PathEscape(id), map[string]any{"name": name}, nil)
}

func (c *client) RenameLoadBalancerOrigin(ctx context.Context, id, name string) error {
	return c.lbaas.do(ctx, http.MethodPatch, "v1/loadbalancers/pools/origins/"+url.PathEscape(id), map[string]any{"name": name}, nil)
}

func (c *client) DeleteLoadBalancerPool(ctx context.Context, id string) error {
	return ignoreNotFound(c.lbaas.do(ctx, http.MethodDelete, "v1/loadbalancers/pools/"+url.PathEscape(id), nil, nil))
}

func (c *client) CreateLoadBalancerOrigin(ctx context.Context, poolID string, o LoadBalancerOrigin) (string, error) {
	body := lbOriginJSON{Name: o.Name, Target: o.Target, PortNumber: o.Port, Active: o.Active, PoolID: poolID}
	var created idJSON
	err := c.lbaas.do(ctx, http.MethodPost, "v1/loadbalancers/pools/"+url.PathEscape(poolID)+"/origins", body, &created)
	return created.ID, err
}

func (c *client) DeleteLoadBalancerOrigin(ctx context.Context, id string) error {
	return ignoreNotFound(c.lbaas.do(ctx, http.MethodDelete, "v1/loadbalancers/pools/origins/"+url.PathEscape(id), nil, nil))
}

func ignoreNotFound(err error) error {
	if IsNotFound(err) {
		return nil
	}
	return err
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
