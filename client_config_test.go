package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// TestTheManagerLogsAPIWarningsButNotItsFinalizerNames writes through a client configured the
// way the manager's is. The kube-apiserver warns that the previous provider's finalizer name has
// no path (checked with a second client that records every warning), which came once per machine
// created; the manager does not log it. Another warning, an unknown field, is logged.
func TestTheManagerLogsAPIWarningsButNotItsFinalizerNames(t *testing.T) {
	ctx, env := startEnvtest(t)

	var mu sync.Mutex
	var logged []string
	log := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{})
	cfg := rest.CopyConfig(env.Config)
	configureClient(cfg, &options{restConfigQPS: 50, restConfigBurst: 100}, log)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	must(t, err)

	var sent []string
	recording := rest.CopyConfig(env.Config)
	recording.WarningHandler = warningRecorder(func(message string) { sent = append(sent, message) })
	witness, err := client.New(recording, client.Options{Scheme: scheme})
	must(t, err)

	withFinalizer := func(name string) *infrav1.PacketCluster {
		return &infrav1.PacketCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Finalizers: []string{infrav1.PacketClusterFinalizer}},
			Spec:       infrav1.PacketClusterSpec{ProjectID: "p", Metro: "sv"},
		}
	}
	must(t, witness.Create(ctx, withFinalizer("witness")))
	if !containsAny(sent, "finalizer") {
		t.Fatalf("the kube-apiserver sent no warning about the finalizer name (warnings: %q); this test proves nothing without one", sent)
	}
	must(t, c.Create(ctx, withFinalizer("manager")))

	unknownField := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": infrav1.GroupVersion.String(), "kind": "PacketCluster",
		"metadata": map[string]any{"name": "unknown-field", "namespace": metav1.NamespaceDefault},
		"spec":     map[string]any{"projectID": "p", "metro": "sv", "notAField": "x"},
	}}
	must(t, c.Create(ctx, unknownField))

	mu.Lock()
	defer mu.Unlock()
	if containsAny(logged, "finalizer") {
		t.Errorf("the manager's client logged the finalizer-name warning: %q", logged)
	}
	if !containsAny(logged, "notAField") {
		t.Errorf("the manager's client did not log the unknown-field warning: %q", logged)
	}
}

// warningRecorder passes every warning the kube-apiserver sends to record.
type warningRecorder func(message string)

func (r warningRecorder) HandleWarningHeader(_ int, _, message string) { r(message) }

func containsAny(lines []string, part string) bool {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}
