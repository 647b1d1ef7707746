package bootemu

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster API's MachineDeploymentRemediationSpec marks a Node unhealthy by patching its status
// subresource, as a node-problem-detector would.
func TestNodeConditionsCanBeSetThroughTheStatusSubresource(t *testing.T) {
	_, c, wc := runningCluster(t, "delta")
	ctx := context.Background()
	node := &corev1.Node{}
	if err := wc.Get(ctx, client.ObjectKey{Name: c.name + "-cp-0"}, node); err != nil {
		t.Fatal(err)
	}
	orig := node.DeepCopy()
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
		Type: "e2e.remediation.condition", Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()})
	if err := wc.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patching the Node's status: %v", err)
	}
	if err := wc.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, cond := range node.Status.Conditions {
		found = found || (cond.Type == "e2e.remediation.condition" && cond.Status == corev1.ConditionFalse)
	}
	if !found || ready(*node) != corev1.ConditionTrue {
		t.Fatalf("conditions after the patch: %+v", node.Status.Conditions)
	}
}

func TestOnlyStatusSubresourcePathsAreRewritten(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/nodes/n1/status":                           true,
		"/api/v1/namespaces/ns/pods/p1/status":              true,
		"/apis/apps/v1/namespaces/ns/deployments/d1/status": true,
		"/apis/example.com/v1/widgets/w1/status":            true,
		"/api/v1/namespaces/ns/configmaps/status":           false, // a ConfigMap named status
		"/api/v1/nodes/status":                              false, // a Node named status
		"/apis/apps/v1/namespaces/ns/deployments/status":    false,
		"/api/v1/nodes/n1":                                  false,
	} {
		if got := isStatusSubresource(path); got != want {
			t.Errorf("isStatusSubresource(%q) = %v, want %v", path, got, want)
		}
	}
}
