package apistatus

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

func TestRecord(t *testing.T) {
	apiErr := func(kind packet.ErrorKind, status int) error {
		return &packet.Error{Kind: kind, Operation: "POST /projects/{id}/devices", StatusCode: status,
			Messages: []string{"the API says why"}, RetryAfter: 4 * time.Second}
	}
	for _, tc := range []struct {
		name         string
		err          error
		retryInvalid time.Duration
		stepReason   string
		apiAvailable metav1.ConditionStatus
		wantErr      bool
		requeueMin   time.Duration
		requeueMax   time.Duration
	}{
		{name: "credentials", err: &credentials.Error{Err: errors.New("secret has no apiKey")},
			stepReason: infrav1.CredentialsInvalidReason, apiAvailable: metav1.ConditionFalse, requeueMin: SlowRetry, requeueMax: SlowRetry},
		{name: "rate limited waits Retry-After plus jitter", err: apiErr(packet.KindRateLimited, 429),
			stepReason: infrav1.RateLimitedReason, apiAvailable: metav1.ConditionFalse, requeueMin: 4 * time.Second, requeueMax: 4800 * time.Millisecond},
		{name: "unauthorized", err: apiErr(packet.KindUnauthorized, 401),
			stepReason: infrav1.CredentialsInvalidReason, apiAvailable: metav1.ConditionFalse, requeueMin: SlowRetry, requeueMax: SlowRetry},
		{name: "invalid waits as told", err: apiErr(packet.KindInvalid, 422), retryInvalid: time.Minute,
			stepReason: infrav1.InvalidRequestReason, apiAvailable: metav1.ConditionTrue, requeueMin: time.Minute, requeueMax: time.Minute},
		{name: "quota waits SlowRetry whatever it is told", err: apiErr(packet.KindQuota, 422),
			stepReason: infrav1.QuotaExceededReason, apiAvailable: metav1.ConditionTrue, requeueMin: SlowRetry, requeueMax: SlowRetry},
		{name: "capacity backs off", err: apiErr(packet.KindCapacity, 503),
			stepReason: infrav1.CapacityUnavailableReason, apiAvailable: metav1.ConditionTrue, wantErr: true},
		{name: "transient backs off", err: apiErr(packet.KindTransient, 502),
			stepReason: infrav1.PacketAPIErrorReason, apiAvailable: metav1.ConditionFalse, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := &infrav1.PacketMachine{}
			res, err := Record(pm, infrav1.DeviceReadyCondition, tc.err, tc.retryInvalid)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if res.RequeueAfter < tc.requeueMin || res.RequeueAfter > tc.requeueMax {
				t.Errorf("requeue after %s, want between %s and %s", res.RequeueAfter, tc.requeueMin, tc.requeueMax)
			}
			step := conditions.Get(pm, infrav1.DeviceReadyCondition)
			if step == nil || step.Status != metav1.ConditionFalse || step.Reason != tc.stepReason {
				t.Errorf("DeviceReady %+v, want False %s", step, tc.stepReason)
			}
			var perr *packet.Error
			if errors.As(tc.err, &perr) && step != nil && step.Message != perr.Message() {
				t.Errorf("DeviceReady message %q, want the API's text %q", step.Message, perr.Message())
			}
			if got := conditions.Get(pm, infrav1.PacketAPIAvailableCondition); got == nil || got.Status != tc.apiAvailable {
				t.Errorf("PacketAPIAvailable %+v, want %s", got, tc.apiAvailable)
			}
		})
	}
}

func TestRecordNoStepSetsOnlyPacketAPIAvailable(t *testing.T) {
	pc := &infrav1.PacketCluster{}
	if _, err := Record(pc, NoStep, &credentials.Error{Err: errors.New("no key")}, SlowRetry); err != nil {
		t.Fatal(err)
	}
	if n := len(pc.Status.Conditions); n != 1 {
		t.Fatalf("%d conditions set, want only PacketAPIAvailable: %+v", n, pc.Status.Conditions)
	}
	if !conditions.IsFalse(pc, infrav1.PacketAPIAvailableCondition) {
		t.Errorf("PacketAPIAvailable is not False: %+v", pc.Status.Conditions)
	}
}

func TestRecordPassesOtherErrorsThrough(t *testing.T) {
	pm := &infrav1.PacketMachine{}
	boom := errors.New("kube-apiserver unreachable")
	if _, err := Record(pm, infrav1.DeviceReadyCondition, boom, SlowRetry); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if len(pm.Status.Conditions) != 0 {
		t.Errorf("a non-Packet error set conditions: %+v", pm.Status.Conditions)
	}
}
