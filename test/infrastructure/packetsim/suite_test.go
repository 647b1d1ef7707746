package packetsim_test

import (
	"errors"
	"net/http"
	httptestpkg "net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

func TestPacketsim(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "packetsim")
	rep := specTally.Report()
	t.Log(rep.Summary())
	for _, f := range rep.Requests {
		t.Logf("request off the spec (accepted): %s (%d×)", f.Finding, f.Count)
	}
}

// specTally adds up every simulator's spec check, for the suite's closing line.
var specTally packetsim.Tally

const projectID = packetsim.DefaultProjectID

// env is one simulator on a virtual clock behind a real HTTP listener, with
// a packngo client pointed at it.
type env struct {
	sim    *packetsim.Server
	http   *httptestpkg.Server
	client *packngo.Client
}

func newEnv(mutate ...func(*packetsim.Options)) *env {
	timing := packetsim.TimingFast
	opts := packetsim.Options{Clock: packetsim.NewVirtualClock(time.Time{}), Timing: &timing, PerPage: 2, RandomSeed: 1}
	for _, m := range mutate {
		m(&opts)
	}
	sim, err := packetsim.New(opts)
	Expect(err).NotTo(HaveOccurred())
	srv := httptestpkg.NewServer(sim.Handler())
	DeferCleanup(func() {
		srv.Close()
		Expect(sim.Close()).To(Succeed())
		rep := sim.Conformance()
		specTally.Add(rep)
		Expect(rep.Err()).NotTo(HaveOccurred())
	})
	return &env{sim: sim, http: srv, client: clientFor(srv.URL, packetsim.DefaultToken)}
}

func clientFor(url, token string) *packngo.Client {
	c, err := packngo.NewClientWithBaseURL("packetsim-test", token, &http.Client{Timeout: 10 * time.Second}, url+"/metal/v1/")
	Expect(err).NotTo(HaveOccurred())
	return c
}

// apiError unwraps a packngo error into status and the error texts.
func apiError(err error) (int, []string) {
	var er *packngo.ErrorResponse
	ExpectWithOffset(1, errors.As(err, &er)).To(BeTrue(), "want *packngo.ErrorResponse, got %v", err)
	return er.Response.StatusCode, er.Errors
}

func (e *env) createDevice(mutate ...func(*packngo.DeviceCreateRequest)) *packngo.Device {
	req := &packngo.DeviceCreateRequest{Hostname: "node-1", Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04",
		ProjectID: projectID, Tags: []string{"cluster-api-provider-packet:cluster-id:c1"}}
	for _, m := range mutate {
		m(req)
	}
	d, _, err := e.client.Devices.Create(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return d
}

func (e *env) getDevice(id string) (*packngo.Device, error) {
	d, _, err := e.client.Devices.Get(id, &packngo.GetOptions{Includes: []string{"hardware_reservation"}})
	return d, err
}

func httptest(sim *packetsim.Server) *httptestServer { return newHTTPTestServer(sim.Handler()) }

type httptestServer = httptestpkg.Server

func newHTTPTestServer(h http.Handler) *httptestServer { return httptestpkg.NewServer(h) }
