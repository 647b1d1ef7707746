package device

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// findOrCreate returns the machine's device: the recorded one, one found by its identity tags,
// or a new one. Before a device exists it returns nil and when to look again.
func (s *Service) findOrCreate(ctx context.Context) (*packet.Device, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	if id := s.scope.DeviceID(); id != "" {
		return s.readRecorded(ctx, id)
	}

	if s.staleCopy() {
		// Acting on it could send a second create; the cache catches up within moments.
		return nil, ctrl.Result{RequeueAfter: min(staleCopyRetry, s.opts.PollMin)}, nil
	}
	dev, err := s.findByTags(ctx)
	if err != nil {
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return nil, res, err
	}
	if dev != nil {
		if err := s.record(ctx, dev); err != nil {
			return nil, ctrl.Result{}, err
		}
		record.Eventf(pm, "DeviceAdopted", "Adopted device %s found by the machine's tags", dev.ID)
		return dev, ctrl.Result{}, nil
	}
	if wait := s.createInFlight(); wait > 0 {
		// What Packet answered the create is in the condition of the current copy only.
		if stale, res, err := s.staleRead(ctx); stale {
			return nil, res, err
		}
		apistatus.Answered(pm)
		s.waitForUnansweredCreate(wait)
		return nil, ctrl.Result{RequeueAfter: min(s.opts.PollMin, wait)}, nil
	}
	if c := conditions.Get(pm, infrav1.DeviceReadyCondition); c != nil && c.Reason == infrav1.InvalidRequestReason &&
		c.ObservedGeneration == pm.Generation {
		// Packet refused this very spec; sending it again would be refused again.
		return nil, ctrl.Result{}, nil
	}
	if wait := s.refusedFor(); wait > 0 {
		// Any event (the bootstrap Secret, the Machine, the PacketCluster) reconciles the
		// machine; a full project or an outbid spot market is still asked only at the retry.
		return nil, ctrl.Result{RequeueAfter: wait}, nil
	}
	return s.create(ctx)
}

// readRecorded reads the device recorded in spec.providerID. It is never replaced: gone,
// refused or not the cluster's, it is reported in DeviceReady and left to the user or a
// MachineHealthCheck.
func (s *Service) readRecorded(ctx context.Context, id string) (*packet.Device, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	s.opts.SentCreates.forget(pm.UID)
	// Polls of a provisioning fleet share one list of the project's devices; a device that
	// list does not show is read by ID, so the 404 below is always Packet's own answer.
	dev, err := s.scope.Packet.DeviceStatus(ctx, s.scope.ProjectID(), id)
	if packet.IsNotFound(err) {
		// The device existed (its ID was recorded) and is gone: deleted out of band. A new
		// one would be a different machine to Cluster API; remediation replaces the Machine.
		apistatus.Answered(pm)
		pm.Status.InstanceStatus = ""
		s.opts.Progress.Forget(id)
		if pm.Spec.SpotInstance {
			s.setCondition(metav1.ConditionFalse, infrav1.DeviceReclaimedReason, fmt.Sprintf(
				"Spot device %s no longer exists in Packet: reclaimed when the market price rose above spotPriceMax, or deleted. A MachineHealthCheck replaces the Machine; without one, delete the Machine", id))
			return nil, ctrl.Result{}, nil
		}
		s.setCondition(metav1.ConditionFalse, infrav1.DeviceNotFoundReason,
			fmt.Sprintf("Device %s no longer exists in Packet; delete the Machine to replace it", id))
		return nil, ctrl.Result{}, nil
	}
	if forbiddenDevice(err) {
		// The project's list did not show it and Packet refuses it by ID: what Packet does
		// for some failed devices. The key works (the list was read); the device does not.
		apistatus.Answered(pm)
		s.setCondition(metav1.ConditionFalse, infrav1.DeviceProvisionFailedReason, fmt.Sprintf(
			"Packet refuses to show device %s (%s), as it does for some failed devices. It is kept for inspection; delete the Machine to replace it", id, apiMessage(err)))
		return nil, ctrl.Result{RequeueAfter: apistatus.SlowRetry}, nil
	}
	if err != nil {
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return nil, res, err
	}
	if why := s.notOwned(dev); why != "" {
		apistatus.Answered(pm)
		s.setCondition(metav1.ConditionFalse, infrav1.DeviceNotOwnedReason, fmt.Sprintf(
			"Device %s in spec.providerID is not this cluster's: %s. It is neither followed nor deleted; delete this PacketMachine (its device stays) and let Cluster API create a new one", id, why))
		return nil, ctrl.Result{}, nil
	}
	return dev, ctrl.Result{}, nil
}

// findByTags returns the machine's device if Packet has one, looking through every page of the
// project's devices. Devices being deprovisioned are not the machine's any more. Should there be
// more than one, the oldest is adopted and the user told: the provider never deletes a device it
// did not record, and never adds a third.
//
// Which list is asked depends on whether a create of ours may be unrecorded:
//   - With CreateStartedAnnotation, a create was sent whose device is not recorded (its answer
//     was lost, or the manager died); only a list read now can show that device, and even it may
//     not yet (hence createInFlight).
//   - Without it, and without spec.providerID, this provider never sent a create for the
//     machine: the annotation is written (and confirmed by the API server) before every POST
//     and only removed together with recording the device, or after Packet refused the create.
//     A copy of the PacketMachine from the informer cache may be older than that, so this only
//     holds once staleCopy has ruled that out, which needs SentCreates; without it the lookup
//     asks Packet. Only a device created by someone else can carry the machine's tags: by the
//     previous provider, which kept no annotation, or by a manager that died before recording
//     it. Those devices are minutes old, not seconds, so the project list shared with
//     DeviceStatus, at most a few seconds old, finds them as well as a new request would. This
//     saves a request per machine without giving up adopting them. (A clusterctl move keeps
//     the annotations, the identity among them, and spec.providerID, so the lookup after a
//     move finds the same as before it; only the UID changes.)
func (s *Service) findByTags(ctx context.Context) (*packet.Device, error) {
	lookup := s.scope.Packet.RecentDevicesByTags
	if _, createSent := s.scope.PacketMachine.Annotations[CreateStartedAnnotation]; createSent || s.opts.SentCreates == nil {
		lookup = s.scope.Packet.FindDevicesByTags
	}
	devices, err := lookup(ctx, s.scope.ProjectID(), s.scope.IdentityTags()...)
	if err != nil {
		return nil, err
	}
	live := devices[:0]
	for _, d := range devices {
		if d.State != packet.DeviceStateDeprovisioning {
			live = append(live, d)
		}
	}
	if len(live) == 0 {
		return nil, nil
	}
	sort.SliceStable(live, func(i, j int) bool {
		if !live[i].CreatedAt.Equal(live[j].CreatedAt) {
			return live[i].CreatedAt.Before(live[j].CreatedAt)
		}
		return live[i].ID < live[j].ID
	})
	if len(live) > 1 {
		ids := make([]string, 0, len(live))
		for _, d := range live {
			ids = append(ids, d.ID)
		}
		record.Warnf(s.scope.PacketMachine, "DuplicateDevices",
			"Packet has %d devices tagged for this machine (%v); adopting the oldest, %s. Delete the others by hand", len(live), ids, live[0].ID)
	}
	return &live[0], nil
}

// record writes the device ID to spec.providerID at once: from here on the device is found by
// ID, whatever fails next.
func (s *Service) record(ctx context.Context, dev *packet.Device) error {
	s.scope.SetDeviceID(dev.ID)
	s.removeAnnotation(CreateStartedAnnotation)
	s.removeAnnotation(CreateRetryAnnotation)
	return s.scope.PatchNow(ctx)
}

// staleCopyRetry is how soon a reconcile that started from a stale copy looks again, at most;
// never later than a poll would.
const staleCopyRetry = time.Second

// staleCopy reports whether the PacketMachine is an older copy than this process's own writes:
// it shows neither a device nor a create in flight, yet this process sent a create for it that
// Packet did not refuse. See SentCreates.
func (s *Service) staleCopy() bool {
	pm := s.scope.PacketMachine
	_, annotated := pm.Annotations[CreateStartedAnnotation]
	return !annotated && s.scope.DeviceID() == "" && s.opts.SentCreates.has(pm.UID)
}

// staleRead reports whether the PacketMachine this reconcile started from is not the API
// server's current one (see scope.IsCurrent), and when to look again if so.
func (s *Service) staleRead(ctx context.Context) (bool, ctrl.Result, error) {
	current, err := s.scope.IsCurrent(ctx)
	if err != nil || !current {
		return true, ctrl.Result{RequeueAfter: min(staleCopyRetry, s.opts.PollMin)}, err
	}
	return false, ctrl.Result{}, nil
}

// forbiddenDevice reports a 403 for one device read by ID, not for the project's list (which
// would be the credentials').
func forbiddenDevice(err error) bool {
	var e *packet.Error
	return packet.IsForbidden(err) && errors.As(err, &e) && e.Operation == "GET /devices/{id}"
}

func apiMessage(err error) string {
	var e *packet.Error
	if errors.As(err, &e) {
		return e.Message()
	}
	return err.Error()
}
