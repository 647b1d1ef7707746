package scope_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

func TestDropInvalidConditionsRemovesThePreviousProvidersOnceAndKeepsValidOnes(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pm := &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pm"},
		Status: infrav1.PacketMachineStatus{Conditions: []metav1.Condition{
			{Type: "InstanceReady", Status: metav1.ConditionTrue, LastTransitionTime: at}, // as v0.9.0 writes it: no reason
			{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionTrue, Reason: infrav1.DeviceActiveReason, LastTransitionTime: at},
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "not a reason", LastTransitionTime: at},
		}}}
	patches := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(pm).WithStatusSubresource(pm).Build(),
		interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, o...)
		}})
	cur := &infrav1.PacketMachine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pm), cur); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := scope.DropInvalidConditions(context.Background(), c, cur); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 {
		t.Fatalf("%d status patches, want 1: the second call finds nothing to drop", patches)
	}
	stored := &infrav1.PacketMachine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pm), stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Status.Conditions) != 1 || stored.Status.Conditions[0].Type != infrav1.DeviceReadyCondition {
		t.Fatalf("stored conditions %+v, want DeviceReady only", stored.Status.Conditions)
	}
}
