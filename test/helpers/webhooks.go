package helpers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if last = dialTLS(addr); last == nil {
			return true, nil
		}
		select {
		case err := <-errs:
			return false, fmt.Errorf("the webhook manager stopped: %w", err)
		default:
			return false, nil
		}
	})
	if wait.Interrupted(err) {
		return nil, fmt.Errorf("the webhook server on %s did not come up: %w", addr, last)
	}
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// dialTLS checks that addr completes a TLS handshake.
func dialTLS(addr string) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that the local test server is up
	if err != nil {
		return err
	}
	return conn.Close()
}
