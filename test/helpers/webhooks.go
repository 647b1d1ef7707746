package helpers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// StartWebhookServer starts a manager that serves the webhooks setup registers on the local
// server envtest installed the webhook configurations for (see Options.WebhookConfigPaths), and
// waits until it answers TLS. The manager stops with ctx; its errors go to errs (buffered).
func (te *TestEnvironment) StartWebhookServer(ctx context.Context, setup func(ctrl.Manager) error) (<-chan error, error) {
	mgr, err := ctrl.NewManager(te.Config, ctrl.Options{
		Scheme:        te.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(te.WebhookServerOptions()),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the webhook manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()

	o := te.WebhookInstallOptions
	addr := net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that the local test server is up
		if err == nil {
			return errs, conn.Close()
		}
		select {
		case err := <-errs:
			return nil, fmt.Errorf("the webhook manager stopped: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the webhook server on %s did not come up: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
