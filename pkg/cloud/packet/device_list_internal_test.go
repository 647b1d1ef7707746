package packet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// BenchmarkDecodeDeviceList decodes one page of a thousand active devices as the simulator
// answers it, into packngo's Device (what the snapshot decoded before) and into listedDevice.
// `go test ./pkg/cloud/packet -run x -bench DecodeDeviceList -benchmem`; figures in
// docs/performance.md.
func BenchmarkDecodeDeviceList(b *testing.B) {
	page := thousandDevicesPage(b)
	b.Run("packngo.Device", func(b *testing.B) {
		for range b.N {
			var root struct {
				Devices []packngo.Device `json:"devices"`
			}
			if err := json.Unmarshal(page, &root); err != nil || len(root.Devices) != 1000 {
				b.Fatal(err, len(root.Devices))
			}
		}
	})
	b.Run("listedDevice", func(b *testing.B) {
		for range b.N {
			var root devicesPage
			if err := json.Unmarshal(page, &root); err != nil || len(root.Devices) != 1000 {
				b.Fatal(err, len(root.Devices))
			}
		}
	})
}

// BenchmarkGetDevicePage asks a server that answers with the same page for it through packngo,
// decoded as packngo does (a json.Decoder on the body) and as getPage does (the body read whole
// into a buffer of the expected size, or of none, first). The server's own cost is in all.
// `go test ./pkg/cloud/packet -run x -bench GetDevicePage -benchmem`; figures in docs/performance.md.
func BenchmarkGetDevicePage(b *testing.B) {
	page := thousandDevicesPage(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(page)
	}))
	b.Cleanup(srv.Close)
	api, err := packngo.NewClientWithBaseURL("bench", packetsim.DefaultToken, srv.Client(), srv.URL+"/")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("packngo's json.Decoder", func(b *testing.B) {
		for range b.N {
			var list devicesPage
			if _, err := api.DoRequest(http.MethodGet, "devices", nil, &list); err != nil || len(list.Devices) != 1000 {
				b.Fatal(err, len(list.Devices))
			}
		}
	})
	for _, hint := range []int{0, len(page)} {
		b.Run(fmt.Sprintf("getPage, expecting %d bytes", hint), func(b *testing.B) {
			for range b.N {
				var list devicesPage
				if _, size, err := getPage(api, "devices", hint, &list); err != nil || len(list.Devices) != 1000 || size != len(page) {
					b.Fatal(err, len(list.Devices), size)
				}
			}
		})
	}
}

func thousandDevicesPage(b *testing.B) []byte {
	b.Helper()
	seed := packetsim.DefaultSeed()
	for i := range seed.Plans {
		for metro := range seed.Plans[i].Capacity {
			seed.Plans[i].Capacity[metro] = 10000
		}
	}
	sim, err := packetsim.New(packetsim.Options{Seed: seed, Clock: packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	b.Cleanup(func() { srv.Close(); _ = sim.Close() })
	c, err := New(Options{APIURL: srv.URL + "/metal/v1", APIKey: packetsim.DefaultToken, QPS: 1e6, Burst: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, err := c.CreateDevice(context.Background(), CreateDeviceRequest{ProjectID: packetsim.DefaultProjectID, Hostname: fmt.Sprintf("d%d", i),
			Plan: "c3.small.x86", OS: "ubuntu_24_04", Metro: "sv", BillingCycle: "hourly", Tags: []string{"cluster:a"}}); err != nil {
			b.Fatal(err)
		}
	}
	sim.Advance(time.Hour)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metal/v1"+snapshotListOptions(1, 1000).WithQuery("/projects/"+packetsim.DefaultProjectID+"/devices"), nil)
	req.Header.Set("X-Auth-Token", packetsim.DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return page
}
