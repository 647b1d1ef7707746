package webhooks

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

const (
	projectUUID = "a3b8c1d2-0000-4000-8000-000000000001"
	resA        = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	resB        = "0b0c3b7e-4f39-4d5c-9a51-1c3f3c0d9e21"
	deviceUUID  = "7a1c2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

// want is an expected rejection: a field path and a piece of the message ("" = accepted).
type want struct {
	field, msg string
}

// checkErr asserts that err is nil when w is empty, else an Invalid error with a cause at w.field
// whose message contains w.msg.
func checkErr(t *testing.T, err error, w want) {
	t.Helper()
	if w.field == "" {
		if err != nil {
			t.Fatalf("expected no error, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("expected a rejection at %s (%q), got none", w.field, w.msg)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("expected an Invalid error, got %T %v", err, err)
	}
	var status apierrors.APIStatus
	if ok := asAPIStatus(err, &status); !ok || status.Status().Details == nil {
		t.Fatalf("error %v has no status details", err)
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == w.field && strings.Contains(c.Message, w.msg) {
			return
		}
	}
	t.Fatalf("expected a cause at %s containing %q, got: %v", w.field, w.msg, err)
}

func asAPIStatus(err error, target *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus) //nolint:errorlint // apierrors.NewInvalid returns the status error itself
	if ok {
		*target = s
	}
	return ok
}

func hasWarning(warnings admission.Warnings, part string) bool {
	for _, w := range warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

// requestCtx returns a context carrying an admission request, as the webhook server passes it.
func requestCtx(dryRun bool) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{
		AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptr.To(dryRun)},
	})
}

// topologyDryRunAnnotations are what the Cluster API topology controller puts on the objects of
// its server-side-apply dry runs.
var topologyDryRunAnnotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
