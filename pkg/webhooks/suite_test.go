package webhooks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/webhooks"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

var (
	ctx      context.Context
	cancel   context.CancelFunc
	testEnv  *helpers.TestEnvironment
	k8s      client.Client
	warnings = &warningRecorder{}
)

func TestWebhooksOnAPIServer(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhooks called by a real kube-apiserver over TLS")
}

// warningRecorder keeps the warnings the API server relays from the webhooks.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, err = helpers.StartWithOptions(ctx, helpers.Options{WebhookConfigPaths: []string{"config/webhook"}})
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("kube-apiserver", testEnv.ServerVersion)

	_, err = testEnv.StartWebhookServer(ctx, webhooks.SetupWithManager)
	Expect(err).NotTo(HaveOccurred())

	cfg := rest.CopyConfig(testEnv.Config)
	cfg.WarningHandlerWithContext = warnings
	k8s, err = client.New(cfg, client.Options{Scheme: testEnv.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

var nsCounter int

// newNamespace creates a namespace for one test.
func newNamespace() string {
	nsCounter++
	name := fmt.Sprintf("webhooks-%d-%d", GinkgoParallelProcess(), nsCounter)
	Expect(testEnv.Client.Create(ctx, namespace(name))).To(Succeed())
	return name
}
