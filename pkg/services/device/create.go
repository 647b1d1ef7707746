package device

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// createInFlight returns how much longer an unanswered create may take to show in lists.
func (s *Service) createInFlight() time.Duration {
	started, ok := s.annotationTime(CreateStartedAnnotation)
	if !ok {
		return 0
	}
	return max(0, started.Add(s.opts.CreateConfirmWindow).Sub(s.opts.Now()))
}

// create sends the create request, trying each hardware reservation in turn.
func (s *Service) create(ctx context.Context) (*packet.Device, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	// Everything that led here was read from the cache. A copy older than this process's own
	// writes (the device recorded, a create in flight, Packet's refusal of this spec) would
	// send a second create; staleCopy catches that only for creates Packet accepted.
	if stale, res, err := s.staleRead(ctx); stale {
		return nil, res, err
	}
	req, res, err := s.buildRequest(ctx)
	if req == nil {
		return nil, res, err
	}
	candidates, res, err := s.candidates(ctx, req)
	if candidates == nil {
		return nil, res, err
	}

	// Written before the request: if its answer is lost, or the manager dies before reading it,
	// the next reconcile knows a device may exist that lists do not show yet.
	s.setAnnotationTime(CreateStartedAnnotation, s.opts.Now())
	s.recordCluster()
	if err := s.scope.PatchNow(ctx); err != nil {
		return nil, ctrl.Result{}, err
	}
	s.opts.SentCreates.add(pm.UID)

	out, res, err := s.send(ctx, req, candidates)
	if out.refusal == nil {
		return out.dev, res, err
	}
	return s.refused(req, out.refusal)
}

// sent is what came of sending create requests: the device, or Packet's last refusal when it
// refused every request (so no device was created), or neither when Packet may have created one
// anyway.
type sent struct {
	dev     *packet.Device
	refusal error
}

// candidates returns the hardware reservations to try in turn ("" for none, or "next-available"),
// or nil and when to try again after reporting why none can be tried.
func (s *Service) candidates(ctx context.Context, req *packet.CreateDeviceRequest) ([]string, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	reservations, nextAvailable, err := infrav1.ParseHardwareReservationIDs(pm.Spec.HardwareReservationID)
	if err != nil {
		s.setCondition(metav1.ConditionFalse, infrav1.InvalidRequestReason, "spec.hardwareReservationID: "+err.Error())
		return nil, ctrl.Result{}, nil //nolint:nilerr // reported in DeviceReady; only a spec change can help.
	}
	if len(reservations) > 0 {
		var res ctrl.Result
		if reservations, res, err = s.reservationsInLocation(ctx, req, reservations); reservations == nil {
			return nil, res, err
		}
	}
	candidates := reservations
	switch {
	case nextAvailable:
		candidates = []string{infrav1.NextAvailableHardwareReservation}
	case len(candidates) == 0:
		candidates = []string{""}
	}
	return candidates, ctrl.Result{}, nil
}

// send sends the create request with each candidate reservation until Packet accepts one; when
// Packet may have created a device anyway, it returns when to look again.
func (s *Service) send(ctx context.Context, req *packet.CreateDeviceRequest, candidates []string) (sent, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	var lastErr error
	for _, hr := range candidates {
		req.HardwareReservationID = hr
		dev, err := s.scope.Packet.CreateDevice(ctx, *req)
		if err == nil {
			if err := s.record(ctx, dev); err != nil {
				// The device exists; the next reconcile adopts it by its tags.
				return sent{}, ctrl.Result{}, err
			}
			record.Eventf(pm, "DeviceCreated", "Created device %s (%s, %s)", dev.ID, req.Plan, locationOf(req))
			return sent{dev: dev}, ctrl.Result{}, nil
		}
		lastErr = err
		kind := packet.KindOf(err)
		if !packet.Refused(err) {
			// A timeout, a 5xx, a cut-off answer, a cancelled context: Packet may have created
			// the device anyway. Never send a second create from here; the next reconcile looks
			// the device up, and waits for slow lists.
			res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
			return sent{}, res, err
		}
		if hr == "" || (kind != packet.KindCapacity && kind != packet.KindNotFound) {
			break
		}
		// This reservation is taken, still being wiped, or not ours: try the next one.
	}
	return sent{refusal: lastErr}, ctrl.Result{}, nil
}

// refused reports a create Packet refused, and holds the next one back as long as the refusal
// calls for.
func (s *Service) refused(req *packet.CreateDeviceRequest, lastErr error) (*packet.Device, ctrl.Result, error) {
	pm := s.scope.PacketMachine
	// Packet refused every request, so no device was created and there is nothing to wait for.
	s.removeAnnotation(CreateStartedAnnotation)
	s.opts.SentCreates.forget(pm.UID)
	if kind := packet.KindOf(lastErr); req.HardwareReservationID != "" && (kind == packet.KindCapacity || kind == packet.KindNotFound) {
		apistatus.Answered(pm)
		s.setCondition(metav1.ConditionFalse, infrav1.HardwareReservationUnavailableReason,
			fmt.Sprintf("No hardware reservation of %q can take the device now: %v", pm.Spec.HardwareReservationID, apiMessage(lastErr)))
		// An error, so the workqueue backs off: reservations free up in minutes, not seconds.
		return nil, ctrl.Result{}, lastErr
	}
	if pm.Spec.SpotInstance && packet.KindOf(lastErr) == packet.KindInvalid {
		// Most likely a bid below the market: the market moves, so try again, slowly.
		apistatus.Answered(pm)
		s.setCondition(metav1.ConditionFalse, infrav1.SpotBidRefusedReason, fmt.Sprintf(
			"Packet refused the spot device (bid %g an hour): %s. Trying again in %s; raise spotPriceMax in the machine template for a better chance",
			req.SpotPriceMax, apiMessage(lastErr), apistatus.SlowRetry))
		s.refuseUntil(apistatus.SlowRetry)
		return nil, ctrl.Result{RequeueAfter: apistatus.SlowRetry}, nil
	}
	res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, lastErr, 0)
	if err == nil && res.RequeueAfter > 0 {
		s.refuseUntil(res.RequeueAfter)
	}
	return nil, res, err
}

// refuseUntil holds further creates back for wait after Packet refused one, until the spec
// changes (CreateRetryAnnotation).
func (s *Service) refuseUntil(wait time.Duration) {
	s.setAnnotationTime(CreateRetryAnnotation, s.opts.Now().Add(wait))
}

// refusedFor returns how much longer creates are held back after a refusal of this spec. The
// refusal's DeviceReady condition carries the generation it was set at: a newer spec is tried
// at once.
func (s *Service) refusedFor() time.Duration {
	pm := s.scope.PacketMachine
	until, ok := s.annotationTime(CreateRetryAnnotation)
	if c := conditions.Get(pm, infrav1.DeviceReadyCondition); !ok || c == nil || c.ObservedGeneration != pm.Generation {
		return 0
	}
	return max(0, until.Sub(s.opts.Now()))
}

// waitingForCreate ends the DeviceReady message while an unanswered create may still show up.
const waitingForCreate = "; the device may exist anyway: waiting up to "

// waitForUnansweredCreate reports the wait after a create whose answer was lost. What Packet
// said then (a 5xx, a timeout), recorded by apistatus.Record, stays in the message and its reason.
func (s *Service) waitForUnansweredCreate(wait time.Duration) {
	reason, cause := infrav1.DeviceProvisioningReason, "A device create got no answer"
	if c := conditions.Get(s.scope.PacketMachine, infrav1.DeviceReadyCondition); c != nil && c.Reason == infrav1.PacketAPIErrorReason {
		reason = c.Reason
		cause, _, _ = strings.Cut(c.Message, waitingForCreate)
	}
	s.setCondition(metav1.ConditionFalse, reason, fmt.Sprintf("%s%s%s for it to show in Packet's lists before creating one",
		cause, waitingForCreate, wait.Round(time.Second)))
}

func locationOf(req *packet.CreateDeviceRequest) string {
	if req.Metro != "" {
		return "metro " + req.Metro
	}
	return "facility " + req.Facility
}
