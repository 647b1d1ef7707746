package packetsim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	httptestpkg "net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// The benchmarks go over real HTTP (keep-alive client, like a provider that
// reuses connections) against a simulator holding 10,000 active devices.

const benchDevices = 10000

type benchEnv struct {
	sim    *packetsim.Server
	srv    *httptestpkg.Server
	client *http.Client
	ids    []string
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	seed := packetsim.DefaultSeed()
	for i := range seed.Plans {
		for m := range seed.Plans[i].Capacity {
			seed.Plans[i].Capacity[m] = 1 << 20
		}
	}
	timing := packetsim.TimingInstant
	sim, err := packetsim.New(packetsim.Options{Seed: seed, Clock: packetsim.NewVirtualClock(time.Time{}), Timing: &timing,
		MaxRecordedRequests: 1000})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptestpkg.NewServer(sim.Handler())
	b.Cleanup(srv.Close)
	e := &benchEnv{sim: sim, srv: srv, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id := e.create(b, fmt.Sprintf(`{"hostname":"node-%d","plan":"c3.small.x86","metro":"sv","operating_system":"ubuntu_22_04","tags":["cluster:c%d","role:worker"]}`, i, i%100))
				mu.Lock()
				e.ids = append(e.ids, id)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < benchDevices; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	sim.Advance(time.Second) // everything to active, with addresses
	return e
}

func (e *benchEnv) do(b *testing.B, method, path, body string) []byte {
	req, _ := http.NewRequest(method, e.srv.URL+"/metal/v1"+path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", packetsim.DefaultToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return data
}

func (e *benchEnv) create(b *testing.B, body string) string {
	var d struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(e.do(b, "POST", "/projects/"+packetsim.DefaultProjectID+"/devices", body), &d)
	return d.ID
}

// reportLatency adds p50/p99 (ms) and peak RSS (MiB) to the benchmark.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
}

// peakRSS is VmHWM of this process (Linux), or the Go heap in use elsewhere.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if bytes.HasPrefix(line, []byte("VmHWM:")) {
				var kb int64
				_, _ = fmt.Sscanf(string(bytes.TrimPrefix(line, []byte("VmHWM:"))), "%d", &kb)
				return kb << 10
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func BenchmarkGetDevice(b *testing.B) {
	e := newBenchEnv(b)
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		i := 0
		for pb.Next() {
			t := time.Now()
			e.do(b, "GET", "/devices/"+e.ids[i%len(e.ids)]+"?include=facility", "")
			local = append(local, time.Since(t))
			i += 7
		}
		mu.Lock()
		lat = append(lat, local...)
		mu.Unlock()
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	reportLatency(b, lat)
}

func BenchmarkListDevicesFiltered(b *testing.B) {
	e := newBenchEnv(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		e.do(b, "GET", fmt.Sprintf("/projects/%s/devices?include=facility&tag=cluster:c%d&per_page=10", packetsim.DefaultProjectID, i%100), "")
		lat = append(lat, time.Since(t))
	}
	reportLatency(b, lat)
}

func BenchmarkListDevicesPage(b *testing.B) {
	e := newBenchEnv(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		e.do(b, "GET", fmt.Sprintf("/projects/%s/devices?include=facility&page=%d", packetsim.DefaultProjectID, 1+i%1000), "")
		lat = append(lat, time.Since(t))
	}
	reportLatency(b, lat)
}

func BenchmarkCreateDevice(b *testing.B) {
	e := newBenchEnv(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		e.create(b, `{"hostname":"bench","plan":"c3.small.x86","metro":"sv","operating_system":"ubuntu_22_04","tags":null}`)
		lat = append(lat, time.Since(t))
	}
	reportLatency(b, lat)
}
