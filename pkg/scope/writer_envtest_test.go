package scope_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

// startWithMachine starts an API server, stopped when the test ends, holding one PacketMachine.
func startWithMachine(ctx context.Context, t *testing.T) (*helpers.TestEnvironment, *infrav1.PacketMachine) {
	t.Helper()
	env, err := helpers.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "writer-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pm := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "m"},
		Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"}}
	if err := env.Client.Create(ctx, pm); err != nil {
		t.Fatal(err)
	}
	return env, pm
}

// Generations are the API server's: a fake client does not keep them.
func TestConditionsFollowTheGenerationOfTheScopesOwnSpecWrite(t *testing.T) {
	ctx := context.Background()
	env, pm := startWithMachine(ctx, t)
	ms, err := scope.NewMachineScope(scope.MachineScopeParams{Client: env.Client, PacketMachine: pm,
		Cluster: &clusterv1.Cluster{}, Machine: &clusterv1.Machine{}, PacketCluster: &infrav1.PacketCluster{}})
	if err != nil {
		t.Fatal(err)
	}

	conditions.Set(pm, metav1.Condition{Type: infrav1.PacketAPIAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
	ms.SetDeviceID("3fa85f64-5717-4562-b3fc-2c963f66afa6")
	if err := ms.PatchNow(ctx); err != nil {
		t.Fatal(err)
	}
	if pm.Generation != 2 {
		t.Fatalf("after the provider ID write the PacketMachine is at generation %d, want 2", pm.Generation)
	}
	if got := conditions.Get(pm, infrav1.PacketAPIAvailableCondition).ObservedGeneration; got != 2 {
		t.Errorf("a condition set before the scope's own spec write observes generation %d, want 2", got)
	}

	pm.Annotations = map[string]string{"example.com/note": "metadata only"}
	if err := ms.PatchNow(ctx); err != nil {
		t.Fatal(err)
	}
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse, Reason: infrav1.DeviceProvisioningReason})
	if err := ms.Close(ctx); err != nil {
		t.Fatal(err)
	}
	live := &infrav1.PacketMachine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pm), live); err != nil {
		t.Fatal(err)
	}
	for _, c := range live.Status.Conditions {
		if c.ObservedGeneration != live.Generation {
			t.Errorf("condition %s observes generation %d of %d", c.Type, c.ObservedGeneration, live.Generation)
		}
	}
	if live.Spec.ProviderID == "" || live.Annotations["example.com/note"] == "" || !conditions.Has(live, infrav1.DeviceReadyCondition) {
		t.Errorf("what the scope wrote did not reach the API server: %+v", live)
	}
}

// A reconcile that started from a cached copy older than the status this process last wrote
// must not put the older conditions back: a merge patch replaces the whole list.
func TestAStatusWriteFromAnOlderCopyIsRefusedAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	env, pm := startWithMachine(ctx, t)
	stale := pm.DeepCopy()
	scopeOf := func(pm *infrav1.PacketMachine) *scope.MachineScope {
		ms, err := scope.NewMachineScope(scope.MachineScopeParams{Client: env.Client, PacketMachine: pm,
			Cluster: &clusterv1.Cluster{}, Machine: &clusterv1.Machine{}, PacketCluster: &infrav1.PacketCluster{}})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}

	first := scopeOf(pm)
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse,
		Reason: infrav1.PacketAPIErrorReason, Message: "Packet answered the create with HTTP 500"})
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}

	second := scopeOf(stale)
	conditions.Set(stale, metav1.Condition{Type: infrav1.PacketAPIAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
	if err := second.Close(ctx); !apierrors.IsConflict(err) {
		t.Errorf("a status write from the older copy returned %v, want a conflict", err)
	}

	live := &infrav1.PacketMachine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pm), live); err != nil {
		t.Fatal(err)
	}
	if c := conditions.Get(live, infrav1.DeviceReadyCondition); c == nil || c.Reason != infrav1.PacketAPIErrorReason {
		t.Errorf("DeviceReady after the older copy's write: %+v, want the newer PacketAPIError kept", c)
	}
}
