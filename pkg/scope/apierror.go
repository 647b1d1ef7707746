package scope

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// SlowRetry is how long objects wait before retrying after Packet refused the request itself
// (422) or the credentials (401/403): the same request will fail the same way until the spec or
// the Secret changes, and either change triggers a reconcile anyway.
const SlowRetry = 5 * time.Minute

// Object is a Packet object with conditions: a PacketCluster or a PacketMachine.
type Object interface {
	conditions.Setter
	client.Object
}

// HandleAPIError records a failed Packet call on obj — conditionType (the failing step) False
// with the API's message, and PacketAPIAvailable — and decides when to try again:
//   - rate limited: after the server's Retry-After (with jitter so objects spread out), no error;
//   - invalid request or credentials: after retryInvalid (0: only when the object changes);
//   - a project limit: after SlowRetry, whatever retryInvalid says (limits are raised and
//     devices deleted without the object changing);
//   - capacity and transient errors: returned, so the workqueue backs off exponentially.
//
// Warning events are sent only when the reason changes, never on every retry.
func HandleAPIError(obj Object, conditionType string, err error, retryInvalid time.Duration) (ctrl.Result, error) {
	var apiErr *packet.Error
	var credErr *ErrCredentials
	switch {
	case errors.As(err, &credErr):
		setFalse(obj, conditionType, infrav1.CredentialsInvalidReason, credErr.Error())
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.CredentialsInvalidReason, credErr.Error())
		return ctrl.Result{RequeueAfter: SlowRetry}, nil
	case !errors.As(err, &apiErr):
		return ctrl.Result{}, err
	}
	msg := apiErr.Message()
	switch apiErr.Kind {
	case packet.KindRateLimited:
		setFalse(obj, conditionType, infrav1.RateLimitedReason, msg)
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.RateLimitedReason, msg)
		return ctrl.Result{RequeueAfter: withJitter(apiErr.RetryAfter)}, nil
	case packet.KindUnauthorized:
		setFalse(obj, conditionType, infrav1.CredentialsInvalidReason, msg)
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.CredentialsInvalidReason, msg)
		return ctrl.Result{RequeueAfter: SlowRetry}, nil
	case packet.KindInvalid, packet.KindNotFound:
		setFalse(obj, conditionType, infrav1.InvalidRequestReason, msg)
		setAPIAvailable(obj)
		return ctrl.Result{RequeueAfter: retryInvalid}, nil
	case packet.KindQuota:
		setFalse(obj, conditionType, infrav1.QuotaExceededReason, msg)
		setAPIAvailable(obj)
		return ctrl.Result{RequeueAfter: SlowRetry}, nil
	case packet.KindCapacity:
		setFalse(obj, conditionType, infrav1.CapacityUnavailableReason, msg)
		setAPIAvailable(obj)
		return ctrl.Result{}, err
	default:
		setFalse(obj, conditionType, infrav1.PacketAPIErrorReason, msg)
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.PacketAPIErrorReason, msg)
		return ctrl.Result{}, err
	}
}

// setFalse sets a False condition and sends a Warning event when its reason changed.
func setFalse(obj Object, conditionType, reason, message string) {
	if prev := conditions.Get(obj, conditionType); prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != reason {
		record.Warnf(obj, reason, "%s: %s", conditionType, message)
	}
	conditions.Set(obj, metav1.Condition{Type: conditionType, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

func setAPIAvailable(obj conditions.Setter) {
	conditions.Set(obj, metav1.Condition{Type: infrav1.PacketAPIAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
}

// MarkAPIAvailable records that Packet answered the last calls.
func MarkAPIAvailable(obj conditions.Setter) { setAPIAvailable(obj) }

// withJitter adds up to 20% so that objects rate-limited together do not retry together.
func withJitter(d time.Duration) time.Duration {
	if d <= 0 {
		d = time.Second
	}
	return wait.Jitter(d, 0.2)
}
