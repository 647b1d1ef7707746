package remediation_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/remediation"
)

func TestMachineHealthyTrustsTheHealthCheckThenAFreshNodeHealthy(t *testing.T) {
	step := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	before, after := metav1.NewTime(step.Add(-time.Minute)), metav1.NewTime(step.Add(time.Minute))
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  bool
	}{
		{"no conditions", nil, false},
		{"health check failed, node healthy", []metav1.Condition{
			{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse},
			{Type: clusterv1.MachineNodeHealthyCondition, Status: metav1.ConditionTrue, LastTransitionTime: after}}, false},
		{"health check passed", []metav1.Condition{
			{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, LastTransitionTime: before}}, true},
		{"no health check, node healthy since before the step", []metav1.Condition{
			{Type: clusterv1.MachineNodeHealthyCondition, Status: metav1.ConditionTrue, LastTransitionTime: before}}, false},
		{"no health check, node healthy again after the step", []metav1.Condition{
			{Type: clusterv1.MachineNodeHealthyCondition, Status: metav1.ConditionTrue, LastTransitionTime: after}}, true},
	} {
		m := &clusterv1.Machine{}
		m.Status.Conditions = tc.conds
		if got := remediation.MachineHealthy(m, step); got != tc.want {
			t.Errorf("%s: MachineHealthy = %v, want %v", tc.name, got, tc.want)
		}
	}
}
