package device

import (
	"context"
	"fmt"
	"slices"
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

// Delete deletes the machine's device and reports done only once Packet no longer has it (a 404,
// or a complete list taken after the delete without it), so that its hardware reservation and
// IP assignments are free when the PacketMachine is gone.
// A device in any state is deleted, failed ones included. Without a recorded device ID the
// device is looked up by its tags first.
func (s *Service) Delete(ctx context.Context) (done bool, _ ctrl.Result, _ error) {
	id := s.scope.DeviceID()
	if id == "" {
		if s.staleCopy() {
			// Removing the finalizer on the strength of this copy could leak the device.
			return false, ctrl.Result{RequeueAfter: min(staleCopyRetry, s.opts.PollMin)}, nil
		}
		found, res, err := s.adoptForDeletion(ctx)
		if !found {
			return err == nil && res.IsZero(), res, err
		}
		id = s.scope.DeviceID()
	}
	if requestedAt, requested := s.deletionRequestedAt(); requested {
		return s.followDelete(ctx, id, requestedAt)
	}
	return s.firstDelete(ctx, id)
}

// firstDelete deletes the device after a first look: it must be this cluster's.
func (s *Service) firstDelete(ctx context.Context, id string) (bool, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	dev, duplicates, err := s.lookBeforeDelete(ctx, id)
	switch {
	case dev == nil && packet.IsNotFound(err):
		s.gone(id)
		return true, ctrl.Result{}, nil
	case err != nil:
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return false, res, err
	}
	if why := s.notOwned(dev); why != "" {
		apistatus.Answered(pm)
		record.Warnf(pm, infrav1.DeviceNotOwnedReason, "Not deleting device %s, which spec.providerID names: %s", id, why)
		return true, ctrl.Result{}, nil
	}
	if err := s.deleteDuplicates(ctx, id, duplicates); err != nil {
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return false, res, err
	}
	s.markDeleting(id)
	return s.askDelete(ctx, id, false)
}

// followDelete looks at a device whose deletion was asked at requestedAt: gone, being
// deprovisioned, or still there, when the delete is asked again.
func (s *Service) followDelete(ctx context.Context, id string, requestedAt time.Time) (bool, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	s.markDeleting(id)
	// The project's list, shared by every machine being deleted, answers instead of a read by ID
	// when it is conclusive. Status times are kept to the second: the list must be later than
	// the whole second the delete was asked in.
	dev, err := s.scope.Packet.DeletionStatus(ctx, s.scope.ProjectID(), id, requestedAt.Truncate(time.Second).Add(time.Second))
	if packet.IsNotFound(err) {
		s.gone(id)
		return true, ctrl.Result{}, nil
	}
	if err != nil && !packet.IsForbidden(err) {
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return false, res, err
	}
	if err != nil {
		// A 403 for the device (a failed one) after its delete was asked: ask again below.
		dev = &packet.Device{ID: id, State: packet.DeviceStateFailed}
	}
	if wait, waiting := s.deprovisioning(dev, requestedAt); waiting {
		return false, ctrl.Result{RequeueAfter: wait}, nil
	}
	// Still there and not being deleted, or stuck: the request did not take. Ask again.
	return s.askDelete(ctx, id, true)
}

// markDeleting says so in DeviceReady, unless the deletion is reported stuck.
func (s *Service) markDeleting(id string) {
	if c := conditions.Get(s.scope.PacketMachine, infrav1.DeviceReadyCondition); c == nil || c.Reason != infrav1.DeviceDeletionStuckReason {
		s.setCondition(metav1.ConditionFalse, clusterv1.DeletingReason, fmt.Sprintf("Deleting device %s", id))
	}
}

// askDelete asks Packet to delete the device (again, after an earlier request did not take) and
// records when.
func (s *Service) askDelete(ctx context.Context, id string, again bool) (bool, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	if err := s.scope.Packet.DeleteDevice(ctx, id); err != nil {
		// A locked device, for example, is refused with the reason in the message.
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return false, res, err
	}
	apistatus.Answered(pm)
	if !again {
		record.Eventf(pm, "DeviceDeleting", "Deleting device %s", id)
	}
	// In the status, which this reconcile writes anyway: an annotation would cost a second write.
	pm.Status.DeviceDeletionRequestedAt = &metav1.Time{Time: s.opts.Now()}
	s.removeAnnotation(DeleteRequestedAnnotation)
	// The first look is aimed at when the device is expected gone (deletion_poll.go).
	return false, ctrl.Result{RequeueAfter: s.firstDeletionLook()}, nil
}

// lookBeforeDelete returns the recorded device and the other devices tagged for this machine
// (duplicates: billed servers nobody would ever delete otherwise, left by a create that Packet
// carried out although its answer was an error, followed by another).
//
// The project's device snapshot, one list shared by every machine being deleted, answers when
// it shows the recorded device with this machine's identity tags. That is positive evidence of
// what the ownership check needs (the device is in the cluster's project and carries the
// cluster's tag), and the other devices it shows with those tags are this machine's duplicates.
// Otherwise — a device missing from the list, or one tagged by the previous provider — the
// device is read by ID and the duplicates are listed live. "Gone" is still only Packet's 404 for
// the device itself: when listing fails after the read, the device comes back with the error.
func (s *Service) lookBeforeDelete(ctx context.Context, id string) (*packet.Device, []packet.Device, error) {
	project, tags := s.scope.ProjectID(), s.scope.IdentityTags()
	tagged, err := s.scope.Packet.RecentDevicesByTags(ctx, project, tags...)
	if i := slices.IndexFunc(tagged, func(d packet.Device) bool { return d.ID == id }); err == nil && i >= 0 {
		dev := tagged[i]
		return &dev, slices.Delete(tagged, i, i+1), nil
	}
	if err != nil {
		// The reads below make the same decision without the snapshot; their errors are recorded.
		ctrl.LoggerFrom(ctx).V(1).Info("Device snapshot unavailable; reading the device by ID", "device", id, "error", err.Error())
	}
	dev, err := s.readForDeletion(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	tagged, err = s.scope.Packet.FindDevicesByTags(ctx, project, tags...)
	return dev, tagged, err
}

// readForDeletion reads the device by ID. Packet answers 403 for some failed devices; the
// project's list still shows them.
func (s *Service) readForDeletion(ctx context.Context, id string) (*packet.Device, error) {
	dev, err := s.scope.Packet.GetDevice(ctx, id)
	if packet.IsForbidden(err) {
		return s.listedDevice(ctx, id)
	}
	return dev, err
}

// deprovisioning reports whether to wait for a device whose deletion was asked at requestedAt
// because Packet is deprovisioning it, and when to look again; not when its delete must be asked
// again: it is not being deprovisioned, or has been for far longer than Packet takes (reported as
// stuck).
func (s *Service) deprovisioning(dev *packet.Device, requestedAt time.Time) (time.Duration, bool) {
	pm := s.scope.PacketMachine
	pm.Status.InstanceStatus = dev.State
	if dev.State != packet.DeviceStateDeprovisioning {
		return 0, false
	}
	age := s.opts.Now().Sub(requestedAt)
	if age < s.opts.DeleteDeadline {
		apistatus.Answered(pm)
		return s.nextDeletionLook(dev, requestedAt), true
	}
	// Far longer than Packet takes: say so (a Warning event with the condition) and ask again.
	s.setCondition(metav1.ConditionFalse, infrav1.DeviceDeletionStuckReason, fmt.Sprintf(
		"Device %s is still %s %s after its deletion was asked; asking Packet again", dev.ID, dev.State, age.Round(time.Second)))
	return 0, false
}

// adoptForDeletion finds the device of a machine that has no device ID recorded. It records the
// oldest in spec.providerID, so deletion then follows it by ID, and deletes any duplicates
// straight away. found is false when there is nothing (yet) to delete.
func (s *Service) adoptForDeletion(ctx context.Context) (found bool, _ ctrl.Result, _ error) {
	pm := s.scope.PacketMachine
	devices, err := s.scope.Packet.FindDevicesByTags(ctx, s.scope.ProjectID(), s.scope.IdentityTags()...)
	if err != nil {
		res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return false, res, err
	}
	if len(devices) == 0 {
		if wait := s.createInFlight(); wait > 0 {
			// A create whose answer was lost may still appear; deleting the PacketMachine now
			// would leak that device.
			s.setCondition(metav1.ConditionFalse, clusterv1.DeletingReason,
				"Waiting for an unanswered device create to show in Packet's lists before deleting")
			return false, ctrl.Result{RequeueAfter: min(s.opts.PollMin, wait)}, nil
		}
		return false, ctrl.Result{}, nil
	}
	oldest := 0
	for i := range devices {
		if devices[i].CreatedAt.Before(devices[oldest].CreatedAt) {
			oldest = i
		}
	}
	for i := range devices {
		if i == oldest || devices[i].State == packet.DeviceStateDeprovisioning {
			continue
		}
		if err := s.scope.Packet.DeleteDevice(ctx, devices[i].ID); err != nil {
			res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
			return false, res, err
		}
		record.Warnf(pm, "DuplicateDevices", "Deleted device %s, a duplicate of %s tagged for this machine", devices[i].ID, devices[oldest].ID)
	}
	if err := s.record(ctx, &devices[oldest]); err != nil {
		return false, ctrl.Result{}, err
	}
	return true, ctrl.Result{}, nil
}

// deleteDuplicates deletes the devices other than keep that carry this machine's identity tags.
// Only devices with the machine's identity tag are touched, so they are this machine's and no
// other's.
func (s *Service) deleteDuplicates(ctx context.Context, keep string, devices []packet.Device) error {
	pm := s.scope.PacketMachine
	for _, d := range devices {
		if d.ID == keep || d.State == packet.DeviceStateDeprovisioning {
			continue
		}
		if err := s.scope.Packet.DeleteDevice(ctx, d.ID); err != nil {
			return err
		}
		record.Warnf(pm, "DuplicateDevices", "Deleted device %s, a duplicate of %s tagged for this machine", d.ID, keep)
	}
	return nil
}

// listedDevice finds a device Packet will not show by ID in the project's list, where it has
// its tags and project; a device the list does not show either is reported as not found.
func (s *Service) listedDevice(ctx context.Context, id string) (*packet.Device, error) {
	devices, err := s.scope.Packet.FindDevicesByTags(ctx, s.scope.ProjectID())
	if err != nil {
		return nil, err
	}
	for i := range devices {
		if devices[i].ID == id {
			if devices[i].ProjectID == "" {
				devices[i].ProjectID = s.scope.ProjectID()
			}
			return &devices[i], nil
		}
	}
	return nil, &packet.Error{Kind: packet.KindNotFound, Operation: "GET /projects/{id}/devices", Messages: []string{"device " + id + " is not in the project's list"}}
}

// gone records that Packet no longer has the device.
func (s *Service) gone(id string) {
	pm := s.scope.PacketMachine
	apistatus.Answered(pm)
	s.opts.Progress.Forget(id)
	s.opts.SentCreates.forget(pm.UID)
	pm.Status.InstanceStatus = ""
	pm.Status.DeviceDeletionRequestedAt = nil
	s.removeAnnotation(DeleteRequestedAnnotation)
	record.Eventf(pm, "DeviceDeleted", "Device %s is deleted", id)
}

// deletionRequestedAt is when the device's deletion was asked, if it was: the status, else the
// annotation of earlier versions.
func (s *Service) deletionRequestedAt() (time.Time, bool) {
	if t := s.scope.PacketMachine.Status.DeviceDeletionRequestedAt; t != nil {
		return t.Time, true
	}
	return s.annotationTime(DeleteRequestedAnnotation)
}
