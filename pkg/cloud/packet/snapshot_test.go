package packet_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const (
	listRoute = "GET /projects/{id}/devices"
	getRoute  = "GET /devices/{id}"
)

// newSnapshotSim is newSim with a device snapshot that lives maxAge, listed two per page.
func newSnapshotSim(t *testing.T, maxAge time.Duration) (*packetsim.Server, packet.Client) {
	t.Helper()
	return newSnapshotSimPaged(t, maxAge, 2)
}

// newSnapshotSimPaged is newSnapshotSim listing pageSize devices per page.
func newSnapshotSimPaged(t *testing.T, maxAge time.Duration, pageSize int) (*packetsim.Server, packet.Client) {
	t.Helper()
	sim, err := packetsim.New(packetsim.Options{Clock: packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1", APIKey: packetsim.DefaultToken, QPS: 1000, Burst: 1000,
		PageSize: 2, DeviceSnapshotMaxAge: maxAge, DeviceSnapshotPageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return sim, c
}

func createDevices(t *testing.T, c packet.Client, n int) []*packet.Device {
	t.Helper()
	var out []*packet.Device
	for i := range n {
		d, err := c.CreateDevice(context.Background(), device(fmt.Sprintf("s%d", i), "cluster:a", fmt.Sprintf("machine:%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// calls returns how many requests of each route the simulator received since before.
func calls(sim *packetsim.Server, before map[string]int) map[string]int {
	out := map[string]int{}
	for route, n := range sim.Counters() {
		if d := n - before[route]; d > 0 {
			out[route] = d
		}
	}
	return out
}

// sameView compares two answers about a device, but for when each was given and the last
// provisioning event, which lists leave out.
func sameView(a, b *packet.Device) bool {
	x, y := *a, *b
	x.ObservedAt, y.ObservedAt = time.Time{}, time.Time{}
	x.LastEvent, y.LastEvent = "", ""
	return reflect.DeepEqual(x, y)
}

func TestDeviceStatusAnswersManyPollsWithOneListAndMatchesGetDevice(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, time.Hour)
	devices := createDevices(t, c, 5)
	sim.Advance(time.Hour) // all active, with addresses

	before := sim.Counters()
	for range 3 {
		for _, d := range devices {
			got, err := c.DeviceStatus(ctx, project, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.GetDevice(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !sameView(got, want) {
				t.Fatalf("DeviceStatus = %+v\nGetDevice    = %+v", got, want)
			}
		}
	}
	// Three pages of two, once; the GETs are the test's own comparisons.
	if got, want := calls(sim, before), map[string]int{listRoute: 3, getRoute: 15}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

func TestSnapshotsAreOlderForSmallBudgets(t *testing.T) {
	for _, tc := range []struct {
		qps  float64
		want time.Duration
	}{
		{0, packet.DefaultSnapshotMaxAge},
		{20, packet.DefaultSnapshotMaxAge},
		{10, packet.DefaultSnapshotMaxAge},
		{5, packet.DefaultSnapshotMaxAge},
		{2, 5 * time.Second},
		{1, 10 * time.Second},
	} {
		if got := packet.SnapshotMaxAge(tc.qps); got != tc.want {
			t.Errorf("SnapshotMaxAge(%g) = %s, want %s", tc.qps, got, tc.want)
		}
	}
}

func TestDeviceStatusListsAgainOnceTheSnapshotIsOld(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, 300*time.Millisecond)
	d := createDevices(t, c, 1)[0]
	first, err := c.DeviceStatus(ctx, project, d.ID)
	if err != nil || first.State == packet.DeviceStateActive {
		t.Fatalf("new device: %+v, %v", first, err)
	}
	sim.Advance(time.Hour)
	if got, _ := c.DeviceStatus(ctx, project, d.ID); got.State != first.State {
		t.Fatalf("a fresh snapshot answered %q, want the listed %q", got.State, first.State)
	}
	time.Sleep(400 * time.Millisecond)
	before := sim.Counters()
	got, err := c.DeviceStatus(ctx, project, d.ID)
	if err != nil || got.State != packet.DeviceStateActive {
		t.Fatalf("after the snapshot aged: %+v, %v; want active", got, err)
	}
	if got, want := calls(sim, before), map[string]int{listRoute: 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

func TestDeviceStatusReadsByIDWhatTheListDoesNotShow(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, time.Hour)
	createDevices(t, c, 1)
	if _, err := c.DeviceStatus(ctx, project, createDevices(t, c, 1)[0].ID); err != nil { // takes the snapshot
		t.Fatal(err)
	}

	// A device the list hides (list_lag) is still found, by ID, each time. Another client
	// creates it: this one would know its own creates.
	other, err := packet.New(packet.Options{APIURL: apiURL(t, sim), APIKey: packetsim.DefaultToken, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultListLag, Count: 1, Duration: time.Hour})
	lagging, err := other.CreateDevice(ctx, device("lagging", "cluster:a"))
	if err != nil {
		t.Fatal(err)
	}
	before := sim.Counters()
	for range 2 {
		got, err := c.DeviceStatus(ctx, project, lagging.ID)
		if err != nil || got.ID != lagging.ID {
			t.Fatalf("lagging device: %+v, %v", got, err)
		}
	}
	if got, want := calls(sim, before), map[string]int{getRoute: 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}

	// A device that never existed is Packet's 404, not a guess from the list.
	if _, err := c.DeviceStatus(ctx, project, "00000000-0000-4000-8000-00000000dead"); !packet.IsNotFound(err) {
		t.Fatalf("unknown device: %v, want NotFound", err)
	}
}

// TestDevicesThisClientCreatedAnswerFromTheSnapshot: a machine reconciled again right after its
// create finds the device in the snapshot taken before it, as the create answered, without a
// read by ID; tag lookups see it too, and the next list answers for it instead.
func TestDevicesThisClientCreatedAnswerFromTheSnapshot(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, 300*time.Millisecond)
	if _, err := c.RecentDevicesByTags(ctx, project, "cluster:a"); err != nil { // the lookup before a create
		t.Fatal(err)
	}
	created := createDevices(t, c, 1)[0]

	before := sim.Counters()
	got, err := c.DeviceStatus(ctx, project, created.ID)
	if err != nil || got.ID != created.ID || got.State != created.State {
		t.Fatalf("DeviceStatus of a device just created = %+v, %v; want %+v", got, err, created)
	}
	found, err := c.RecentDevicesByTags(ctx, project, "cluster:a", "machine:0")
	if err != nil || len(found) != 1 || found[0].ID != created.ID {
		t.Fatalf("RecentDevicesByTags = %+v, %v; want the device just created", found, err)
	}
	if got := calls(sim, before); len(got) != 0 {
		t.Fatalf("requests = %v, want none: the snapshot is fresh and knows the create", got)
	}

	sim.Advance(time.Hour)
	time.Sleep(400 * time.Millisecond)
	before = sim.Counters()
	for range 2 {
		got, err = c.DeviceStatus(ctx, project, created.ID)
		if err != nil || got.State != packet.DeviceStateActive {
			t.Fatalf("after the snapshot aged: %+v, %v; want the listed device, active", got, err)
		}
	}
	if got, want := calls(sim, before), map[string]int{listRoute: 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

func TestDeviceStatusFallsBackToGetWhenTheListFails(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, time.Hour)
	d := createDevices(t, c, 1)[0]
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: listRoute, Status: 500, Count: 1})
	got, err := c.DeviceStatus(ctx, project, d.ID)
	if err != nil || got.ID != d.ID {
		t.Fatalf("DeviceStatus while the list fails: %+v, %v", got, err)
	}
}

func TestConcurrentPollsShareOneRefresh(t *testing.T) {
	sim, c := newSnapshotSim(t, time.Hour)
	devices := createDevices(t, c, 4)
	before := sim.Counters()
	pollAtOnce(t, c, devices, 40)
	if got, want := calls(sim, before), map[string]int{listRoute: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v (one list: two full pages and the empty one that ends it)", got, want)
	}
}

func TestPollsWaitingForASlowListShareIt(t *testing.T) {
	sim, c := newSnapshotSim(t, 50*time.Millisecond)
	devices := createDevices(t, c, 4)
	// The list takes longer than the snapshot may be old: those who waited for it must still
	// take its answer rather than list again in turn.
	sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultLatency, Route: listRoute, Count: 1, Latency: 300 * time.Millisecond})
	before := sim.Counters()
	pollAtOnce(t, c, devices, 10)
	if got, want := calls(sim, before), map[string]int{listRoute: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v (one list, shared by every poll that waited for it)", got, want)
	}
}

// pollAtOnce asks DeviceStatus n times at once, going round the devices.
func pollAtOnce(t *testing.T, c packet.Client, devices []*packet.Device, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := c.DeviceStatus(context.Background(), project, devices[i%len(devices)].ID); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestRecentDevicesByTagsUsesTheSnapshot(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, time.Hour)
	devices := createDevices(t, c, 3)
	if _, err := c.DeviceStatus(ctx, project, devices[0].ID); err != nil {
		t.Fatal(err)
	}
	before := sim.Counters()
	found, err := c.RecentDevicesByTags(ctx, project, "cluster:a", "machine:2")
	if err != nil || len(found) != 1 || found[0].ID != devices[2].ID {
		t.Fatalf("RecentDevicesByTags = %+v, %v", found, err)
	}
	if none, err := c.RecentDevicesByTags(ctx, project, "cluster:a", "machine:9"); err != nil || len(none) != 0 {
		t.Fatalf("RecentDevicesByTags for no device = %+v, %v", none, err)
	}
	if got := calls(sim, before); len(got) != 0 {
		t.Fatalf("requests = %v, want none: the snapshot is fresh", got)
	}
}

func TestDeviceStatusWithoutSnapshotsReadsByID(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, -1)
	d := createDevices(t, c, 1)[0]
	before := sim.Counters()
	for range 3 {
		if _, err := c.DeviceStatus(ctx, project, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := calls(sim, before), map[string]int{getRoute: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

// A device whose deletion was accepted is followed from the project's list: deprovisioning while
// it shows so, gone once a one-page list taken after the delete does not show it — no read by ID.
func TestDeletionStatusAnswersFromAOnePageListTakenAfterTheDelete(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSimPaged(t, 300*time.Millisecond, 10)
	devices := createDevices(t, c, 3)
	sim.Advance(time.Hour) // all active
	if err := c.DeleteDevice(ctx, devices[0].ID); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()

	before := sim.Counters()
	got, err := c.DeletionStatus(ctx, project, devices[0].ID, asked)
	if err != nil || got.State != packet.DeviceStateDeprovisioning {
		t.Fatalf("DeletionStatus while deprovisioning = %+v, %v; want the device, deprovisioning", got, err)
	}
	sim.Advance(time.Hour) // deprovisioned
	time.Sleep(400 * time.Millisecond)
	if _, err := c.DeletionStatus(ctx, project, devices[0].ID, asked); !packet.IsNotFound(err) {
		t.Fatalf("DeletionStatus of a deleted device = %v, want not found", err)
	}
	if got, want := calls(sim, before), map[string]int{listRoute: 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v: two lists, no read by ID", got, want)
	}
}

// Only a list that is one answer and came after the delete says "gone"; a device listed in
// another state than deprovisioning is read by ID.
func TestDeletionStatusReadsByIDWhenTheListIsNotConclusive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pageSize int
		// askedLater moves the delete after the list.
		askedLater time.Duration
		deleted    bool
	}{
		{name: "several pages", pageSize: 2, deleted: true},
		{name: "list older than the delete", pageSize: 10, askedLater: time.Hour, deleted: true},
		{name: "listed active", pageSize: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sim, c := newSnapshotSimPaged(t, time.Hour, tc.pageSize)
			devices := createDevices(t, c, 3)
			sim.Advance(time.Hour)
			if tc.deleted {
				if err := c.DeleteDevice(ctx, devices[0].ID); err != nil {
					t.Fatal(err)
				}
				sim.Advance(time.Hour)
			}
			before := sim.Counters()
			got, err := c.DeletionStatus(ctx, project, devices[0].ID, time.Now().Add(tc.askedLater))
			if tc.deleted && !packet.IsNotFound(err) || !tc.deleted && (err != nil || got.State != packet.DeviceStateActive) {
				t.Fatalf("DeletionStatus = %+v, %v", got, err)
			}
			if n := calls(sim, before)[getRoute]; n != 1 {
				t.Fatalf("reads by ID = %d, want 1", n)
			}
		})
	}
}

// The snapshot decodes only the fields a Device has, from Packet's own JSON: every one of them
// must come out as a read by ID shows it, for a device on a hardware reservation and a spot
// device as much as for a plain one.
func TestSnapshotDevicesMatchReadsByIDFieldForField(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSimPaged(t, time.Hour, 10)
	reserved, spot, plain := device("hw", "cluster:a"), device("spot", "cluster:a"), device("plain", "cluster:a", "role:worker")
	reserved.HardwareReservationID = "next-available"
	spot.SpotInstance, spot.SpotPriceMax = true, 5
	var ids []string
	for _, req := range []packet.CreateDeviceRequest{reserved, spot, plain} {
		d, err := c.CreateDevice(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	sim.Advance(time.Hour)
	for _, id := range ids {
		want, err := c.GetDevice(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.DeviceStatus(ctx, project, id)
		if err != nil {
			t.Fatal(err)
		}
		if !sameView(got, want) {
			t.Fatalf("from the list: %+v\nby ID:         %+v", got, want)
		}
		if got.ProjectID != project || got.Facility == "" || got.Metro == "" || len(got.Addresses) == 0 ||
			got.CreatedAt.IsZero() || got.ObservedAt.IsZero() || len(got.Tags) == 0 {
			t.Fatalf("fields missing from %+v", got)
		}
	}
	if got, _ := c.DeviceStatus(ctx, project, ids[0]); got.HardwareReservationID == "" {
		t.Fatalf("the reserved device lost its reservation: %+v", got)
	}
	if got, _ := c.DeviceStatus(ctx, project, ids[1]); !got.SpotInstance {
		t.Fatalf("the spot device is not spot: %+v", got)
	}
}

// A provisioning device's first percentage in a list is carried by the lists after it, so its
// rate is known at its first look when other looks listed the project before.
func TestListsCarryTheFirstPercentageOfAProvisioningDevice(t *testing.T) {
	ctx := context.Background()
	sim, c := newSnapshotSim(t, time.Nanosecond) // every look lists
	d := createDevices(t, c, 1)[0]
	look := func(advance time.Duration) *packet.Device {
		t.Helper()
		sim.Advance(advance)
		got, err := c.DeviceStatus(ctx, project, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := look(4 * time.Second) // fast timing: 2 s queued, then 10 s provisioning
	if first.State != packet.DeviceStateProvisioning || first.ProvisioningPercentage <= 0 || first.FirstReading != nil {
		t.Fatalf("first list: %s at %v%%, first reading %+v; want provisioning, a percentage, none", first.State, first.ProvisioningPercentage, first.FirstReading)
	}
	want := packet.Reading{At: first.ObservedAt, Percentage: first.ProvisioningPercentage}
	for i := range 2 {
		got := look(3 * time.Second)
		if got.FirstReading == nil || *got.FirstReading != want || got.ProvisioningPercentage <= want.Percentage {
			t.Fatalf("list %d: %v%%, first reading %+v; want more than, and the first reading, %+v", i+2, got.ProvisioningPercentage, got.FirstReading, want)
		}
	}
	if active := look(10 * time.Second); active.State != packet.DeviceStateActive || active.FirstReading != nil {
		t.Fatalf("once active: %s, first reading %+v; want active, none", active.State, active.FirstReading)
	}
}

// Lists leave out provisioning events; a failed device is asked for by a list filtered to it,
// for the event that says why it failed, even when Packet answers 403 to reading it by ID.
func TestDeviceStatusAsksForTheLastEventOfAFailedDevice(t *testing.T) {
	for _, forbidden := range []bool{false, true} {
		t.Run(fmt.Sprintf("403 on read by ID: %t", forbidden), func(t *testing.T) {
			ctx := context.Background()
			sim, c := newSnapshotSimPaged(t, time.Hour, 10)
			devices := createDevices(t, c, 2)
			sim.Advance(time.Hour)
			sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultDeviceFail, ResourceID: devices[0].ID, Forbidden403: forbidden})
			if _, err := c.GetDevice(ctx, devices[0].ID); packet.IsForbidden(err) != forbidden {
				t.Fatalf("read by ID: %v, want 403: %t", err, forbidden)
			}
			before := sim.Counters()
			failed, err := c.DeviceStatus(ctx, project, devices[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			active, err := c.DeviceStatus(ctx, project, devices[1].ID)
			if err != nil {
				t.Fatal(err)
			}
			if failed.State != packet.DeviceStateFailed || failed.LastEvent != "Provisioning failed" {
				t.Errorf("failed device: %s, last event %q; want failed, with its event", failed.State, failed.LastEvent)
			}
			if active.State != packet.DeviceStateActive || active.LastEvent != "" {
				t.Errorf("other device: %s, last event %q; want active, as the list shows it (no events)", active.State, active.LastEvent)
			}
			if got := calls(sim, before); got[listRoute] != 2 || got[getRoute] != 0 {
				t.Errorf("calls = %v, want two lists (the project's, one page; one filtered to the failed device)", got)
			}
		})
	}
}
