package packet_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

func TestRebootAndReinstallKeepTheDevice(t *testing.T) {
	ctx := context.Background()
	sim, c := newSim(t, packetsim.Options{})
	d, err := c.CreateDevice(ctx, device("n1", "cluster:a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RebootDevice(ctx, d.ID); packet.KindOf(err) != packet.KindInvalid {
		t.Fatalf("reboot of a provisioning device = %v, want an invalid-request error", err)
	}
	sim.Advance(30 * time.Minute)
	before, _ := sim.Device(d.ID)
	if before.State != packetsim.StateActive {
		t.Fatalf("device is %s, want active", before.State)
	}
	if err := c.RebootDevice(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDeviceUserData(ctx, d.ID, "#cloud-config\nruncmd: [echo again]\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.ReinstallDevice(ctx, d.ID, packet.ReinstallDeviceRequest{OS: "ubuntu_24_04", DeprovisionFast: true}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetDevice(ctx, d.ID)
	if err != nil || got.State != "reinstalling" {
		t.Fatalf("after reinstall: %+v, %v; want reinstalling", got, err)
	}
	sim.Advance(30 * time.Minute)
	after, _ := sim.Device(d.ID)
	if after.State != packetsim.StateActive || after.UserData != "#cloud-config\nruncmd: [echo again]\n" {
		t.Fatalf("after the reinstall: state %s, user-data %q", after.State, after.UserData)
	}
	if len(after.IPAssignmentIDs) == 0 || len(after.IPAssignmentIDs) != len(before.IPAssignmentIDs) || after.IPAssignmentIDs[0] != before.IPAssignmentIDs[0] {
		t.Fatalf("reinstall changed the addresses: %v -> %v", before.IPAssignmentIDs, after.IPAssignmentIDs)
	}
	if n := sim.Counters()["POST /devices/{id}/actions"]; n != 3 {
		t.Fatalf("%d action calls, want 3", n)
	}
	if err := c.RebootDevice(ctx, "6b5c0c5a-0000-4000-8000-000000000000"); !packet.IsNotFound(err) {
		t.Fatalf("reboot of a missing device = %v, want not found", err)
	}
}
