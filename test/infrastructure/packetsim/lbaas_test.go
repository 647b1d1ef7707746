package packetsim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// The load-balancer service is driven with plain net/http, as the provider's
// client does: packngo has no client for it.

// lbReply is one answer of the service: status, headers and the JSON body.
type lbReply struct {
	status int
	header http.Header
	body   map[string]any
}

// errors are the texts of the simulator's error envelope.
func (r lbReply) errors() []string {
	var out []string
	if list, ok := r.body["errors"].([]any); ok {
		for _, m := range list {
			out = append(out, m.(string))
		}
	}
	return out
}

func (r lbReply) id() string {
	id, _ := r.body["id"].(string)
	return id
}

// call sends one request with "Authorization: Bearer token" (none when token is empty).
func (e *env) call(method, path, token string, body any) lbReply {
	GinkgoHelper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		reader = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, e.http.URL+path, reader)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	out := lbReply{status: resp.StatusCode, header: resp.Header, body: map[string]any{}}
	data, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		out.body["raw"] = string(data)
	} else if len(data) > 0 {
		Expect(json.Unmarshal(data, &out.body)).To(Succeed(), "body %q", data)
	}
	return out
}

// exchange trades a Metal API key for an access token of the service.
func (e *env) exchange(key string) string {
	GinkgoHelper()
	r := e.call("POST", "/iam/api-keys/exchange", key, nil)
	Expect(r.status).To(Equal(200), "exchange: %v", r.body)
	return r.body["access_token"].(string)
}

// lb is a client of the service with one access token.
type lb struct {
	e     *env
	token string
}

func (c lb) do(method, path string, body any) lbReply {
	GinkgoHelper()
	return c.e.call(method, "/lbaas/v1"+path, c.token, body)
}

// ok asserts a 200 and returns the answer.
func (c lb) ok(method, path string, body any) lbReply {
	GinkgoHelper()
	r := c.do(method, path, body)
	Expect(r.status).To(Equal(200), "%s %s: %v", method, path, r.body)
	return r
}

// status asserts an error status and returns its texts.
func (c lb) status(want int, method, path string, body any) []string {
	GinkgoHelper()
	r := c.do(method, path, body)
	Expect(r.status).To(Equal(want), "%s %s: %v", method, path, r.body)
	return r.errors()
}

func (c lb) createLB(projectID, metro string) string {
	GinkgoHelper()
	return c.ok("POST", "/projects/"+projectID+"/loadbalancers", map[string]any{"name": "lb-" + metro,
		"location_id": packetsim.LBaaSLocations[metro].ID, "provider_id": packetsim.LBaaSProviderID}).id()
}

func (c lb) createPool(projectID string) string {
	GinkgoHelper()
	return c.ok("POST", "/projects/"+projectID+"/loadbalancers/pools", map[string]any{"name": "pool", "protocol": "tcp"}).id()
}

// list is the named list of an answer.
func list(r lbReply, name string) []map[string]any {
	GinkgoHelper()
	items, ok := r.body[name].([]any)
	Expect(ok).To(BeTrue(), "no %q list in %v", name, r.body)
	out := make([]map[string]any, len(items))
	for i, item := range items {
		out[i] = item.(map[string]any)
	}
	return out
}

var _ = Describe("load balancer service: token exchange", func() {
	It("trades a known Metal API key for a bearer token, and nothing else", func() {
		e := newEnv()
		r := e.call("POST", "/iam/api-keys/exchange", packetsim.DefaultToken, nil)
		Expect(r.status).To(Equal(200))
		Expect(r.body).To(HaveKeyWithValue("token_type", "Bearer"))
		Expect(r.body).To(HaveKeyWithValue("expires_in", BeNumerically("==", 3600)))
		token, _ := r.body["access_token"].(string)
		Expect(token).NotTo(BeEmpty())
		Expect(token).NotTo(Equal(packetsim.DefaultToken))
		lb{e, token}.ok("GET", "/projects/"+projectID+"/loadbalancers", nil)

		for _, key := range []string{"wrong", ""} {
			r = e.call("POST", "/iam/api-keys/exchange", key, nil)
			Expect(r.status).To(Equal(401), "key %q", key)
			Expect(r.errors()).To(ConsistOf("Invalid authentication token"))
		}
		req, _ := http.NewRequest("POST", e.http.URL+"/iam/api-keys/exchange", nil)
		req.Header.Set("Authorization", "bearer "+packetsim.DefaultToken)
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200), "the scheme is case-insensitive")

		Expect(lb{e, packetsim.DefaultToken}.status(401, "GET", "/projects/"+projectID+"/loadbalancers", nil)).
			To(ConsistOf("Invalid authentication token"), "a Metal API key is not an access token")
		Expect(lb{e, ""}.status(401, "GET", "/projects/"+projectID+"/loadbalancers", nil)).To(ConsistOf("Invalid authentication token"))
		r = e.call("GET", "/metal/v1/projects/"+projectID, token, nil)
		Expect(r.status).To(Equal(401), "an access token is not a Metal API key")
	})

	It("expires tokens on the simulator's clock, and a new exchange works", func() {
		e := newEnv(func(o *packetsim.Options) { o.LBaaSTokenTTL = 10 * time.Minute })
		r := e.call("POST", "/iam/api-keys/exchange", packetsim.DefaultToken, nil)
		Expect(r.body).To(HaveKeyWithValue("expires_in", BeNumerically("==", 600)))
		c := lb{e, r.body["access_token"].(string)}
		e.sim.Advance(9 * time.Minute)
		c.ok("GET", "/projects/"+projectID+"/loadbalancers", nil)
		e.sim.Advance(time.Minute)
		msgs := c.status(401, "GET", "/projects/"+projectID+"/loadbalancers", nil)
		Expect(msgs).To(ConsistOf(ContainSubstring("expired")))
		fresh := lb{e, e.exchange(packetsim.DefaultToken)}
		Expect(fresh.token).NotTo(Equal(c.token))
		fresh.ok("GET", "/projects/"+projectID+"/loadbalancers", nil)
	})
})

var _ = Describe("load balancer service: objects", func() {
	var e *env
	var c lb
	BeforeEach(func() {
		e = newEnv()
		c = lb{e, e.exchange(packetsim.DefaultToken)}
	})

	It("creates, links, lists, updates and deletes load balancers, ports, pools and origins", func() {
		id := c.createLB(projectID, "da")
		Expect(id).To(MatchRegexp(`^loadbal-[A-Za-z0-9_-]{21}$`))
		got := c.ok("GET", "/loadbalancers/"+id, nil).body
		Expect(got).To(HaveKeyWithValue("name", "lb-da"))
		Expect(got).To(HaveKeyWithValue("location", map[string]any{"id": "lctnloc--uxs0GLeAELHKV8GxO_AI", "name": "DA"}))
		Expect(got).To(HaveKeyWithValue("provider", map[string]any{"id": packetsim.LBaaSProviderID}))
		Expect(got).To(HaveKeyWithValue("ports", BeEmpty()))
		Expect(got["created_at"]).To(Equal("2024-01-02T03:04:05Z"))
		ips := got["ips"].([]any)
		Expect(ips).To(HaveLen(1))
		ip := netip.MustParseAddr(ips[0].(string))
		Expect(netip.MustParsePrefix("127.64.0.0/16").Contains(ip)).To(BeTrue(), "from the public pool: %s", ip)
		Expect(e.sim.LoadBalancers(projectID)).To(ConsistOf(HaveField("Metro", "da")))

		pool := c.createPool(projectID)
		Expect(pool).To(HavePrefix("loadpol-"))
		spare := c.createPool(projectID)
		origin := c.ok("POST", "/loadbalancers/pools/"+pool+"/origins", map[string]any{"name": "cp-0", "target": "127.64.9.9",
			"port_number": 6443, "active": true, "pool_id": pool}).id()
		Expect(origin).To(HavePrefix("loadogn-"))
		port := c.ok("POST", "/loadbalancers/"+id+"/ports", map[string]any{"name": "api", "number": 6443, "pool_ids": []string{pool, spare}}).id()
		Expect(port).To(HavePrefix("loadprt-"))

		Expect(list(c.ok("GET", "/projects/"+projectID+"/loadbalancers", nil), "loadbalancers")).To(ConsistOf(HaveKeyWithValue("id", id)))
		ports := list(c.ok("GET", "/loadbalancers/"+id+"/ports", nil), "ports")
		Expect(ports).To(HaveLen(1))
		Expect(ports[0]).To(HaveKeyWithValue("pool_ids", []any{pool, spare}))
		byNumber := c.ok("GET", "/loadbalancers/"+id+"/ports/6443", nil).body
		Expect(byNumber).To(HaveKeyWithValue("id", port))
		Expect(byNumber).To(HaveKeyWithValue("number", BeNumerically("==", 6443)))
		Expect(list(c.ok("GET", "/projects/"+projectID+"/loadbalancers/pools", nil), "pools")).To(HaveLen(2))
		origins := list(c.ok("GET", "/loadbalancers/pools/"+pool+"/origins", nil), "origins")
		Expect(origins).To(ConsistOf(And(HaveKeyWithValue("target", "127.64.9.9"), HaveKeyWithValue("port_number", BeNumerically("==", 6443)),
			HaveKeyWithValue("active", true), HaveKeyWithValue("pool_id", pool))))

		Expect(c.ok("PATCH", "/loadbalancers/"+id, map[string]any{"name": "renamed"}).id()).To(Equal(id))
		c.ok("PATCH", "/loadbalancers/ports/"+port, map[string]any{"number": 443, "remove_pool_ids": []string{spare}})
		c.ok("PATCH", "/loadbalancers/pools/"+pool, map[string]any{"name": "control-plane"})
		c.ok("PATCH", "/loadbalancers/pools/origins/"+origin, map[string]any{"active": false, "port_number": 7443})
		got = c.ok("GET", "/loadbalancers/"+id, nil).body
		Expect(got).To(HaveKeyWithValue("name", "renamed"))
		Expect(got["ports"]).To(ConsistOf(And(HaveKeyWithValue("number", BeNumerically("==", 443)), HaveKeyWithValue("pool_ids", []any{pool}))))
		lbs := e.sim.LoadBalancers("")
		Expect(lbs).To(HaveLen(1))
		Expect(lbs[0].Ports).To(HaveLen(1))
		Expect(lbs[0].Ports[0].Pools).To(ConsistOf(And(HaveField("Name", "control-plane"),
			HaveField("Origins", ConsistOf(And(HaveField("Active", false), HaveField("PortNumber", 7443)))))))

		// A pool's deletion takes its origins and leaves the ports without it.
		c.ok("PATCH", "/loadbalancers/ports/"+port, map[string]any{"add_pool_ids": []string{spare}})
		c.ok("DELETE", "/loadbalancers/pools/"+spare, nil)
		Expect(c.ok("GET", "/loadbalancers/"+id+"/ports/443", nil).body).To(HaveKeyWithValue("pool_ids", []any{pool}))

		// Ports leave and rejoin a load balancer.
		c.ok("PATCH", "/loadbalancers/"+id, map[string]any{"clear_ports": true})
		Expect(list(c.ok("GET", "/loadbalancers/"+id+"/ports", nil), "ports")).To(BeEmpty())
		c.ok("PATCH", "/loadbalancers/"+id, map[string]any{"add_port_ids": []string{port}})
		c.ok("PATCH", "/loadbalancers/"+id, map[string]any{"remove_port_ids": []string{port}})
		c.ok("PATCH", "/loadbalancers/"+id, map[string]any{"add_port_ids": []string{port}})
		Expect(list(c.ok("GET", "/loadbalancers/"+id+"/ports", nil), "ports")).To(ConsistOf(HaveKeyWithValue("id", port)))

		Expect(c.ok("DELETE", "/loadbalancers/"+id, nil).id()).To(Equal(id))
		c.status(404, "GET", "/loadbalancers/"+id, nil)
		c.status(404, "PATCH", "/loadbalancers/ports/"+port, map[string]any{"name": "x"})
		Expect(e.sim.LoadBalancers(projectID)).To(BeEmpty())
		Expect(e.sim.LoadBalancerPools(projectID)).To(ConsistOf(HaveField("ID", pool)), "pools are the project's and stay")
		again := c.createLB(projectID, "sv")
		Expect(c.ok("GET", "/loadbalancers/"+again, nil).body["ips"]).To(Equal([]any{ip.String()}), "the address went back to the pool")
		c.ok("DELETE", "/loadbalancers/pools/origins/"+origin, nil)
		Expect(list(c.ok("GET", "/loadbalancers/pools/"+pool+"/origins", nil), "origins")).To(BeEmpty())
	})

	It("answers 422 for what it cannot create or change", func() {
		create := func(body map[string]any) []string {
			GinkgoHelper()
			return c.status(422, "POST", "/projects/"+projectID+"/loadbalancers", body)
		}
		sv, provider := packetsim.LBaaSLocations["sv"].ID, packetsim.LBaaSProviderID
		Expect(create(map[string]any{"location_id": sv, "provider_id": provider})).To(ConsistOf(ContainSubstring("name")))
		Expect(create(map[string]any{"name": "x", "location_id": "lctnloc-nowhere", "provider_id": provider})).
			To(ConsistOf(ContainSubstring("lctnloc-nowhere")))
		Expect(create(map[string]any{"name": "x", "location_id": sv, "provider_id": "loadpvd-other"})).To(ConsistOf(ContainSubstring("provider_id")))
		Expect(e.sim.LoadBalancers(projectID)).To(BeEmpty())

		id := c.createLB(projectID, "sv")
		pool := c.createPool(projectID)
		c.ok("POST", "/loadbalancers/"+id+"/ports", map[string]any{"name": "api", "number": 6443})
		for _, body := range []map[string]any{
			{"name": "dup", "number": 6443},
			{"name": "zero", "number": 0},
			{"name": "high", "number": 65536},
			{"name": "pool", "number": 80, "pool_ids": []string{"loadpol-unknown"}},
		} {
			c.status(422, "POST", "/loadbalancers/"+id+"/ports", body)
		}
		c.status(422, "POST", "/projects/"+projectID+"/loadbalancers/pools", map[string]any{"name": "p", "protocol": "http"})
		c.status(422, "POST", "/projects/"+projectID+"/loadbalancers/pools", map[string]any{"protocol": "tcp"})
		for _, body := range []map[string]any{
			{"name": "host", "target": "cp.example.com", "port_number": 6443},
			{"name": "v6", "target": "2001:db8::1", "port_number": 6443},
			{"name": "port", "target": "127.64.0.9", "port_number": 0},
			{"target": "127.64.0.9", "port_number": 6443},
		} {
			c.status(422, "POST", "/loadbalancers/pools/"+pool+"/origins", body)
		}
		Expect(e.sim.LoadBalancerPools(projectID)).To(ConsistOf(HaveField("Origins", BeEmpty())))
		Expect(e.sim.LoadBalancers(projectID)[0].Ports).To(HaveLen(1))
	})

	It("answers 404 with a message for unknown objects", func() {
		id := c.createLB(projectID, "sv")
		for _, call := range [][2]string{
			{"GET", "/loadbalancers/loadbal-unknown"},
			{"PATCH", "/loadbalancers/loadbal-unknown"},
			{"DELETE", "/loadbalancers/loadbal-unknown"},
			{"GET", "/loadbalancers/loadbal-unknown/ports"},
			{"GET", "/loadbalancers/" + id + "/ports/6443"},
			{"PATCH", "/loadbalancers/ports/loadprt-unknown"},
			{"DELETE", "/loadbalancers/ports/loadprt-unknown"},
			{"GET", "/loadbalancers/pools/loadpol-unknown"},
			{"DELETE", "/loadbalancers/pools/loadpol-unknown"},
			{"GET", "/loadbalancers/pools/loadpol-unknown/origins"},
			{"PATCH", "/loadbalancers/pools/origins/loadogn-unknown"},
			{"DELETE", "/loadbalancers/pools/origins/loadogn-unknown"},
			{"GET", "/projects/00000000-0000-4000-8000-0000000000ff/loadbalancers"},
			{"GET", "/no-such-route"},
		} {
			msgs := c.status(404, call[0], call[1], map[string]any{})
			Expect(msgs).To(HaveLen(1), "%s %s", call[0], call[1])
			Expect(msgs[0]).NotTo(BeEmpty())
		}
	})
})

var _ = Describe("load balancer service: tenancy and the simulator's machinery", func() {
	It("keeps a project key to its projects: 403 on project routes, 404 on objects", func() {
		e := newEnv(func(o *packetsim.Options) { o.Tokens = map[string][]string{"all": nil, "a": {projectID}} })
		other, _, err := clientFor(e.http.URL, "all").Projects.Create(&packngo.ProjectCreateRequest{Name: "project-b"})
		Expect(err).NotTo(HaveOccurred())
		all, a := lb{e, e.exchange("all")}, lb{e, e.exchange("a")}
		theirs := all.createLB(other.ID, "sv")
		pool := all.createPool(other.ID)
		port := all.ok("POST", "/loadbalancers/"+theirs+"/ports", map[string]any{"name": "api", "number": 6443, "pool_ids": []string{pool}}).id()
		origin := all.ok("POST", "/loadbalancers/pools/"+pool+"/origins", map[string]any{"name": "o", "target": "127.64.0.9", "port_number": 6443, "active": true}).id()

		a.ok("GET", "/projects/"+projectID+"/loadbalancers", nil)
		Expect(a.status(403, "GET", "/projects/"+other.ID+"/loadbalancers", nil)).To(ConsistOf("You are not authorized to view this project"))
		a.status(403, "POST", "/projects/"+other.ID+"/loadbalancers", map[string]any{"name": "x",
			"location_id": packetsim.LBaaSLocations["sv"].ID, "provider_id": packetsim.LBaaSProviderID})
		a.status(403, "GET", "/projects/"+other.ID+"/loadbalancers/pools", nil)
		a.status(404, "GET", "/loadbalancers/"+theirs, nil)
		a.status(404, "PATCH", "/loadbalancers/"+theirs, map[string]any{"name": "mine"})
		a.status(404, "DELETE", "/loadbalancers/"+theirs, nil)
		a.status(404, "DELETE", "/loadbalancers/ports/"+port, nil)
		a.status(404, "GET", "/loadbalancers/pools/"+pool, nil)
		a.status(404, "PATCH", "/loadbalancers/pools/origins/"+origin, map[string]any{"active": false})
		mine := a.createLB(projectID, "sv")
		a.status(422, "PATCH", "/loadbalancers/"+mine, map[string]any{"add_port_ids": []string{port}})
		a.status(422, "POST", "/loadbalancers/"+mine+"/ports", map[string]any{"name": "api", "number": 6443, "pool_ids": []string{pool}})

		Expect(all.ok("GET", "/loadbalancers/"+theirs, nil).body["name"]).To(Equal("lb-sv"))
		Expect(e.sim.LoadBalancerPools(other.ID)[0].Origins[0].Active).To(BeTrue())

		// A deleted project takes its load balancers and pools with it.
		_, err = clientFor(e.http.URL, "all").Projects.Delete(other.ID)
		Expect(err).NotTo(HaveOccurred())
		all.status(404, "GET", "/loadbalancers/"+theirs, nil)
		Expect(e.sim.LoadBalancerPools(other.ID)).To(BeEmpty())
	})

	It("counts, faults and rate-limits its routes like the Metal API's", func() {
		e := newEnv(func(o *packetsim.Options) { o.RateLimit = packetsim.RateLimit{PerSecond: 1, Burst: 3} })
		c := lb{e, e.exchange(packetsim.DefaultToken)}
		resp, err := http.Post(e.http.URL+"/_sim/faults", "application/json", strings.NewReader(
			`{"kind":"http_error","route":"POST /lbaas/v1/projects/{id}/loadbalancers","status":503,"message":"upstream down","count":1}`))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(201))
		body := map[string]any{"name": "x", "location_id": packetsim.LBaaSLocations["sv"].ID, "provider_id": packetsim.LBaaSProviderID}
		Expect(c.status(503, "POST", "/projects/"+projectID+"/loadbalancers", body)).To(ConsistOf("upstream down"))
		Expect(e.sim.LoadBalancers(projectID)).To(BeEmpty())
		c.ok("POST", "/projects/"+projectID+"/loadbalancers", body)
		Expect(e.sim.Counters()).To(And(HaveKeyWithValue("POST /lbaas/v1/projects/{id}/loadbalancers", 2),
			HaveKeyWithValue("POST /iam/api-keys/exchange", 1)))
		Expect(e.sim.Requests()).To(ContainElement(And(HaveField("Route", "POST /iam/api-keys/exchange"), HaveField("Authenticated", true))))

		// The exchange and two calls took the bucket's three; the Metal API has its own.
		r := c.do("GET", "/projects/"+projectID+"/loadbalancers", nil)
		Expect(r.status).To(Equal(429))
		Expect(r.errors()).To(ConsistOf("Too Many Requests"))
		Expect(r.header.Get("Retry-After")).To(Equal("1"))
		Expect(r.header.Get("X-RateLimit-Remaining")).To(Equal("0"))
		Expect(r.header.Get("X-RateLimit-Limit")).To(Equal("3"))
		_, _, err = e.client.Projects.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(time.Second)
		c.ok("GET", "/projects/"+projectID+"/loadbalancers", nil)

		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "/lbaas/*", Status: 502, Body: "html", Count: 1})
		e.sim.Advance(time.Second)
		r2, err := http.Get(e.http.URL + "/lbaas/v1/projects/" + projectID + "/loadbalancers")
		Expect(err).NotTo(HaveOccurred())
		r2.Body.Close()
		Expect(r2.StatusCode).To(Equal(401), "auth comes before faults")
		e.sim.Advance(time.Second)
		Expect(c.do("GET", "/projects/"+projectID+"/loadbalancers", nil).status).To(Equal(502))
	})

	It("keeps load balancers, pools and access tokens in the state file", func() {
		path := filepath.Join(GinkgoT().TempDir(), "state.json")
		e := newEnv(func(o *packetsim.Options) { o.StateFile = path })
		c := lb{e, e.exchange(packetsim.DefaultToken)}
		id := c.createLB(projectID, "ny")
		pool := c.createPool(projectID)
		c.ok("POST", "/loadbalancers/"+id+"/ports", map[string]any{"name": "api", "number": 6443, "pool_ids": []string{pool}})
		Expect(e.sim.SaveState()).To(Succeed())

		again := newEnv(func(o *packetsim.Options) { o.StateFile = path })
		lbs := again.sim.LoadBalancers(projectID)
		Expect(lbs).To(ConsistOf(And(HaveField("ID", id), HaveField("Metro", "ny"),
			HaveField("Ports", ConsistOf(HaveField("Pools", ConsistOf(HaveField("ID", pool))))))))
		lb{again, c.token}.ok("GET", "/loadbalancers/"+id, nil)
	})
})
