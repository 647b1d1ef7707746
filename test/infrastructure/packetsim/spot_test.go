package packetsim_test

import (
	"bytes"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"
)

var _ = Describe("spot market", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	spot := func(bid float64) func(*packngo.DeviceCreateRequest) {
		return func(r *packngo.DeviceCreateRequest) { r.SpotInstance, r.SpotPriceMax = true, bid }
	}

	It("quotes prices by metro and by facility through packngo", func() {
		byMetro, _, err := e.client.SpotMarket.PricesByMetro()
		Expect(err).NotTo(HaveOccurred())
		Expect(byMetro["sv"]["c3.small.x86"]).To(BeNumerically("==", 0.15), "a fifth of the plan's 0.75 an hour")
		byFacility, _, err := e.client.SpotMarket.PricesByFacility()
		Expect(err).NotTo(HaveOccurred())
		Expect(byFacility).To(HaveKey(HavePrefix("sv")))
		Expect(byFacility).NotTo(HaveKey("sv"), "facility codes, not metros")
	})

	It("creates a spot device with its bid and refuses bids below the market", func() {
		d := e.createDevice(spot(0.5))
		Expect(d.SpotInstance).To(BeTrue())
		Expect(d.SpotPriceMax).To(BeNumerically("==", 0.5))
		Expect(d.TerminationTime).To(BeNil())

		Expect(e.sim.SetSpotPrice("sv", "c3.small.x86", 0.6)).To(Succeed())
		_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "low", Plan: "c3.small.x86", Metro: "sv",
			OS: "ubuntu_22_04", ProjectID: projectID, SpotInstance: true, SpotPriceMax: 0.55})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf(ContainSubstring("below the current spot market price of 0.6")))
		Expect(e.sim.Capacity()["sv"]["c3.small.x86"]).To(Equal(49), "a refused create takes no server")

		_, _, err = e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "nobid", Plan: "c3.small.x86", Metro: "sv",
			OS: "ubuntu_22_04", ProjectID: projectID, SpotInstance: true})
		status, _ = apiError(err)
		Expect(status).To(Equal(422), "a spot device needs a bid")
	})

	It("gives outbid devices a termination time and deletes them then", func() {
		low := e.createDevice(spot(0.3))
		high := e.createDevice(spot(2))
		onDemand := e.createDevice()
		e.sim.Advance(20 * time.Second)

		Expect(e.sim.SetSpotPrice("sv", "c3.small.x86", 1)).To(Succeed())
		d, err := e.getDevice(low.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.State).To(Equal("active"))
		Expect(d.TerminationTime).NotTo(BeNil())
		Expect(d.TerminationTime.Sub(e.sim.Now())).To(BeNumerically("~", time.Minute, time.Second), "the fast profile's notice")
		for _, id := range []string{high.ID, onDemand.ID} {
			d, err := e.getDevice(id)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.TerminationTime).To(BeNil(), "bid above the market, or not a spot device")
		}

		e.sim.Advance(61 * time.Second)
		d, err = e.getDevice(low.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.State).To(Equal("deprovisioning"))
		e.sim.Advance(10 * time.Second)
		_, err = e.getDevice(low.ID)
		status, _ := apiError(err)
		Expect(status).To(Equal(404))
		Expect(e.sim.Devices(projectID)).To(HaveLen(2))
		Expect(e.sim.Capacity()["sv"]["c3.small.x86"]).To(Equal(48), "the reclaimed server is back on the market")
	})

	It("moves the market over the control API", func() {
		put := func(body string) int {
			req, err := http.NewRequest(http.MethodPut, e.http.URL+"/_sim/spot-market/sv/c3.small.x86", bytes.NewBufferString(body))
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			return resp.StatusCode
		}
		Expect(put(`{"price": 3.25}`)).To(Equal(http.StatusNoContent))
		Expect(e.sim.SpotPrices()["sv"]["c3.small.x86"]).To(Equal(3.25))
		Expect(put(`{}`)).To(Equal(http.StatusUnprocessableEntity))
		Expect(put(`{"price": -1}`)).To(Equal(http.StatusUnprocessableEntity))
	})
})
