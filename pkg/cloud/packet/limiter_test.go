package packet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// A client given the key's rate and burst stays within Packet's bucket when many callers start at
// once from idle: the burst arrives spread out, and with the limiter at Packet's full burst the
// request after it was refused at every such start.
func TestAClientAtTheKeysRateAndBurstIsNotRefusedWhenCallersStartAtOnce(t *testing.T) {
	const rate = 20
	sim, err := packetsim.New(packetsim.Options{MaxRecordedRequests: 1 << 12, RateLimit: packetsim.RateLimit{PerSecond: rate, Burst: rate}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	c, err := packet.New(packet.Options{APIURL: srv.URL + "/metal/v1", APIKey: packetsim.DefaultToken, QPS: rate, Burst: rate})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		deadline := time.Now().Add(500 * time.Millisecond)
		var wg sync.WaitGroup
		for range rate + 5 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					_, _ = c.FindDevicesByTags(ctx, project, "none")
				}
			})
		}
		wg.Wait()
		time.Sleep(1200 * time.Millisecond) // both buckets full again
	}
	refused := 0
	for _, r := range sim.Requests() {
		if r.Status == http.StatusTooManyRequests {
			refused++
		}
	}
	if n := len(sim.Requests()); refused > 0 || n < 2*rate {
		t.Fatalf("%d of %d requests refused with 429, want none of at least %d", refused, n, 2*rate)
	}
}
