// Package apistatus owns the PacketAPIAvailable condition and the policy every service follows
// when a Packet call fails: which reason the failing step's condition gets, whether a Warning
// event goes out, and when the object is looked at again. Services decide what a step means;
// this package decides what an error means, so that a 429 or a 401 reads and retries the same
// wherever it happens.
package apistatus

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
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// SlowRetry is how long objects wait before retrying after Packet refused the request itself
// (422) or the credentials (401/403): the same request will fail the same way until the spec or
// the Secret changes, and either change triggers a reconcile anyway.
const SlowRetry = 5 * time.Minute

// NoStep is the step of a call whose failure no step condition tells: the credentials, the
// failure domains, the SSH keys a deleted cluster leaves. PacketAPIAvailable alone reports it.
const NoStep = ""

// Object is a Packet object with conditions: a PacketCluster or a PacketMachine.
type Object interface {
	conditions.Setter
	client.Object
}

// Record records a failed Packet call on obj — step (the failing step's condition, or NoStep)
// False with the API's message, and PacketAPIAvailable — and decides when to try again:
//   - rate limited: after the server's Retry-After (at least a second, plus up to 20% so that
//     objects limited together do not retry together), no error;
//   - invalid request or credentials: after retryInvalid (0: only when the object changes);
//   - a project limit: after SlowRetry, whatever retryInvalid says (limits are raised and
//     devices deleted without the object changing);
//   - capacity and transient errors: returned, so the workqueue backs off exponentially.
//
// Warning events are sent only when the reason changes, never on every retry.
func Record(obj Object, step string, err error, retryInvalid time.Duration) (ctrl.Result, error) {
	var apiErr *packet.Error
	var credErr *credentials.Error
	switch {
	case errors.As(err, &credErr):
		setStepFalse(obj, step, infrav1.CredentialsInvalidReason, credErr.Error())
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.CredentialsInvalidReason, credErr.Error())
		return ctrl.Result{RequeueAfter: SlowRetry}, nil
	case !errors.As(err, &apiErr):
		return ctrl.Result{}, err
	}
	msg := apiErr.Message()
	switch apiErr.Kind {
	case packet.KindRateLimited:
		setStepFalse(obj, step, infrav1.RateLimitedReason, msg)
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.RateLimitedReason, msg)
		return ctrl.Result{RequeueAfter: wait.Jitter(max(apiErr.RetryAfter, time.Second), 0.2)}, nil
	case packet.KindUnauthorized:
		setStepFalse(obj, step, infrav1.CredentialsInvalidReason, msg)
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.CredentialsInvalidReason, msg)
		return ctrl.Result{RequeueAfter: SlowRetry}, nil
	case packet.KindInvalid, packet.KindNotFound:
		setStepFalse(obj, step, infrav1.InvalidRequestReason, msg)
		setAPIAvailable(obj)
		return ctrl.Result{RequeueAfter: retryInvalid}, nil
	case packet.KindQuota:
		setStepFalse(obj, step, infrav1.QuotaExceededReason, msg)
		setAPIAvailable(obj)
		return ctrl.Result{RequeueAfter: SlowRetry}, nil
	case packet.KindCapacity:
		setStepFalse(obj, step, infrav1.CapacityUnavailableReason, msg)
		setAPIAvailable(obj)
		return ctrl.Result{}, err
	default:
		setStepFalse(obj, step, infrav1.PacketAPIErrorReason, msg)
		setFalse(obj, infrav1.PacketAPIAvailableCondition, infrav1.PacketAPIErrorReason, msg)
		return ctrl.Result{}, err
	}
}

// setStepFalse sets the failing step's condition False, when there is a step.
func setStepFalse(obj Object, step, reason, message string) {
	if step != NoStep {
		setFalse(obj, step, reason, message)
	}
}

// setFalse sets a False condition and sends a Warning event when its reason changed.
func setFalse(obj Object, conditionType, reason, message string) {
	if prev := conditions.Get(obj, conditionType); prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != reason {
		record.Warnf(obj, reason, "%s: %s", conditionType, message)
	}
	conditions.Set(obj, metav1.Condition{Type: conditionType, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// Answered records that Packet answered the last calls.
func Answered(obj conditions.Setter) { setAPIAvailable(obj) }

func setAPIAvailable(obj conditions.Setter) {
	conditions.Set(obj, metav1.Condition{Type: infrav1.PacketAPIAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
}
