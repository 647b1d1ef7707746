// Package e2e is the end-to-end suite: it starts the sandbox (test/infrastructure/sandbox) — kube-apiserver,
// the Packet API simulator, the Cluster API managers and this provider's manager, installed by
// `clusterctl init --infrastructure packet` — and drives clusters through it. Run it with
// `make test-e2e`; under a plain `go test ./...` it skips itself (PACKET_E2E is unset).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// SimClient reads the simulator's state through the Packet API (as the test harness, with its
// own user agent) and drives it through the /_sim/ control API.
type SimClient struct {
	BaseURL   string // http://127.0.0.1:<port>
	Token     string
	ProjectID string
}

// HarnessUserAgent is the user agent of the suite's own Packet API calls.
const HarnessUserAgent = "capp-e2e-harness"

// Device is the part of a Packet device the suite looks at.
type Device struct {
	ID       string   `json:"id"`
	Hostname string   `json:"hostname"`
	State    string   `json:"state"`
	Tags     []string `json:"tags"`
	UserData string   `json:"userdata"`
	Network  []IP     `json:"ip_addresses"`
	// Spot market: the bid, and when Packet reclaims an outbid device.
	SpotInstance    bool    `json:"spot_instance"`
	SpotPriceMax    float64 `json:"spot_price_max"`
	TerminationTime *string `json:"termination_time"`
	Ports           []Port  `json:"network_ports"`
	// Storage is the custom partitioning and RAID document the device was created with.
	Storage json.RawMessage `json:"storage"`
	// HardwareReservation references the reservation the device runs on (nil: on demand).
	HardwareReservation *struct {
		Href string `json:"href"`
	} `json:"hardware_reservation"`
}

// Port is a device's network port with the VLANs it carries.
type Port struct {
	Name string `json:"name"`
	Data struct {
		Bonded bool `json:"bonded"`
	} `json:"data"`
	VLANs []struct {
		ID string `json:"id"`
	} `json:"virtual_networks"`
}

// VLAN is a Packet virtual network.
type VLAN struct {
	ID          string `json:"id"`
	VXLAN       int    `json:"vxlan"`
	Description string `json:"description"`
}

// IP is an IP reservation or assignment.
type IP struct {
	ID          string   `json:"id"`
	Address     string   `json:"address"`
	Public      bool     `json:"public"`
	Type        string   `json:"type"`
	Tags        []string `json:"tags"`
	Management  bool     `json:"management"`
	Assignments []struct {
		Href    string `json:"href"`
		Address string `json:"address"`
	} `json:"assignments"`
	AssignedTo struct {
		Href string `json:"href"`
	} `json:"assigned_to"`
}

// BGPSession is a device's BGP session.
type BGPSession struct {
	ID            string `json:"id"`
	AddressFamily string `json:"address_family"`
	Device        struct {
		Href string `json:"href"`
	} `json:"device"`
}

// SSHKey is a project SSH key.
type SSHKey struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Request is one request the simulator recorded.
type Request struct {
	Method    string `json:"method"`
	Path      string `json:"path"`
	Route     string `json:"route"`
	Status    int    `json:"status"`
	UserAgent string `json:"user_agent"`
}

// do sends one request. The harness is not under test: reads that meet a 5xx or 429 (faults
// injected for the provider hit the harness too) are retried.
func (c *SimClient) do(ctx context.Context, method, path string, body, out any) error {
	for attempt := 1; ; attempt++ {
		status, err := c.doOnce(ctx, method, path, body, out)
		if err == nil || method != http.MethodGet || attempt == 20 || (status < 500 && status != http.StatusTooManyRequests) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *SimClient) doOnce(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Auth-Token", c.Token)
	if strings.HasPrefix(path, "/lbaas/") || strings.HasPrefix(path, "/iam/") {
		// The load-balancer API takes a bearer token, exchanged for the API key.
		bearer := c.Token
		if strings.HasPrefix(path, "/lbaas/") {
			if bearer, err = c.lbaasToken(ctx); err != nil {
				return 0, err
			}
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("User-Agent", HarnessUserAgent)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil && len(data) > 0 {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

// list follows the pages of a Packet list under key.
func list[T any](ctx context.Context, c *SimClient, path, key string) ([]T, error) {
	var all []T
	for page := 1; ; page++ {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		raw := map[string]json.RawMessage{}
		if err := c.do(ctx, http.MethodGet, fmt.Sprintf("%s%spage=%d&per_page=100", path, sep, page), nil, &raw); err != nil {
			return nil, err
		}
		var items []T
		if err := json.Unmarshal(raw[key], &items); err != nil {
			return nil, fmt.Errorf("decoding %s of %s: %w", key, path, err)
		}
		all = append(all, items...)
		var meta struct {
			LastPage int `json:"last_page"`
		}
		if m, ok := raw["meta"]; ok {
			_ = json.Unmarshal(m, &meta)
		}
		if meta.LastPage <= page || len(items) == 0 {
			return all, nil
		}
	}
}

// Devices lists the project's devices that carry a tag containing tagPart ("" for all).
func (c *SimClient) Devices(ctx context.Context, tagPart string) ([]Device, error) {
	all, err := list[Device](ctx, c, "/metal/v1/projects/"+c.ProjectID+"/devices", "devices")
	if err != nil {
		return nil, err
	}
	return filter(all, func(d Device) bool { return hasTagPart(d.Tags, tagPart) }), nil
}

// Device gets one device.
func (c *SimClient) Device(ctx context.Context, id string) (*Device, error) {
	d := &Device{}
	return d, c.do(ctx, http.MethodGet, "/metal/v1/devices/"+id, nil, d)
}

// IPReservations lists the project's IP reservations with a tag containing tagPart.
func (c *SimClient) IPReservations(ctx context.Context, tagPart string) ([]IP, error) {
	var out struct {
		IPs []IP `json:"ip_addresses"`
	}
	if err := c.do(ctx, http.MethodGet, "/metal/v1/projects/"+c.ProjectID+"/ips?include=assignments", nil, &out); err != nil {
		return nil, err
	}
	return filter(out.IPs, func(ip IP) bool { return hasTagPart(ip.Tags, tagPart) }), nil
}

// BGPSessions lists the project's BGP sessions.
func (c *SimClient) BGPSessions(ctx context.Context) ([]BGPSession, error) {
	return list[BGPSession](ctx, c, "/metal/v1/projects/"+c.ProjectID+"/bgp/sessions", "bgp_sessions")
}

// VLANs lists the project's VLANs.
func (c *SimClient) VLANs(ctx context.Context) ([]VLAN, error) {
	var out struct {
		VLANs []VLAN `json:"virtual_networks"`
	}
	return out.VLANs, c.do(ctx, http.MethodGet, "/metal/v1/projects/"+c.ProjectID+"/virtual-networks", nil, &out)
}

// SSHKeys lists the project's SSH keys.
func (c *SimClient) SSHKeys(ctx context.Context) ([]SSHKey, error) {
	var out struct {
		Keys []SSHKey `json:"ssh_keys"`
	}
	return out.Keys, c.do(ctx, http.MethodGet, "/metal/v1/projects/"+c.ProjectID+"/ssh-keys", nil, &out)
}

// LoadBalancer is an Equinix Metal Load Balancer with its listener ports.
type LoadBalancer struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	IPs   []string `json:"ips"`
	Ports []struct {
		Number  int      `json:"number"`
		PoolIDs []string `json:"pool_ids"`
	} `json:"ports"`
}

// LoadBalancerPool is a load-balancer pool with its origins.
type LoadBalancerPool struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Origins []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Target     string `json:"target"`
		PortNumber int    `json:"port_number"`
		Active     bool   `json:"active"`
	} `json:"origins"`
}

// lbaasToken exchanges the API key for a load-balancer API token, once per call: the harness
// is not under test, and a fresh token never expires under it.
func (c *SimClient) lbaasToken(ctx context.Context) (string, error) {
	var out struct {
		AccessToken string `json:"access_token"`
	}
	return out.AccessToken, c.do(ctx, http.MethodPost, "/iam/api-keys/exchange", nil, &out)
}

// LoadBalancers lists the project's load balancers.
func (c *SimClient) LoadBalancers(ctx context.Context) ([]LoadBalancer, error) {
	var out struct {
		LoadBalancers []LoadBalancer `json:"loadbalancers"`
	}
	return out.LoadBalancers, c.do(ctx, http.MethodGet, "/lbaas/v1/projects/"+c.ProjectID+"/loadbalancers", nil, &out)
}

// LoadBalancerPools lists the project's load-balancer pools with their origins.
func (c *SimClient) LoadBalancerPools(ctx context.Context) ([]LoadBalancerPool, error) {
	var out struct {
		Pools []LoadBalancerPool `json:"pools"`
	}
	return out.Pools, c.do(ctx, http.MethodGet, "/lbaas/v1/projects/"+c.ProjectID+"/loadbalancers/pools", nil, &out)
}

// Fault is a fault to inject (see test/infrastructure/packetsim.Fault).
type Fault struct {
	Kind        string  `json:"kind"`
	Route       string  `json:"route,omitempty"`
	Method      string  `json:"method,omitempty"`
	Probability float64 `json:"probability,omitempty"`
	Status      int     `json:"status,omitempty"`
	RetryAfter  int     `json:"retry_after,omitempty"`
	ResourceID  string  `json:"resource_id,omitempty"`
	Count       int     `json:"count,omitempty"`
}

// InjectFault adds a fault and returns its id.
func (c *SimClient) InjectFault(ctx context.Context, f Fault) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	return out.ID, c.do(ctx, http.MethodPost, "/_sim/faults", f, &out)
}

// ClearFaults removes every fault.
func (c *SimClient) ClearFaults(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/_sim/faults", nil, nil)
}

// Conformance is what the simulator's check against the published Metal API spec has seen.
func (c *SimClient) Conformance(ctx context.Context) (packetsim.ConformanceReport, error) {
	var out packetsim.ConformanceReport
	return out, c.do(ctx, http.MethodGet, "/_sim/conformance", nil, &out)
}

// ExpectSpecConformance fails the calling node if any answer the suite got was off the spec, and
// prints how many were validated; suites call it before they stop the sandbox.
func ExpectSpecConformance(ctx context.Context, c *SimClient, w io.Writer) error {
	if c == nil { // the suite never got as far as a simulator
		return nil
	}
	rep, err := c.Conformance(ctx)
	if err != nil {
		return fmt.Errorf("reading the simulator's spec check: %w", err)
	}
	if !rep.Checked {
		return fmt.Errorf("the simulator ran without the Metal API spec check")
	}
	fmt.Fprintln(w, rep.Summary())
	for _, f := range rep.Requests {
		fmt.Fprintf(w, "  request off the spec (accepted): %s (%d×)\n", f.Finding, f.Count)
	}
	return rep.Err()
}

// Requests returns the recorded requests.
func (c *SimClient) Requests(ctx context.Context) ([]Request, error) {
	var out struct {
		Requests []Request `json:"requests"`
	}
	return out.Requests, c.do(ctx, http.MethodGet, "/_sim/requests", nil, &out)
}

// RouteCounts counts the requests per route ("POST /projects/{id}/devices") since the
// simulator started, including those its request log no longer holds.
func (c *SimClient) RouteCounts(ctx context.Context) (map[string]int, error) {
	var out struct {
		Counts map[string]int `json:"counts"`
	}
	// No route is "-": the answer carries the counts without the log.
	return out.Counts, c.do(ctx, http.MethodGet, "/_sim/requests?route=-", nil, &out)
}

// ProviderCalls counts the recorded Packet API calls made by the provider (not by the harness).
func (c *SimClient) ProviderCalls(ctx context.Context) (int, error) {
	reqs, err := c.Requests(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r.UserAgent, "cluster-api-provider-packet") {
			n++
		}
	}
	return n, nil
}

// WaitForAPI waits until the simulator answers.
func (c *SimClient) WaitForAPI(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = c.do(ctx, http.MethodGet, "/_sim/clock", nil, nil)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("the simulator did not answer within %s: %w", timeout, last)
	}
	return err
}

func hasTagPart(tags []string, part string) bool {
	if part == "" {
		return true
	}
	for _, t := range tags {
		if strings.Contains(t, part) {
			return true
		}
	}
	return false
}

func filter[T any](in []T, keep func(T) bool) []T {
	out := in[:0:0]
	for _, x := range in {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// DeviceAction posts a device action (power_off, power_on, reboot, reinstall) as a Packet user
// would.
func (c *SimClient) DeviceAction(ctx context.Context, id, action string) error {
	return c.do(ctx, http.MethodPost, "/metal/v1/devices/"+id+"/actions", map[string]string{"type": action}, nil)
}

// CreateDevice creates an on-demand c3.small.x86 device in the project, as another Packet user
// or tool would, outside any cluster.
func (c *SimClient) CreateDevice(ctx context.Context, hostname, metro string, tags []string) (*Device, error) {
	d := &Device{}
	return d, c.do(ctx, http.MethodPost, "/metal/v1/projects/"+c.ProjectID+"/devices", map[string]any{"hostname": hostname,
		"plan": "c3.small.x86", "operating_system": "ubuntu_24_04", "metro": metro, "billing_cycle": "hourly", "tags": tags}, d)
}

// DeleteDevice deletes a device.
func (c *SimClient) DeleteDevice(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/metal/v1/devices/"+id, nil, nil)
}

// ReserveIP reserves one public IPv4 address in the metro, with tags.
func (c *SimClient) ReserveIP(ctx context.Context, metro string, tags []string) (*IP, error) {
	ip := &IP{}
	return ip, c.do(ctx, http.MethodPost, "/metal/v1/projects/"+c.ProjectID+"/ips", map[string]any{"type": "public_ipv4",
		"quantity": 1, "metro": metro, "tags": tags, "fail_on_approval_required": true}, ip)
}

// ReleaseIP releases an IP reservation.
func (c *SimClient) ReleaseIP(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/metal/v1/ips/"+id, nil, nil)
}

// Console returns a device's serial console, where the boot emulation says why a host did not
// join its cluster.
func (c *SimClient) Console(ctx context.Context, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/_sim/devices/"+id+"/console", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	return string(data), err
}

// RemoveFault lifts one fault.
func (c *SimClient) RemoveFault(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/_sim/faults/"+id, nil, nil)
}

// SpotPrice reads the spot market price of a plan in a metro.
func (c *SimClient) SpotPrice(ctx context.Context, metro, plan string) (float64, error) {
	var out struct {
		Prices map[string]map[string]float64 `json:"prices"`
	}
	if err := c.do(ctx, http.MethodGet, "/_sim/spot-market", nil, &out); err != nil {
		return 0, err
	}
	price, ok := out.Prices[metro][plan]
	if !ok {
		return 0, fmt.Errorf("no spot market for %s in %s", plan, metro)
	}
	return price, nil
}

// SetSpotPrice moves the spot market: spot devices whose bid is now below it are reclaimed.
func (c *SimClient) SetSpotPrice(ctx context.Context, metro, plan string, price float64) error {
	return c.do(ctx, http.MethodPut, "/_sim/spot-market/"+metro+"/"+plan, map[string]float64{"price": price}, nil)
}
