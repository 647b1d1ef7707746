package packet_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const project = packetsim.DefaultProjectID

// newSim starts a simulator on a virtual clock and a client for it, over real HTTP.
func newSim(t *testing.T, opts packetsim.Options) (*packetsim.Server, packet.Client) {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	sim, err := packetsim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); _ = sim.Close(); packetsim.CheckConformance(t, sim) })
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1", APIKey: packetsim.DefaultToken, QPS: 1000, Burst: 1000, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	return sim, c
}

func device(name string, tags ...string) packet.CreateDeviceRequest {
	return packet.CreateDeviceRequest{ProjectID: project, Hostname: name, Plan: "c3.small.x86", OS: "ubuntu_24_04",
		Metro: "sv", BillingCycle: "hourly", UserData: "#cloud-config\n", Tags: tags}
}

func TestNormalizeAPIURLAddsTheSlashPacknogoNeeds(t *testing.T) {
	for in, want := range map[string]string{
		"":                                packet.DefaultAPIURL,
		"http://127.0.0.1:4000/metal/v1":  "http://127.0.0.1:4000/metal/v1/",
		"http://127.0.0.1:4000/metal/v1/": "http://127.0.0.1:4000/metal/v1/",
		"http://h/metal/v1//":             "http://h/metal/v1/",
	} {
		if got := packet.NormalizeAPIURL(in); got != want {
			t.Errorf("NormalizeAPIURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDeviceLifecycleAndTagLookupAcrossPages(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	const n = 5 // three pages of two
	for i := range n {
		if _, err := c.CreateDevice(ctx, device(fmt.Sprintf("d%d", i), "cluster:a", fmt.Sprintf("machine:%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	other, err := c.CreateDevice(ctx, device("other", "cluster:b"))
	if err != nil {
		t.Fatal(err)
	}
	found, err := c.FindDevicesByTags(ctx, project, "cluster:a")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != n {
		t.Fatalf("found %d devices of cluster a, want %d", len(found), n)
	}
	one, err := c.FindDevicesByTags(ctx, project, "cluster:a", "machine:3")
	if err != nil || len(one) != 1 || one[0].Hostname != "d3" {
		t.Fatalf("find by two tags = %v, %v", one, err)
	}
	if sim.Counters()["GET /projects/{id}/devices"] < 3 {
		t.Fatalf("expected the lookup to page, counters: %v", sim.Counters())
	}

	sim.Advance(time.Hour)
	got, err := c.GetDevice(ctx, other.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != packet.DeviceStateActive || got.Metro != "sv" || got.Facility == "" || len(got.Addresses) == 0 {
		t.Fatalf("active device = %+v", got)
	}
	if err := c.DeleteDevice(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	sim.Advance(time.Hour)
	if _, err := c.GetDevice(ctx, other.ID); !packet.IsNotFound(err) {
		t.Fatalf("GetDevice after delete: %v, want NotFound", err)
	}
	if err := c.DeleteDevice(ctx, other.ID); err != nil {
		t.Fatalf("deleting a deleted device: %v, want nil", err)
	}
}

func TestHardwareReservationIsReported(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	req := device("hw")
	req.HardwareReservationID = "next-available"
	d, err := c.CreateDevice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	sim.Advance(time.Hour)
	got, err := c.GetDevice(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.HardwareReservationID == "" {
		t.Fatalf("device on a hardware reservation reports none: %+v", got)
	}
	hr, err := c.GetHardwareReservation(ctx, got.HardwareReservationID)
	if err != nil {
		t.Fatal(err)
	}
	if hr.ID != got.HardwareReservationID || hr.Facility != got.Facility || hr.Metro != "sv" || hr.DeviceID != d.ID || hr.Plan != req.Plan {
		t.Fatalf("reservation = %+v, want the device's %s in %s (metro sv)", hr, d.ID, got.Facility)
	}
	if _, err := c.GetHardwareReservation(ctx, "00000000-0000-4000-8000-0000000000ff"); !packet.IsNotFound(err) {
		t.Fatalf("unknown reservation: %v, want NotFound", err)
	}
}

func TestErrorsAreClassifiedByStatusAndKeepTheAPIText(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})

	_, err := c.GetDevice(ctx, "00000000-0000-4000-8000-00000000dead")
	expectKind(t, err, packet.KindNotFound, "Not found")

	bad := device("bad")
	bad.Plan = "no.such.plan"
	_, err = c.CreateDevice(ctx, bad)
	expectKind(t, err, packet.KindInvalid, "")
	var e *packet.Error
	if !errors.As(err, &e) || e.StatusCode != 422 || e.Message() == "" {
		t.Fatalf("422 lost its status or message: %+v", e)
	}

	// A spec error that mentions "not provisionable" is not a shortage of servers.
	wrongOS := device("wrong-os")
	wrongOS.Plan, wrongOS.OS = "g2.large.x86", "flatcar_stable"
	_, err = c.CreateDevice(ctx, wrongOS)
	expectKind(t, err, packet.KindInvalid, "is not provisionable on plan")

	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: project, MaxDevices: 1})
	if _, err := c.CreateDevice(ctx, device("first")); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateDevice(ctx, device("over"))
	expectKind(t, err, packet.KindQuota, "device limit")

	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: project, MaxDevices: 100})
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCapacity, Metro: "sv", Plan: "c3.small.x86", Remaining: 0})
	_, err = c.CreateDevice(ctx, device("full"))
	expectKind(t, err, packet.KindCapacity, "available servers")

	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "GET /projects/{id}/ips", Status: 502, Body: "html", Count: 1})
	_, err = c.FindIPReservationsByTags(ctx, project, "x")
	expectKind(t, err, packet.KindTransient, "")

	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "GET /projects/{id}/ips", Status: 200, Body: "truncated", Count: 1})
	_, err = c.FindIPReservationsByTags(ctx, project, "x")
	expectKind(t, err, packet.KindTransient, "")

	unauthorized, err := packet.New(packet.Options{APIURL: packet.NormalizeAPIURL(apiURL(t, sim)), APIKey: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = unauthorized.ListFacilities(ctx)
	expectKind(t, err, packet.KindUnauthorized, "Invalid")
}

func TestRateLimitWaitsForTheServerAndSpendsNoRequestsMeanwhile(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultRateLimit, Route: "GET /facilities", RetryAfter: 7, Count: 1})
	_, err := c.ListFacilities(ctx)
	expectKind(t, err, packet.KindRateLimited, "")
	if d := packet.RetryAfter(err); d != 7*time.Second {
		t.Fatalf("RetryAfter = %s, want the server's 7s", d)
	}
	before := sim.Counters()["GET /facilities"]
	_, err = c.GetDevice(ctx, "00000000-0000-4000-8000-00000000dead")
	expectKind(t, err, packet.KindRateLimited, "rate limit")
	if d := packet.RetryAfter(err); d <= 0 || d > 7*time.Second {
		t.Fatalf("RetryAfter while blocked = %s", d)
	}
	if after := sim.Counters(); after["GET /facilities"] != before || after["GET /devices/{id}"] != 0 {
		t.Fatalf("a rate-limited client still called the API: %v", after)
	}
}

// A pause of a second, what Packet usually asks, is waited out by the other callers: only the
// call that got the 429 reports it, and nothing is sent before the pause ends.
func TestAShortRateLimitPauseIsWaitedOut(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultRateLimit, Route: "GET /projects/{id}/ips", RetryAfter: 1, Count: 1})
	_, err := c.FindIPReservationsByTags(ctx, project, "x")
	expectKind(t, err, packet.KindRateLimited, "")
	blockedAt := time.Now()
	if _, err := c.GetDevice(ctx, "00000000-0000-4000-8000-00000000dead"); !packet.IsNotFound(err) {
		t.Fatalf("a call during a one-second pause: %v, want Packet's answer after the pause", err)
	}
	if waited := time.Since(blockedAt); waited < 900*time.Millisecond {
		t.Fatalf("the call went out %s into a one-second pause", waited)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultRateLimit, Route: "GET /projects/{id}/ips", RetryAfter: 1, Count: 1})
	_, _ = c.FindIPReservationsByTags(ctx, project, "x")
	if _, err := c.GetDevice(canceled, "00000000-0000-4000-8000-00000000dead"); packet.KindOf(err) != packet.KindRateLimited {
		t.Fatalf("a call whose context ends during the pause: %v, want rate limited", err)
	}
}

func TestElasticIPLifecycle(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	ip, err := c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: project, Metro: "sv", Tags: []string{"eip:a"}, FailOnApprovalRequired: true})
	if err != nil {
		t.Fatal(err)
	}
	if ip.Address == "" || ip.State != packet.IPReservationStateCreated || ip.CIDR != 32 {
		t.Fatalf("reservation = %+v", ip)
	}
	found, err := c.FindIPReservationsByTags(ctx, project, "eip:a")
	if err != nil || len(found) != 1 || found[0].ID != ip.ID {
		t.Fatalf("find by tag = %v, %v", found, err)
	}
	d, err := c.CreateDevice(ctx, device("cp"))
	if err != nil {
		t.Fatal(err)
	}
	sim.Advance(time.Hour)
	if err := c.AssignIP(ctx, d.ID, ip.Address); err != nil {
		t.Fatal(err)
	}
	sim.Advance(time.Minute)
	got, err := c.GetIPReservation(ctx, ip.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.AssignedDeviceIDs) != 1 || got.AssignedDeviceIDs[0] != d.ID {
		t.Fatalf("assignments = %v, want [%s]", got.AssignedDeviceIDs, d.ID)
	}
	if err := c.ReleaseIP(ctx, ip.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseIP(ctx, ip.ID); err != nil {
		t.Fatalf("releasing a released IP: %v", err)
	}
	if left, _ := c.FindIPReservationsByTags(ctx, project, "eip:a"); len(left) != 0 {
		t.Fatalf("released reservation still listed: %v", left)
	}
}

func TestBGPIsEnabledOnceAndSessionsAreIdempotent(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	cfg, err := c.GetBGPConfig(ctx, project)
	if err != nil || cfg != nil {
		t.Fatalf("BGP config before enabling = %+v, %v; want nil", cfg, err)
	}
	if err := c.EnableBGP(ctx, project, packet.BGPConfigRequest{DeploymentType: "local", ASN: 65000, UseCase: "kubernetes-load-balancer"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err = c.GetBGPConfig(ctx, project); err != nil || cfg == nil || cfg.ASN != 65000 {
		t.Fatalf("BGP config = %+v, %v", cfg, err)
	}
	d, err := c.CreateDevice(ctx, device("cp"))
	if err != nil {
		t.Fatal(err)
	}
	sim.Advance(time.Hour)
	for range 2 {
		if err := c.EnsureBGPSession(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(sim.BGPSessions(project)); n != 1 {
		t.Fatalf("%d BGP sessions, want 1", n)
	}
}

func TestCatalogAndSSHKeys(t *testing.T) {
	ctx := context.Background()
	_, c := newSim(t, packetsim.Options{})
	plans, err := c.ListPlans(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	bySlug := map[string]packet.Plan{}
	for _, p := range plans {
		bySlug[p.Slug] = p
	}
	small, gpu := bySlug["c3.small.x86"], bySlug["g2.large.x86"]
	if small.CPUs != 8 || small.MemoryBytes != 32<<30 || small.Architecture != "amd64" ||
		!slices.Contains(small.AvailableInMetros, "sv") || !slices.Contains(small.AvailableInFacilities, "sv15") {
		t.Fatalf("c3.small.x86 = %+v", small)
	}
	if gpu.GPUs != 2 || gpu.CPUs != 48 {
		t.Fatalf("g2.large.x86 = %+v", gpu)
	}
	facilities, err := c.ListFacilities(ctx)
	if err != nil || len(facilities) == 0 || facilities[0].Metro == "" {
		t.Fatalf("facilities = %v, %v", facilities, err)
	}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBxQ2ZbXw6b3c4d5e6f7g8h9i0j1k2l3m4n5o6p7q8r9 test@example.com"
	created, err := c.CreateProjectSSHKey(ctx, project, "test", key)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.ListProjectSSHKeys(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.ID == created.ID && k.Key == key && k.Fingerprint != "" {
			return
		}
	}
	t.Fatalf("created key %+v not listed in %+v", created, keys)
}

func TestMetricsCountRequestsByOperationAndCode(t *testing.T) {
	ctx := context.Background()
	_, c := newSim(t, packetsim.Options{})
	before := testutil.ToFloat64(packet.RequestsTotal().WithLabelValues("GET /devices/{id}", "404"))
	_, _ = c.GetDevice(ctx, "00000000-0000-4000-8000-00000000dead")
	if after := testutil.ToFloat64(packet.RequestsTotal().WithLabelValues("GET /devices/{id}", "404")); after != before+1 {
		t.Fatalf("capp_api_requests_total{GET /devices/{id},404} went from %v to %v", before, after)
	}
}

func expectKind(t *testing.T, err error, kind packet.ErrorKind, text string) {
	t.Helper()
	if packet.KindOf(err) != kind {
		t.Fatalf("error %v has kind %q, want %q", err, packet.KindOf(err), kind)
	}
	if !strings.Contains(err.Error(), text) {
		t.Fatalf("error %q does not carry %q", err, text)
	}
}

func apiURL(t *testing.T, sim *packetsim.Server) string {
	t.Helper()
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return srv.URL + "/metal/v1/"
}

// TestConcurrentCallsShareOneClient runs calls in parallel on one client, as the controllers
// do; under -race it catches shared mutable state (packngo records rate-limit headers in its
// client on every response).
func TestConcurrentCallsShareOneClient(t *testing.T) {
	ctx := context.Background()
	_, c := newSim(t, packetsim.Options{})
	d, err := c.CreateDevice(ctx, device("shared"))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := c.GetDevice(ctx, d.ID)
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestSpotDevicesCarryTheirBidAndTerminationTime(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	req := device("spot")
	req.SpotInstance, req.SpotPriceMax = true, 0.4
	d, err := c.CreateDevice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !d.SpotInstance || !d.TerminationTime.IsZero() {
		t.Fatalf("new spot device = %+v, want spot without a termination time", d)
	}
	sim.Advance(time.Minute)
	if err := sim.SetSpotPrice("sv", req.Plan, 0.5); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetDevice(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.TerminationTime.IsZero() || !got.TerminationTime.After(sim.Now()) {
		t.Fatalf("outbid device's termination time = %v, want after %v", got.TerminationTime, sim.Now())
	}

	req.SpotPriceMax = 0.45
	_, err = c.CreateDevice(ctx, req)
	expectKind(t, err, packet.KindInvalid, "below the current spot market price")
}

// The facility list is read once an hour, however many clusters compute their failure domains.
func TestFacilitiesAreReadOnceAnHour(t *testing.T) {
	ctx := context.Background()
	sim, _ := newSim(t, packetsim.Options{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := packet.New(packet.Options{APIURL: packet.NormalizeAPIURL(apiURL(t, sim)), APIKey: packetsim.DefaultToken,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.ListFacilities(ctx)
	if err != nil || len(first) == 0 {
		t.Fatalf("facilities = %v, %v", first, err)
	}
	first[0].Code = "changed by the caller"
	now = now.Add(59 * time.Minute)
	again, err := c.ListFacilities(ctx)
	if err != nil || again[0].Code == first[0].Code {
		t.Fatalf("facilities within the hour = %v, %v; want the list as read, not the caller's copy", again, err)
	}
	if n := sim.Counters()["GET /facilities"]; n != 1 {
		t.Fatalf("GET /facilities within the hour: %d, want 1", n)
	}
	now = now.Add(2 * time.Minute)
	if _, err := c.ListFacilities(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sim.Counters()["GET /facilities"]; n != 2 {
		t.Fatalf("GET /facilities after the hour: %d, want 2", n)
	}
}
