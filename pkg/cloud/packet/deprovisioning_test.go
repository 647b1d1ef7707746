package packet_test

import (
	"context"
	"testing"
	"time"
)

// How long Packet took to deprovision is measured from this client's deletes and the first
// one-page list, taken after the delete, that no longer shows the device: at most the time from
// the delete to that list, whoever asked for the list.
func TestDeprovisioningTimeIsMeasuredByTheFirstListWithoutTheDevice(t *testing.T) {
	ctx := context.Background()
	maxAge := 100 * time.Millisecond
	sim, c := newSnapshotSimPaged(t, maxAge, 10)
	devices := createDevices(t, c, 3)
	sim.Advance(time.Hour) // all active
	if _, err := c.DeviceStatus(ctx, project, devices[1].ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.DeleteDevice(ctx, devices[0].ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * maxAge)
	if _, err := c.DeviceStatus(ctx, project, devices[1].ID); err != nil {
		t.Fatal(err)
	}
	if d := c.DeprovisioningTime(project); d != 0 {
		t.Fatalf("DeprovisioningTime while the list still shows the device = %s, want 0", d)
	}
	sim.Advance(time.Hour) // deprovisioned
	time.Sleep(2 * maxAge)
	if _, err := c.DeviceStatus(ctx, project, devices[1].ID); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if d := c.DeprovisioningTime(project); d < 4*maxAge || d > elapsed {
		t.Fatalf("DeprovisioningTime = %s, want between %s (the two waits) and %s (since the delete)", d, 4*maxAge, elapsed)
	}
	if d := c.DeprovisioningTime("another-project"); d != 0 {
		t.Fatalf("DeprovisioningTime of a project nothing was deleted in = %s, want 0", d)
	}
}

// A list of several pages is offsets that shift as devices go: a device missing from it measures
// nothing.
func TestDeprovisioningTimeIsNotMeasuredFromAListOfSeveralPages(t *testing.T) {
	ctx := context.Background()
	maxAge := 100 * time.Millisecond
	sim, c := newSnapshotSimPaged(t, maxAge, 2)
	devices := createDevices(t, c, 3)
	sim.Advance(time.Hour)
	if _, err := c.DeviceStatus(ctx, project, devices[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteDevice(ctx, devices[0].ID); err != nil {
		t.Fatal(err)
	}
	sim.Advance(time.Hour)
	time.Sleep(2 * maxAge)
	if _, err := c.DeviceStatus(ctx, project, devices[1].ID); err != nil {
		t.Fatal(err)
	}
	if d := c.DeprovisioningTime(project); d != 0 {
		t.Fatalf("DeprovisioningTime from a list of two pages = %s, want 0", d)
	}
}
