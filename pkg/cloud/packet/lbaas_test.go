package packet_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const exchangeRoute = "POST /iam/api-keys/exchange"

// newLBaaSSim starts a simulator whose tokens live ttl, and a client for its load-balancer API
// whose own clock is clientClock (nil: the simulator's).
func newLBaaSSim(t *testing.T, ttl time.Duration, key string, clientClock *packetsim.VirtualClock) (*packetsim.Server, *packetsim.VirtualClock, packet.Client) {
	t.Helper()
	clock := packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if clientClock == nil {
		clientClock = clock
	}
	sim, err := packetsim.New(packetsim.Options{Clock: clock, LBaaSTokenTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1/", LBaaSURL: srv.URL + "/lbaas",
		TokenExchangeURL: srv.URL + "/iam/api-keys/exchange", APIKey: key, QPS: 1000, Burst: 1000, Now: clientClock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return sim, clock, c
}

func TestLoadBalancerLifecycleSpendsOneTokenExchange(t *testing.T) {
	ctx := context.Background()
	sim, _, c := newLBaaSSim(t, time.Hour, packetsim.DefaultToken, nil)
	sv, _ := catalog.LoadBalancerLocation("sv")

	lbID, err := c.CreateLoadBalancer(ctx, packet.CreateLoadBalancerRequest{ProjectID: project, Name: "capp:lb", LocationID: sv})
	if err != nil {
		t.Fatal(err)
	}
	poolID, err := c.CreateLoadBalancerPool(ctx, project, "capp:lb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateLoadBalancerPort(ctx, lbID, "kube-apiserver", 7443, []string{poolID}); err != nil {
		t.Fatal(err)
	}
	originID, err := c.CreateLoadBalancerOrigin(ctx, poolID, packet.LoadBalancerOrigin{Name: "cp-0", Target: "127.0.0.9", Port: 6443, Active: true})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := c.GetLoadBalancer(ctx, lbID)
	if err != nil {
		t.Fatal(err)
	}
	if len(lb.IPs) != 1 || lb.LocationID != sv || len(lb.Ports) != 1 || lb.Ports[0].Number != 7443 || !slices.Equal(lb.Ports[0].PoolIDs, []string{poolID}) {
		t.Fatalf("load balancer = %+v, want one address in %s and port 7443 forwarding to %s", lb, sv, poolID)
	}
	lbs, err := c.ListLoadBalancers(ctx, project)
	if err != nil || len(lbs) != 1 || lbs[0].Name != "capp:lb" {
		t.Fatalf("ListLoadBalancers = %+v, %v", lbs, err)
	}
	pools, err := c.ListLoadBalancerPools(ctx, project)
	if err != nil || len(pools) != 1 || len(pools[0].Origins) != 1 {
		t.Fatalf("ListLoadBalancerPools = %+v, %v", pools, err)
	}
	if o := pools[0].Origins[0]; o.ID != originID || o.Target != "127.0.0.9" || o.Port != 6443 || !o.Active || o.Name != "cp-0" {
		t.Fatalf("origin = %+v", o)
	}
	if err := c.RenameLoadBalancer(ctx, lbID, "capp:renamed"); err != nil {
		t.Fatal(err)
	}
	if got := sim.LoadBalancers(project); len(got) != 1 || got[0].Name != "capp:renamed" {
		t.Fatalf("after the rename the simulator holds %+v", got)
	}

	for _, del := range []func() error{
		func() error { return c.DeleteLoadBalancerOrigin(ctx, originID) },
		func() error { return c.DeleteLoadBalancerPool(ctx, poolID) },
		func() error { return c.DeleteLoadBalancer(ctx, lbID) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
		if err := del(); err != nil {
			t.Fatalf("deleting what is gone already: %v, want no error", err)
		}
	}
	if got := sim.LoadBalancers(project); len(got) != 0 {
		t.Fatalf("load balancers left: %+v", got)
	}
	if n := sim.Counters()[exchangeRoute]; n != 1 {
		t.Fatalf("%d token exchanges for one client's calls, want 1: the token is cached", n)
	}
}

func TestLoadBalancerTokenIsRenewedBeforeItExpires(t *testing.T) {
	ctx := context.Background()
	sim, clock, c := newLBaaSSim(t, 10*time.Minute, packetsim.DefaultToken, nil)
	list := func() {
		t.Helper()
		if _, err := c.ListLoadBalancers(ctx, project); err != nil {
			t.Fatal(err)
		}
	}
	list()
	clock.Advance(8 * time.Minute)
	list()
	if n := sim.Counters()[exchangeRoute]; n != 1 {
		t.Fatalf("%d exchanges while the token had 2 minutes left, want 1", n)
	}
	clock.Advance(90 * time.Second) // 30s left: inside the renewal margin
	list()
	if n := sim.Counters()[exchangeRoute]; n != 2 {
		t.Fatalf("%d exchanges with 30s of the token left, want 2", n)
	}
	if n := sim.Counters()["GET /lbaas/v1/projects/{id}/loadbalancers"]; n != 3 {
		t.Fatalf("%d list requests, want 3: no request was sent with an expiring token", n)
	}
}

func TestLoadBalancerTokenThatLBaaSEndsEarlyIsReplacedOnce(t *testing.T) {
	ctx := context.Background()
	clientClock := packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sim, clock, c := newLBaaSSim(t, 10*time.Minute, packetsim.DefaultToken, clientClock)
	if _, err := c.ListLoadBalancers(ctx, project); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // the server's clock only: the client believes its token valid
	if _, err := c.ListLoadBalancers(ctx, project); err != nil {
		t.Fatalf("after LBaaS ended the token: %v, want the call answered with a fresh one", err)
	}
	if n := sim.Counters()[exchangeRoute]; n != 2 {
		t.Fatalf("%d exchanges, want 2", n)
	}
}

func TestLoadBalancerErrorsAreClassifiedWithoutTheKey(t *testing.T) {
	ctx := context.Background()
	_, _, c := newLBaaSSim(t, time.Hour, packetsim.DefaultToken, nil)
	_, err := c.CreateLoadBalancer(ctx, packet.CreateLoadBalancerRequest{ProjectID: project, Name: "x", LocationID: "lctnloc-nowhere"})
	expectKind(t, err, packet.KindInvalid, "lctnloc-nowhere")
	if !strings.HasPrefix(err.Error(), "LBaaS POST /v1/projects/{id}/loadbalancers: 422") {
		t.Fatalf("error %q does not name the operation by route", err)
	}
	_, err = c.GetLoadBalancer(ctx, "loadbal-doesnotexist000000000")
	expectKind(t, err, packet.KindNotFound, "404")

	const badKey = "not-a-key-of-this-simulator"
	_, _, bad := newLBaaSSim(t, time.Hour, badKey, nil)
	_, err = bad.ListLoadBalancers(ctx, project)
	expectKind(t, err, packet.KindUnauthorized, "POST /api-keys/exchange: 401")
	if strings.Contains(err.Error(), badKey) {
		t.Fatalf("error %q carries the API key", err)
	}
}

func TestLoadBalancerRateLimitPausesTheClient(t *testing.T) {
	ctx := context.Background()
	sim, _, c := newLBaaSSim(t, time.Hour, packetsim.DefaultToken, nil)
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultRateLimit, Route: "GET /lbaas/v1/projects/{id}/loadbalancers", RetryAfter: 30, Count: 1})
	_, err := c.ListLoadBalancers(ctx, project)
	if packet.KindOf(err) != packet.KindRateLimited || packet.RetryAfter(err) != 30*time.Second {
		t.Fatalf("first call: %v (retry after %s), want rate limited for 30s", err, packet.RetryAfter(err))
	}
	before := sim.Counters()["GET /lbaas/v1/projects/{id}/loadbalancers"]
	if _, err := c.ListLoadBalancers(ctx, project); packet.KindOf(err) != packet.KindRateLimited {
		t.Fatalf("second call: %v, want refused without a request", err)
	}
	if after := sim.Counters()["GET /lbaas/v1/projects/{id}/loadbalancers"]; after != before {
		t.Fatalf("a request was sent during the pause (%d → %d)", before, after)
	}
	if _, err := c.ListFacilities(ctx); err != nil {
		t.Fatalf("the Metal API is paused too: %v", err)
	}
}

func TestLoadBalancerRequestsAreCountedByRoute(t *testing.T) {
	ctx := context.Background()
	_, _, c := newLBaaSSim(t, time.Hour, packetsim.DefaultToken, nil)
	op := "LBaaS GET /v1/loadbalancers/{id}"
	before := testutil.ToFloat64(packet.RequestsTotal().WithLabelValues(op, "404"))
	_, _ = c.GetLoadBalancer(ctx, "loadbal-doesnotexist000000000")
	if after := testutil.ToFloat64(packet.RequestsTotal().WithLabelValues(op, "404")); after != before+1 {
		t.Fatalf("capp_api_requests_total{%s,404} went from %v to %v", op, before, after)
	}
}
