package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// setDeviceWaiting says why no device is being created yet.
func setDeviceWaiting(pm *infrav1.PacketMachine, reason, message string) {
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: message})
}
