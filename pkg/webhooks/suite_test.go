package webhooks_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

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

	mgr, err := ctrl.NewManager(testEnv.Config, ctrl.Options{
		Scheme:         testEnv.Scheme,
		Metrics:        metricsserver.Options{BindAddress: "0"},
		WebhookServer:  webhook.NewServer(testEnv.WebhookServerOptions()),
		LeaderElection: false,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(webhooks.SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()

	// Wait until the webhook server answers TLS, so that the first request does not fail on
	// failurePolicy=Fail.
	opts := testEnv.WebhookInstallOptions
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	Eventually(func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks the test server is up
		if err != nil {
			return err
		}
		return conn.Close()
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

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
