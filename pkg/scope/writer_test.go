package scope_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// writes counts the requests that change a PacketMachine: patches of the object, patches and
// updates of its status subresource.
type writes struct{ object, status int }

func scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, clusterv1.AddToScheme, infrav1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func newMachineScope(t *testing.T, pm *infrav1.PacketMachine) (*scope.MachineScope, client.Client, *writes) {
	t.Helper()
	w := &writes{}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(pm).WithStatusSubresource(pm).Build(),
		interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				w.object++
				return c.Patch(ctx, obj, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				w.status++
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				w.status++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		})
	live := &infrav1.PacketMachine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pm), live); err != nil {
		t.Fatal(err)
	}
	ms, err := scope.NewMachineScope(scope.MachineScopeParams{Client: c, PacketMachine: live,
		Cluster: &clusterv1.Cluster{}, Machine: &clusterv1.Machine{}, PacketCluster: &infrav1.PacketCluster{}})
	if err != nil {
		t.Fatal(err)
	}
	return ms, c, w
}

func testMachine() *infrav1.PacketMachine {
	return &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Generation: 1,
		Finalizers: []string{infrav1.PacketMachineFinalizer}}}
}

func TestCloseWritesTheStatusAndItsConditionsInOneRequest(t *testing.T) {
	ms, c, w := newMachineScope(t, testMachine())
	pm := ms.PacketMachine
	pm.Status.InstanceStatus = "provisioning"
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse, Reason: infrav1.DeviceProvisioningReason})
	if err := ms.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *w != (writes{status: 1}) {
		t.Errorf("Close sent %+v, want one status write and nothing else", *w)
	}
	live := &infrav1.PacketMachine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pm), live); err != nil {
		t.Fatal(err)
	}
	if live.Status.InstanceStatus != "provisioning" || !conditions.Has(live, infrav1.DeviceReadyCondition) || !conditions.Has(live, clusterv1.ReadyCondition) {
		t.Errorf("the status written lacks what was set: %+v", live.Status)
	}
}

func TestCloseWritesNothingWhenNothingChanged(t *testing.T) {
	ms, _, w := newMachineScope(t, testMachine())
	conditions.Set(ms.PacketMachine, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse, Reason: infrav1.DeviceProvisioningReason})
	if err := ms.Close(context.Background()); err != nil { // the first Close writes the status
		t.Fatal(err)
	}
	again, _, w2 := newMachineScope(t, ms.PacketMachine)
	if err := again.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *w2 != (writes{}) || *w != (writes{status: 1}) {
		t.Errorf("an unchanged PacketMachine was written: first %+v, then %+v", *w, *w2)
	}
}

// The API server keeps times to the second: a status whose only difference is below that would
// be written and come back unchanged.
func TestCloseWritesNothingWhenTheStatusDiffersOnlyBelowASecond(t *testing.T) {
	pm := testMachine()
	requested := metav1.NewTime(time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC))
	pm.Status.DeviceDeletionRequestedAt = &requested
	ms, _, w := newMachineScope(t, pm)
	ms.PacketMachine.Status.DeviceDeletionRequestedAt = &metav1.Time{Time: requested.Add(400 * time.Millisecond)}
	if err := ms.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *w != (writes{}) {
		t.Errorf("Close sent %+v for a time that differs by less than a second, want nothing", *w)
	}
}

func TestPatchNowWritesMetadataAndSpecOnlyAndCloseTheStatusOnce(t *testing.T) {
	ms, c, w := newMachineScope(t, testMachine())
	pm := ms.PacketMachine
	conditions.Set(pm, metav1.Condition{Type: infrav1.PacketAPIAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
	ms.SetDeviceID("3fa85f64-5717-4562-b3fc-2c963f66afa6")
	if err := ms.PatchNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *w != (writes{object: 1}) {
		t.Fatalf("PatchNow sent %+v, want one patch of the object", *w)
	}
	if !conditions.Has(pm, infrav1.PacketAPIAvailableCondition) {
		t.Fatal("PatchNow dropped a condition set before it")
	}
	if err := ms.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *w != (writes{object: 1, status: 1}) {
		t.Errorf("after Close %+v, want the object once and the status once", *w)
	}
	live := &infrav1.PacketMachine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pm), live); err != nil {
		t.Fatal(err)
	}
	if live.Spec.ProviderID == "" || !conditions.Has(live, infrav1.PacketAPIAvailableCondition) {
		t.Errorf("the provider ID or the condition did not reach the server: %+v %+v", live.Spec, live.Status.Conditions)
	}
}

func TestAMachineLosingItsLastFinalizerGetsNoStatusWrite(t *testing.T) {
	pm := testMachine()
	pm.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	ms, _, w := newMachineScope(t, pm)
	ms.PacketMachine.Status.InstanceStatus = ""
	conditions.Set(ms.PacketMachine, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse, Reason: clusterv1.DeletingReason})
	ms.PacketMachine.Finalizers = nil
	if err := ms.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *w != (writes{object: 1}) {
		t.Errorf("Close sent %+v, want only the patch that removes the finalizer", *w)
	}
}

// BenchmarkCloseOfAnUnchangedMachine is the Close of most reconciles: a provisioned machine
// looked at, nothing changed. `go test ./pkg/scope -run x -bench CloseOfAnUnchanged -benchmem`.
func BenchmarkCloseOfAnUnchangedMachine(b *testing.B) {
	pm := testMachine()
	pm.Spec.ProviderID = "equinixmetal://3fa85f64-5717-4562-b3fc-2c963f66afa6"
	pm.Status.Addresses = []clusterv1.MachineAddress{{Type: clusterv1.MachineExternalIP, Address: "147.75.0.10"},
		{Type: clusterv1.MachineInternalIP, Address: "10.0.0.10"}}
	for _, c := range []string{infrav1.DeviceReadyCondition, infrav1.PacketAPIAvailableCondition, infrav1.ElasticIPAssignedCondition,
		infrav1.BGPSessionReadyCondition, infrav1.NetworkReadyCondition, clusterv1.ReadyCondition} {
		conditions.Set(pm, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Fine", Message: "nothing to say"})
	}
	c := fake.NewClientBuilder().WithObjects(pm).WithStatusSubresource(pm).WithScheme(scheme(b)).Build()
	closeCopy := func(live *infrav1.PacketMachine) {
		ms, err := scope.NewMachineScope(scope.MachineScopeParams{Client: c, PacketMachine: live,
			Cluster: &clusterv1.Cluster{}, Machine: &clusterv1.Machine{}, PacketCluster: &infrav1.PacketCluster{}})
		if err != nil {
			b.Fatal(err)
		}
		if err := ms.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	live := &infrav1.PacketMachine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pm), live); err != nil {
		b.Fatal(err)
	}
	closeCopy(live) // writes the Ready summary once
	for b.Loop() {
		closeCopy(live.DeepCopy())
	}
}
