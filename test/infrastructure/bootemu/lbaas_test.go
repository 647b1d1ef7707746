package bootemu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// lbaas calls the simulator's load-balancer service as the provider does, over HTTP with a
// token from the exchange, and returns the ID the call answers with.
func (e *env) lbaas(method, path string, body any) string {
	e.t.Helper()
	if e.lbToken == "" {
		var out struct {
			AccessToken string `json:"access_token"`
		}
		e.lbaasCall("POST", e.url+"/iam/api-keys/exchange", packetsim.DefaultToken, nil, &out)
		e.lbToken = out.AccessToken
	}
	var out struct {
		ID string `json:"id"`
	}
	e.lbaasCall(method, e.url+"/lbaas/v1"+path, e.lbToken, body, &out)
	return out.ID
}

func (e *env) lbaasCall(method, url, token string, body, out any) {
	e.t.Helper()
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s %s: %s", method, url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		e.t.Fatal(err)
	}
}

// loadBalancer is what a provider builds in front of a cluster: a load balancer in sv with a
// port on 6443 forwarding to one pool.
type loadBalancer struct{ id, ip, pool, port string }

func (e *env) createLoadBalancer() loadBalancer {
	e.t.Helper()
	project := "/projects/" + packetsim.DefaultProjectID
	lb := loadBalancer{id: e.lbaas("POST", project+"/loadbalancers", map[string]any{"name": "api",
		"location_id": packetsim.LBaaSLocations["sv"].ID, "provider_id": packetsim.LBaaSProviderID})}
	lb.pool = e.lbaas("POST", project+"/loadbalancers/pools", map[string]any{"name": "control-plane", "protocol": "tcp"})
	lb.port = e.lbaas("POST", "/loadbalancers/"+lb.id+"/ports", map[string]any{"name": "api", "number": 6443, "pool_ids": []string{lb.pool}})
	for _, l := range e.sim.LoadBalancers(packetsim.DefaultProjectID) {
		if l.ID == lb.id {
			lb.ip = l.IP
		}
	}
	return lb
}

// addOrigin points the pool at a device's public address and returns the origin's ID.
func (e *env) addOrigin(lb loadBalancer, deviceID string, port int, active bool) string {
	e.t.Helper()
	return e.lbaas("POST", "/loadbalancers/pools/"+lb.pool+"/origins", map[string]any{"name": deviceID,
		"target": e.address(deviceID, "public_ipv4"), "port_number": port, "active": active, "pool_id": lb.pool})
}

func (e *env) patchOrigin(id string, body map[string]any) {
	e.t.Helper()
	e.lbaas("PATCH", "/loadbalancers/pools/origins/"+id, body)
}

// address is the device's management address of a reservation type.
func (e *env) address(deviceID, typ string) string {
	e.t.Helper()
	types := map[string]string{}
	for _, r := range e.sim.IPReservations(packetsim.DefaultProjectID) {
		types[r.ID] = r.Type
	}
	for _, a := range e.sim.IPAssignments(packetsim.DefaultProjectID) {
		if a.DeviceID == deviceID && a.Management && types[a.ReservationID] == typ {
			return a.Address
		}
	}
	e.t.Fatalf("device %s has no %s address", deviceID, typ)
	return ""
}

func TestLoadBalancerRoutesOnlyThroughACorrectActiveOrigin(t *testing.T) {
	e := newEnv(t)
	lb := e.createLoadBalancer()
	c := newCluster(t, "theta", lb.ip)
	id := e.createDevice("theta-cp-0", c.init(t, "v1.36.3"))
	e.settle(boot)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers while the load balancer's pool has no origin")
	}
	origin := e.addOrigin(lb, id, 6443, false)
	e.settle(time.Second)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers through an inactive origin")
	}
	e.patchOrigin(origin, map[string]any{"active": true})
	e.settle(time.Second)
	if !answers(c.endpoint) {
		t.Fatalf("the endpoint does not answer through an active origin on the control plane; console:\n%s", e.console(id))
	}
	if _, ok := nodes(t, c.client(t))["theta-cp-0"]; !ok {
		t.Fatal("the control plane's node is not served through the load balancer")
	}

	for _, wrong := range []struct {
		why    string
		change map[string]any
	}{
		{"an origin on another port than the API server's", map[string]any{"port_number": 7443}},
		{"an origin on the host's private address", map[string]any{"target": e.address(id, "private_ipv4")}},
		{"a deactivated origin", map[string]any{"active": false}},
	} {
		e.patchOrigin(origin, wrong.change)
		e.settle(time.Second)
		if answers(c.endpoint) {
			t.Fatalf("the endpoint answers through %s", wrong.why)
		}
		e.patchOrigin(origin, map[string]any{"port_number": 6443, "target": e.address(id, "public_ipv4"), "active": true})
		e.settle(time.Second)
		if !answers(c.endpoint) {
			t.Fatalf("the endpoint does not answer again once %s is put right", wrong.why)
		}
	}

	e.lbaas("PATCH", "/loadbalancers/ports/"+lb.port, map[string]any{"number": 443})
	e.settle(time.Second)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers with no load balancer port on its port")
	}
	e.settle(time.Minute) // well past the emulated CPEM's retry delay
	if n := e.sim.Counters()["POST /devices/{id}/ips"]; n != 0 {
		t.Fatalf("the emulated CPEM tried %d times to assign the load balancer's address", n)
	}
}

func TestLoadBalancerOriginsNameTheAPIServersBindPort(t *testing.T) {
	e := newEnv(t)
	lb := e.createLoadBalancer()
	c := newCluster(t, "iota", lb.ip)
	c.bindPort = 7443
	id := e.createDevice("iota-cp-0", c.init(t, "v1.36.3"))
	e.settle(boot)
	origin := e.addOrigin(lb, id, 6443, true)
	e.settle(time.Second)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers through an origin on 6443 while the API server binds 7443")
	}
	e.patchOrigin(origin, map[string]any{"port_number": 7443})
	e.settle(time.Second)
	if !answers(c.endpoint) {
		t.Fatalf("the endpoint does not answer through an origin on the bind port; console:\n%s", e.console(id))
	}
}

func TestLoadBalancerKeepsAnsweringThroughTheLiveControlPlane(t *testing.T) {
	e := newEnv(t)
	lb := e.createLoadBalancer()
	c := newCluster(t, "kappa", lb.ip)
	first := e.createDevice("kappa-cp-0", c.init(t, "v1.36.3"))
	e.settle(boot)
	e.addOrigin(lb, first, 6443, true)
	e.settle(time.Second)
	wc := c.client(t)
	createToken(t, wc)
	second := e.createDevice("kappa-cp-1", c.controlPlaneJoin(t, testToken))
	e.settle(boot)
	if got := len(nodes(t, wc)); got != 2 {
		t.Fatalf("%d nodes after the control-plane join through the load balancer, want 2; console:\n%s", got, e.console(second))
	}
	secondOrigin := e.addOrigin(lb, second, 6443, true)

	if _, err := e.metal.Devices.PowerOff(first); err != nil {
		t.Fatal(err)
	}
	e.settle(10 * time.Second)
	if d, _ := e.sim.Device(first); d.State != packetsim.StateInactive {
		t.Fatalf("the first control plane is %s, want inactive", d.State)
	}
	if !answers(c.endpoint) {
		t.Fatal("the endpoint does not answer through the live control plane's origin")
	}
	e.patchOrigin(secondOrigin, map[string]any{"active": false})
	e.settle(time.Second)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers through the origin of a powered-off control plane")
	}
}
