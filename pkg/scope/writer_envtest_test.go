package scope_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

// Generations are the API server's: a fake client does not keep them.
func TestConditionsFollowTheGenerationOfTheScopesOwnSpecWrite(t *testing.T) {
	ctx := context.Background()
	env, err := helpers.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "writer-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pm := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "m"},
		Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"}}
	if err := env.Client.Create(ctx, pm); err != nil {
		t.Fatal(err)
	}
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
