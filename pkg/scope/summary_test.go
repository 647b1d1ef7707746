package scope

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

func TestReadyOfAHealthyMachineHasNoMessageAndOfASickOneSaysWhy(t *testing.T) {
	pm := &infrav1.PacketMachine{}
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionTrue,
		Reason: infrav1.DeviceActiveReason, Message: "Device d-1 is active"})
	if err := setReadySummary(pm, MachineConditions); err != nil {
		t.Fatal(err)
	}
	ready := conditions.Get(pm, clusterv1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Message != "" {
		t.Fatalf("a healthy machine's Ready should be True without a message: %+v", ready)
	}
	if got := conditions.Get(pm, infrav1.DeviceReadyCondition).Message; got != "Device d-1 is active" {
		t.Fatalf("the step condition keeps its details, got %q", got)
	}

	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse,
		Reason: infrav1.DeviceInactiveReason, Message: "Device d-1 is inactive"})
	if err := setReadySummary(pm, MachineConditions); err != nil {
		t.Fatal(err)
	}
	ready = conditions.Get(pm, clusterv1.ReadyCondition)
	if ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "Device d-1 is inactive") {
		t.Fatalf("a sick machine's Ready should say why: %+v", ready)
	}
}

// A reconcile that waited out a stale copy sets no step condition; closing it must not fail
// (which would skip the write and retry at once instead of at the requeue asked for).
func TestReadyOfAMachineWithoutStepConditionsIsLeftAlone(t *testing.T) {
	pm := &infrav1.PacketMachine{}
	conditions.Set(pm, metav1.Condition{Type: clusterv1.PausedCondition, Status: metav1.ConditionFalse, Reason: clusterv1.NotPausedReason})
	if err := setReadySummary(pm, MachineConditions); err != nil {
		t.Fatalf("summary of a machine with no step condition: %v", err)
	}
	if conditions.Has(pm, clusterv1.ReadyCondition) {
		t.Fatalf("Ready was set from nothing: %+v", conditions.Get(pm, clusterv1.ReadyCondition))
	}
}
