package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
)

// TestChangedByOthersIgnoresTheControllersOwnWrites: the controller's own bookkeeping (its
// finalizer, its annotations, the provider ID, the status) starts no reconcile; what anyone
// else changes does.
func TestChangedByOthersIgnoresTheControllersOwnWrites(t *testing.T) {
	base := func() *infrav1.PacketMachine {
		return &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"},
			Spec: infrav1.PacketMachineSpec{MachineType: "c3.small.x86", OS: "ubuntu_24_04"}}
	}
	cases := []struct {
		name   string
		change func(pm *infrav1.PacketMachine)
		want   bool
	}{
		{"own finalizer added", func(pm *infrav1.PacketMachine) { pm.Finalizers = []string{infrav1.PacketMachineFinalizer} }, false},
		{"own finalizer and create annotations added", func(pm *infrav1.PacketMachine) {
			pm.Finalizers = []string{infrav1.PacketMachineFinalizer}
			pm.Annotations = map[string]string{
				device.CreateStartedAnnotation:    "2026-12-03T00:00:00Z",
				device.ProjectAnnotation:          "p-1",
				device.CredentialsAnnotation:      "team-a-packet",
				infrav1.MachineIdentityAnnotation: "3377dbfd-33c6-4926-b02f-96dcfb8a4fcb",
			}
		}, false},
		{"create retry time recorded", func(pm *infrav1.PacketMachine) {
			pm.Annotations = map[string]string{device.CreateRetryAnnotation: "2026-12-03T00:01:00Z"}
		}, false},
		{"provider ID recorded", func(pm *infrav1.PacketMachine) { pm.Spec.ProviderID = infrav1.ProviderID("d-1") }, false},
		{"status written", func(pm *infrav1.PacketMachine) { pm.Status.InstanceStatus = "active" }, false},
		{"another finalizer added", func(pm *infrav1.PacketMachine) { pm.Finalizers = []string{"example.com/keep"} }, true},
		{"another annotation added", func(pm *infrav1.PacketMachine) { pm.Annotations = map[string]string{"example.com/a": "b"} }, true},
		{"spec changed", func(pm *infrav1.PacketMachine) { pm.Spec.Tags = []string{"t"} }, true},
		{"deletion asked", func(pm *infrav1.PacketMachine) { pm.DeletionTimestamp = &metav1.Time{} }, true},
	}
	pred := changedByOthers()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := pred.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tc.want {
				t.Errorf("changedByOthers = %v, want %v", got, tc.want)
			}
		})
	}
}

// Removals start no reconcile: a PacketMachine goes once its device is gone (its finalizer), and
// Cluster API removes a Machine after its PacketMachine.
func TestRemovalsStartNoReconcile(t *testing.T) {
	pm := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}}
	if changedByOthers().Delete(event.DeleteEvent{Object: pm}) {
		t.Error("a removed PacketMachine was reconciled")
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}}
	if machineSpecChanged().Delete(event.DeleteEvent{Object: m}) {
		t.Error("a removed Machine reconciled its PacketMachine")
	}
	if !changedByOthers().Create(event.CreateEvent{Object: pm}) || !machineSpecChanged().Create(event.CreateEvent{Object: m}) {
		t.Error("creations must still pass")
	}
}
