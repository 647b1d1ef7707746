// Package remediation runs a PacketRemediation's strategy against the Machine's device: reboot,
// reinstall, then hand the Machine back to its MachineSet to be replaced. It owns the
// PacketRemediation's RemediationSucceeded and StepSucceeded conditions.
//
// Cluster API's external remediation contract (MachineHealthCheck, v1.14): the MachineHealthCheck
// creates the PacketRemediation with the Machine's name, owned by the Machine, when the Machine
// fails its health check (HealthCheckSucceeded False), and deletes it once the Machine passes
// again. It never deletes or replaces the Machine itself, and it leaves the Machine's
// OwnerRemediated condition to others. Replace therefore does what the MachineHealthCheck does
// without external remediation: it sets OwnerRemediated False (WaitingForRemediation) on the
// Machine, which the MachineSet reads (collections.IsUnhealthyAndOwnerRemediated) to delete and
// replace it under its own remediation limits.
package remediation

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/userdata"
)

// DefaultPoll is how often a running step looks at the Machine between events.
const DefaultPoll = 30 * time.Second

// Params are what a Service works with.
type Params struct {
	Client      client.Client
	Remediation *infrav1.PacketRemediation
	// Machine is the scope of the remediated Machine: its Cluster, PacketCluster, PacketMachine
	// and the Packet client for the cluster's credentials. Only read (user-data, device ID).
	Machine *scope.MachineScope
	Poll    time.Duration
	Now     func() time.Time
}

// Service runs one reconcile of a PacketRemediation.
type Service struct {
	Params
	rem *infrav1.PacketRemediation
}

// NewService returns a Service; Poll and Now default to DefaultPoll and time.Now.
func NewService(p Params) *Service {
	if p.Poll <= 0 {
		p.Poll = DefaultPoll
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return &Service{Params: p, rem: p.Remediation}
}

// Ended reports whether a remediation is over: nothing more is done for it.
func Ended(rem *infrav1.PacketRemediation) bool {
	switch rem.Status.Phase {
	case infrav1.RemediationPhaseSucceeded, infrav1.RemediationPhaseReplacing, infrav1.RemediationPhaseStopped:
		return true
	}
	return false
}

// Stop ends the remediation without repairing the Machine, saying why.
func Stop(rem *infrav1.PacketRemediation, reason, message string) {
	if rem.Status.Phase != infrav1.RemediationPhaseStopped {
		record.Warnf(rem, reason, "Remediation stopped: %s", message)
	}
	rem.Status.Phase = infrav1.RemediationPhaseStopped
	conditions.Set(rem, metav1.Condition{Type: infrav1.RemediationSucceededCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: message})
}

// CredentialsFailed reports that the cluster's API key cannot be used, so no step can act.
func CredentialsFailed(rem *infrav1.PacketRemediation, err error) (ctrl.Result, error) {
	return apistatus.Record(rem, infrav1.StepSucceededCondition, err, apistatus.SlowRetry)
}

// MachineHealthy reports whether the Machine passes its health checks again: the
// MachineHealthCheck's HealthCheckSucceeded is True, or, on a Machine no MachineHealthCheck
// reports on, its NodeHealthy turned True after since.
func MachineHealthy(m *clusterv1.Machine, since time.Time) bool {
	if c := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition); c != nil {
		return c.Status == metav1.ConditionTrue
	}
	c := conditions.Get(m, clusterv1.MachineNodeHealthyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.Time.Before(since)
}

// Reconcile runs the strategy one move forward.
func (s *Service) Reconcile(ctx context.Context) (ctrl.Result, error) {
	rem, m := s.rem, s.Machine.Machine
	strategy := rem.Spec.StrategyOrDefault()
	if rem.Status.CurrentStep == nil {
		rem.Status.CurrentStep = ptr.To[int32](0)
	}
	idx := int(*rem.Status.CurrentStep)
	started := time.Time{}
	if rem.Status.LastStepStartTime != nil {
		started = rem.Status.LastStepStartTime.Time
	}

	if MachineHealthy(m, started) {
		s.succeed(strategy, idx)
		return ctrl.Result{}, nil
	}
	if idx >= len(strategy) {
		Stop(rem, infrav1.StrategyExhaustedReason, fmt.Sprintf("Every step of the strategy ran and Machine %s is still unhealthy", m.Name))
		return ctrl.Result{}, nil
	}
	step := strategy[idx]
	switch {
	case step.Type == infrav1.RemediationStepReplace:
		return s.replace(ctx)
	case step.Type == infrav1.RemediationStepReinstall && util.IsControlPlaneMachine(m):
		// A reinstall re-runs kubeadm on a wiped disk while the other etcd members still count
		// the old member: the control plane would lose quorum or the member's data.
		s.skip(infrav1.ControlPlaneNotReinstalledReason, fmt.Sprintf(
			"Step %d (Reinstall): Machine %s is a control plane, whose etcd member a reinstall would wipe while the others still count it; "+
				"it is never reinstalled (KubeadmControlPlane's remediation replaces control planes); going on to the next step", idx, m.Name))
		return ctrl.Result{RequeueAfter: time.Millisecond}, nil
	}

	deviceID := s.Machine.DeviceID()
	if deviceID == "" {
		Stop(rem, infrav1.DeviceNotFoundReason, fmt.Sprintf("Machine %s has no device (its PacketMachine has no providerID)", m.Name))
		return ctrl.Result{}, nil
	}
	if rem.Status.DeviceID == "" {
		rem.Status.DeviceID = deviceID
	}
	if rem.Status.DeviceID != deviceID {
		Stop(rem, infrav1.DeviceNotFoundReason, fmt.Sprintf("Machine %s changed device from %s to %s", m.Name, rem.Status.DeviceID, deviceID))
		return ctrl.Result{}, nil
	}

	if rem.Status.StepAttempts > 0 {
		timeout := step.TimeoutOrDefault()
		if left := timeout - s.Now().Sub(started); left > 0 {
			rem.Status.Phase = infrav1.RemediationPhaseRunning
			return ctrl.Result{RequeueAfter: min(left, s.Poll)}, nil
		}
		if rem.Status.StepAttempts >= step.AttemptsOrDefault() {
			s.next(step, idx, timeout)
			return ctrl.Result{RequeueAfter: time.Millisecond}, nil
		}
	}
	return s.act(ctx, step, idx, deviceID)
}

// act runs the step's action on the device once.
func (s *Service) act(ctx context.Context, step infrav1.RemediationStep, idx int, deviceID string) (ctrl.Result, error) {
	rem, pk := s.rem, s.Machine.Packet
	dev, res, err := s.ownDevice(ctx, deviceID)
	if dev == nil {
		return res, err
	}

	var reason, what string
	switch step.Type {
	case infrav1.RemediationStepReboot:
		switch dev.State {
		case packet.DeviceStateActive:
			err = pk.RebootDevice(ctx, deviceID)
			what = "rebooted"
		case packet.DeviceStateInactive:
			err = pk.PowerOnDevice(ctx, deviceID)
			what = "powered on"
		case packet.DeviceStateFailed:
			// Nothing to reboot: the next step (a reinstall) is what a failed device needs.
			s.next(step, idx, 0)
			return ctrl.Result{RequeueAfter: time.Millisecond}, nil
		default:
			return s.waitForDevice(dev)
		}
		if err == nil {
			rem.Status.Reboots++
		}
		reason = infrav1.RebootRequestedReason
	case infrav1.RemediationStepReinstall:
		switch dev.State {
		case packet.DeviceStateActive, packet.DeviceStateInactive, packet.DeviceStateFailed:
		default:
			return s.waitForDevice(dev)
		}
		err = s.reinstall(ctx, deviceID)
		if s.userDataMissing(err) {
			return ctrl.Result{RequeueAfter: s.Poll}, nil
		}
		if err == nil {
			rem.Status.Reinstalls++
		}
		reason, what = infrav1.ReinstallRequestedReason, "reinstalled with the Machine's current bootstrap data"
	}
	if err != nil {
		return apistatus.Record(rem, infrav1.StepSucceededCondition, err, apistatus.SlowRetry)
	}
	return s.attempted(step, idx, deviceID, reason, what), nil
}

// ownDevice reads the device to act on; nil (with the result to return) when it is gone, cannot
// be read, or is not the Machine's. spec.providerID is written by whoever may edit the
// PacketMachine, and the key may see other teams' devices: act only on the cluster's own.
func (s *Service) ownDevice(ctx context.Context, deviceID string) (*packet.Device, ctrl.Result, error) {
	dev, err := s.Machine.Packet.GetDevice(ctx, deviceID)
	if packet.IsNotFound(err) {
		Stop(s.rem, infrav1.DeviceNotFoundReason, fmt.Sprintf("Device %s is gone", deviceID))
		return nil, ctrl.Result{}, nil
	}
	if err != nil {
		res, err := apistatus.Record(s.rem, infrav1.StepSucceededCondition, err, apistatus.SlowRetry)
		return nil, res, err
	}
	if why := s.Machine.DeviceNotOwned(dev); why != "" {
		Stop(s.rem, infrav1.DeviceNotOwnedReason, fmt.Sprintf(
			"Device %s is not Machine %s's to repair: %s", deviceID, s.Machine.Machine.Name, why))
		return nil, ctrl.Result{}, nil
	}
	return dev, ctrl.Result{}, nil
}

// userDataMissing reports, in StepSucceeded, a reinstall that could not be asked for because the
// Machine's bootstrap data is not there (or not usable) yet.
func (s *Service) userDataMissing(err error) bool {
	var ude *userdata.Error
	if !errors.As(err, &ude) {
		return false
	}
	conditions.Set(s.rem, metav1.Condition{Type: infrav1.StepSucceededCondition, Status: metav1.ConditionFalse,
		Reason: ude.Reason, Message: ude.Error()})
	return true
}

// attempted records an attempt of the step that Packet accepted (what was done to the device,
// for the message) and waits for the Machine to be healthy, up to the step's timeout.
func (s *Service) attempted(step infrav1.RemediationStep, idx int, deviceID, reason, what string) ctrl.Result {
	rem := s.rem
	apistatus.Answered(rem)
	rem.Status.StepAttempts++
	rem.Status.LastStepStartTime = &metav1.Time{Time: s.Now()}
	rem.Status.Phase = infrav1.RemediationPhaseRunning
	msg := fmt.Sprintf("Step %d (%s), attempt %d of %d: device %s %s; waiting up to %s for Machine %s to be healthy",
		idx, step.Type, rem.Status.StepAttempts, step.AttemptsOrDefault(), deviceID, what, step.TimeoutOrDefault(), s.Machine.Machine.Name)
	record.Eventf(rem, reason, "%s", msg)
	conditions.Set(rem, metav1.Condition{Type: infrav1.StepSucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	conditions.Set(rem, metav1.Condition{Type: infrav1.RemediationSucceededCondition, Status: metav1.ConditionFalse,
		Reason: infrav1.RemediationInProgressReason, Message: msg})
	return ctrl.Result{RequeueAfter: min(step.TimeoutOrDefault(), s.Poll)}
}

// reinstall gives the device the Machine's current user-data, then reinstalls its operating
// system. The user-data is never logged nor put in a condition.
func (s *Service) reinstall(ctx context.Context, deviceID string) error {
	userData, err := userdata.ForMachine(ctx, s.Machine)
	if err != nil {
		return err
	}
	pk := s.Machine.Packet
	if err := pk.SetDeviceUserData(ctx, deviceID, userData); err != nil {
		return err
	}
	return pk.ReinstallDevice(ctx, deviceID, packet.ReinstallDeviceRequest{
		OS: s.Machine.PacketMachine.Spec.OS, DeprovisionFast: true})
}

// waitForDevice waits for a device in a transitional state (provisioning, reinstalling, powering
// on or off) to settle before acting on it.
func (s *Service) waitForDevice(dev *packet.Device) (ctrl.Result, error) {
	s.rem.Status.Phase = infrav1.RemediationPhaseRunning
	conditions.Set(s.rem, metav1.Condition{Type: infrav1.StepSucceededCondition, Status: metav1.ConditionFalse,
		Reason: infrav1.WaitingForDeviceReason, Message: fmt.Sprintf("Device %s is %s", dev.ID, dev.State)})
	return ctrl.Result{RequeueAfter: s.Poll}, nil
}

// next moves on to the step after idx.
func (s *Service) next(step infrav1.RemediationStep, idx int, timeout time.Duration) {
	rem := s.rem
	msg := fmt.Sprintf("Step %d (%s): Machine %s still unhealthy", idx, step.Type, s.Machine.Machine.Name)
	if rem.Status.StepAttempts > 0 {
		msg += fmt.Sprintf(" %s after attempt %d", timeout, rem.Status.StepAttempts)
	} else {
		msg += fmt.Sprintf(" and its device cannot be %sed", map[infrav1.RemediationStepType]string{
			infrav1.RemediationStepReboot: "reboot", infrav1.RemediationStepReinstall: "reinstall"}[step.Type])
	}
	msg += "; going on to the next step"
	s.skip(infrav1.StepTimedOutReason, msg)
}

// skip leaves the current step for the next one, saying why in a Warning event and StepSucceeded.
func (s *Service) skip(reason, msg string) {
	rem := s.rem
	record.Warnf(rem, reason, "%s", msg)
	conditions.Set(rem, metav1.Condition{Type: infrav1.StepSucceededCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg})
	rem.Status.CurrentStep = ptr.To(*rem.Status.CurrentStep + 1) // Reconcile set it
	rem.Status.StepAttempts = 0
	rem.Status.LastStepStartTime = nil
}

// succeed ends the remediation: the Machine is healthy again.
func (s *Service) succeed(strategy []infrav1.RemediationStep, idx int) {
	rem := s.rem
	msg := fmt.Sprintf("Machine %s is healthy again", s.Machine.Machine.Name)
	if rem.Status.StepAttempts > 0 && idx < len(strategy) {
		msg += fmt.Sprintf(" after step %d (%s)", idx, strategy[idx].Type)
		conditions.Set(rem, metav1.Condition{Type: infrav1.StepSucceededCondition, Status: metav1.ConditionTrue,
			Reason: infrav1.MachineHealthyReason, Message: msg})
	}
	if rem.Status.Phase != infrav1.RemediationPhaseSucceeded {
		record.Eventf(rem, infrav1.MachineHealthyReason, "%s", msg)
	}
	rem.Status.Phase = infrav1.RemediationPhaseSucceeded
	conditions.Set(rem, metav1.Condition{Type: infrav1.RemediationSucceededCondition, Status: metav1.ConditionTrue,
		Reason: infrav1.MachineHealthyReason, Message: msg})
}

// replace hands the Machine to its MachineSet for replacement, as the MachineHealthCheck does
// without external remediation. A control plane is never replaced: its etcd member may be the
// only one, and KubeadmControlPlane has its own remediation for when one should be.
func (s *Service) replace(ctx context.Context) (ctrl.Result, error) {
	rem, m := s.rem, s.Machine.Machine
	if util.IsControlPlaneMachine(m) {
		Stop(rem, infrav1.ControlPlaneNotReplacedReason, fmt.Sprintf(
			"Machine %s is a control plane: remediation only reboots or reinstalls it, never replaces it", m.Name))
		return ctrl.Result{}, nil
	}
	if owner := metav1.GetControllerOf(m); owner == nil || owner.Kind != "MachineSet" {
		Stop(rem, infrav1.NoOwnerToReplaceReason, fmt.Sprintf(
			"Machine %s is not controlled by a MachineSet: nothing would replace it", m.Name))
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(m, s.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	if c := conditions.Get(m, clusterv1.MachineOwnerRemediatedCondition); c == nil || c.Status == metav1.ConditionTrue {
		conditions.Set(m, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse,
			Reason:  clusterv1.MachineOwnerRemediatedWaitingForRemediationReason,
			Message: "Waiting for remediation: PacketRemediation " + rem.Name + " could not repair the device"})
	}
	if !v1beta1conditions.Has(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition) || v1beta1conditions.IsTrue(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition) {
		v1beta1conditions.MarkFalse(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition, clusterv1.WaitingForRemediationV1Beta1Reason,
			clusterv1.ConditionSeverityWarning, "")
	}
	if err := helper.Patch(ctx, m,
		patch.WithOwnedConditions{Conditions: []string{clusterv1.MachineOwnerRemediatedCondition}},
		//nolint:staticcheck // the deprecated v1beta1 form is kept in step, as Cluster API v1.14's own MHC does
		patch.WithOwnedV1Beta1Conditions{Conditions: []clusterv1.ConditionType{clusterv1.MachineOwnerRemediatedV1Beta1Condition}},
	); err != nil {
		return ctrl.Result{}, fmt.Errorf("marking Machine %s for replacement: %w", m.Name, err)
	}
	msg := fmt.Sprintf("Machine %s handed to its MachineSet for replacement (OwnerRemediated False)", m.Name)
	record.Warnf(rem, infrav1.MachineReplacementRequestedReason, "%s", msg)
	rem.Status.Phase = infrav1.RemediationPhaseReplacing
	conditions.Set(rem, metav1.Condition{Type: infrav1.StepSucceededCondition, Status: metav1.ConditionTrue,
		Reason: infrav1.MachineReplacementRequestedReason, Message: msg})
	conditions.Set(rem, metav1.Condition{Type: infrav1.RemediationSucceededCondition, Status: metav1.ConditionFalse,
		Reason: infrav1.MachineReplacementRequestedReason, Message: msg})
	return ctrl.Result{}, nil
}
