package packet_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

const apiKey = "pipeline-test-key-0123456789"

// stalledAPI answers nothing until the test ends: a Packet that has stopped answering.
func stalledAPI(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	release := make(chan struct{})
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, &arrived
}

// A packngo call takes no context, yet a reconcile that ends (the manager stopping, its
// leadership lost) ends its request in flight, not the HTTP timeout an hour later.
func TestAnEndedReconcileEndsItsRequestInFlight(t *testing.T) {
	expectEndsWithItsReconcile(t, func(ctx context.Context, c packet.Client) error {
		_, err := c.GetDevice(ctx, "00000000-0000-4000-8000-00000000dead")
		return err
	})
}

// Both APIs' requests go through the same pipeline: the load-balancer API's calls end with the
// reconcile too.
func TestAnEndedReconcileEndsALoadBalancerRequestInFlight(t *testing.T) {
	expectEndsWithItsReconcile(t, func(ctx context.Context, c packet.Client) error {
		_, err := c.ListLoadBalancers(ctx, "00000000-0000-4000-8000-000000000001")
		return err
	})
}

// expectEndsWithItsReconcile makes call at a Packet that does not answer, ends its context once
// the request has arrived, and expects the call to end with context.Canceled.
func expectEndsWithItsReconcile(t *testing.T, call func(context.Context, packet.Client) error) {
	t.Helper()
	srv, arrived := stalledAPI(t)
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1", APIKey: apiKey, Timeout: time.Hour,
		LBaaSURL: srv.URL + "/lbaas", TokenExchangeURL: srv.URL + "/exchange"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- call(ctx, c) }()
	for arrived.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the call ended with %v, want the reconcile's context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call is still waiting for Packet after its reconcile ended")
	}
}

// An answer that echoes the API key does not carry it into the error, which reaches conditions,
// events and logs.
func TestAnAnswerEchoingTheKeyIsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		// The key as the request carried it, echoed: what a careless proxy or API might do.
		_, _ = w.Write([]byte(`{"errors":["token ` + r.Header.Get("X-Auth-Token") + ` may not do this"]}`)) //nolint:gosec // a test server echoing a header on purpose
	}))
	defer srv.Close()
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1", APIKey: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetDevice(context.Background(), "00000000-0000-4000-8000-00000000dead")
	if packet.KindOf(err) != packet.KindInvalid {
		t.Fatalf("error %v, want Packet's 422", err)
	}
	if strings.Contains(err.Error(), apiKey) || !strings.Contains(err.Error(), "may not do this") {
		t.Fatalf("error %q: want Packet's text without the key", err)
	}
}
