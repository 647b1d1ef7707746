package device

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Device states beyond the ones the client names.
const (
	stateReinstalling = "reinstalling"
	statePoweringOn   = "powering_on"
	statePoweringOff  = "powering_off"
)

// observe mirrors the device into the PacketMachine's status and decides when to look again.
// Only failed is an end state, and even a failed device stays until the Machine is deleted:
// it is the user's evidence, and Packet may still bill for it.
func (s *Service) observe(dev *packet.Device) (*packet.Device, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	apistatus.Answered(pm)
	pm.Status.InstanceStatus = dev.State
	pm.Status.Interruptible = dev.SpotInstance || pm.Spec.SpotInstance
	if dev.HardwareReservationID != "" {
		pm.Status.HardwareReservationID = dev.HardwareReservationID
	}

	switch dev.State {
	case packet.DeviceStateActive:
		return s.observeActive(dev)

	case packet.DeviceStateQueued, packet.DeviceStateProvisioning, stateReinstalling:
		// Packet's progress percentage is left out: every look would change the message, and so
		// cost a status write, for a number that tells little (polls follow it; see poll.go).
		msg, reason := fmt.Sprintf("Device %s is %s", dev.ID, dev.State), infrav1.DeviceProvisioningReason
		if dev.State == stateReinstalling {
			reason = infrav1.DeviceReinstallingReason
		}
		s.setCondition(metav1.ConditionFalse, reason, msg)
		return nil, ctrl.Result{RequeueAfter: s.provisioningPoll(dev)}, nil

	case packet.DeviceStateFailed:
		s.opts.Progress.Forget(dev.ID)
		msg := fmt.Sprintf("Device %s failed to provision", dev.ID)
		if dev.LastEvent != "" {
			msg += ": " + dev.LastEvent
		}
		s.setCondition(metav1.ConditionFalse, infrav1.DeviceProvisionFailedReason,
			msg+". The device is kept for inspection; delete the Machine to replace it")
		return nil, ctrl.Result{RequeueAfter: apistatus.SlowRetry}, nil

	case packet.DeviceStateInactive:
		s.setCondition(metav1.ConditionFalse, infrav1.DeviceInactiveReason, fmt.Sprintf("Device %s is powered off", dev.ID))
		return nil, ctrl.Result{RequeueAfter: s.opts.PollMax}, nil

	case statePoweringOn, statePoweringOff:
		s.setCondition(metav1.ConditionFalse, infrav1.DevicePoweringReason, fmt.Sprintf("Device %s is %s", dev.ID, dev.State))
		return nil, ctrl.Result{RequeueAfter: s.opts.PollMin}, nil

	case packet.DeviceStateDeprovisioning:
		s.setCondition(metav1.ConditionFalse, infrav1.DeviceDeprovisioningReason,
			fmt.Sprintf("Device %s is being deleted, but not by this provider", dev.ID))
		return nil, ctrl.Result{RequeueAfter: s.opts.PollMax}, nil
	}
	s.setCondition(metav1.ConditionFalse, infrav1.DeviceProvisioningReason, fmt.Sprintf("Device %s is %s", dev.ID, dev.State))
	return nil, ctrl.Result{RequeueAfter: s.opts.PollMax}, nil
}

// observeActive reports an active device: its addresses and facility, and whether Packet is
// going to terminate it. A spot device is looked at again soon, to pass a notice on.
func (s *Service) observeActive(dev *packet.Device) (*packet.Device, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	s.opts.Progress.Forget(dev.ID)
	pm.Status.Addresses = addresses(dev)
	if dev.Facility != "" {
		pm.Status.FailureDomain = dev.Facility
	}
	if !dev.TerminationTime.IsZero() {
		return nil, s.terminationScheduled(dev), nil
	}
	if !conditions.IsTrue(pm, infrav1.DeviceReadyCondition) {
		record.Eventf(pm, "DeviceActive", "Device %s is active in %s", dev.ID, dev.Facility)
	}
	s.setCondition(metav1.ConditionTrue, infrav1.DeviceActiveReason, fmt.Sprintf("Device %s is active", dev.ID))
	if dev.SpotInstance {
		// Packet may reclaim it at any time; look often enough to pass the notice on.
		return dev, ctrl.Result{RequeueAfter: s.opts.SpotWatch}, nil
	}
	return dev, ctrl.Result{}, nil
}

// terminationScheduled reports a device Packet is going to delete (a spot device outbid on the
// market, or a termination time set at create): its Node has until then. The next look is just
// after that time, to see the device gone.
func (s *Service) terminationScheduled(dev *packet.Device) ctrl.Result {
	left := dev.TerminationTime.Sub(s.opts.Now())
	why := "its termination time"
	if dev.SpotInstance {
		why = "the spot market price rose above spotPriceMax"
	}
	s.setCondition(metav1.ConditionFalse, infrav1.DeviceTerminationScheduledReason, fmt.Sprintf(
		"Packet terminates device %s at %s (in %s): %s. A MachineHealthCheck replaces the Machine once its Node is gone",
		dev.ID, dev.TerminationTime.UTC().Format(time.RFC3339), max(0, left).Round(time.Second), why))
	return ctrl.Result{RequeueAfter: clamp(left+s.opts.SnapshotMaxAge, s.opts.PollMin, s.opts.PollMax)}
}

// addresses reports the device's IPs the way Cluster API expects them: public ones (IPv4 and
// IPv6) as ExternalIP, private ones as InternalIP, then the hostname.
func addresses(dev *packet.Device) []clusterv1.MachineAddress {
	out := make([]clusterv1.MachineAddress, 0, len(dev.Addresses)+1)
	for _, a := range dev.Addresses {
		if a.Address == "" {
			continue
		}
		t := clusterv1.MachineInternalIP
		if a.Public {
			t = clusterv1.MachineExternalIP
		}
		out = append(out, clusterv1.MachineAddress{Type: t, Address: a.Address})
	}
	if dev.Hostname != "" {
		out = append(out, clusterv1.MachineAddress{Type: clusterv1.MachineHostName, Address: dev.Hostname})
	}
	return out
}
