package device

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// reservationsInLocation keeps the hardware reservations that are in the machine's metro or
// facility. Packet places a device on a reservation wherever the reservation's server is, so a
// machine in metro sv given a reservation in da11 would silently run in Dallas, away from its
// cluster's elastic IP. When none is left it sets DeviceReady, naming where they are, and
// returns nil; only a spec change can help then. A reservation Packet does not show (404, or
// 403 for another project's) is kept: the create answers for it, as before.
func (s *Service) reservationsInLocation(ctx context.Context, req *packet.CreateDeviceRequest, ids []string) ([]string, ctrl.Result, error) {
	var kept, elsewhere []string
	for _, id := range ids {
		hr, err := s.scope.Packet.GetHardwareReservation(ctx, id)
		switch {
		case packet.IsNotFound(err) || packet.KindOf(err) == packet.KindUnauthorized:
			kept = append(kept, id)
		case err != nil:
			res, err := apistatus.Record(s.scope.PacketMachine, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
			return nil, res, err
		case inLocation(hr, req):
			kept = append(kept, id)
		default:
			elsewhere = append(elsewhere, fmt.Sprintf("%s is in facility %s (metro %s)", id, hr.Facility, hr.Metro))
		}
	}
	if len(kept) > 0 {
		return kept, ctrl.Result{}, nil
	}
	s.setCondition(metav1.ConditionFalse, infrav1.InvalidRequestReason, fmt.Sprintf(
		"spec.hardwareReservationID: no reservation is in the machine's %s, and Packet would place the device where the reservation is: %s. Use a reservation in %s, or set the machine's location to the reservation's",
		locationOf(req), strings.Join(elsewhere, "; "), locationOf(req)))
	return nil, ctrl.Result{}, nil
}

func inLocation(hr *packet.HardwareReservation, req *packet.CreateDeviceRequest) bool {
	if req.Facility != "" {
		return strings.EqualFold(hr.Facility, req.Facility)
	}
	return req.Metro == "" || strings.EqualFold(hr.Metro, req.Metro)
}
