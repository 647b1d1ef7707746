package packetsim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

var _ = Describe("devices", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("moves queued → provisioning → active on the virtual clock, then delete → 404", func() {
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) {
			r.UserData = "#cloud-config\n"
			r.CustomData = `{"a":1}`
			r.SpotPriceMax = 0
		})
		Expect(d.State).To(Equal("queued"))
		Expect(d.ID).To(MatchRegexp(`^[0-9a-f-]{36}$`))
		Expect(d.Network).To(BeEmpty())
		Expect(d.Facility.Code).To(HavePrefix("sv"))
		Expect(d.Metro.Code).To(Equal("sv"))
		Expect(d.Project.ID).To(BeEmpty(), "project is href-only without include")
		Expect(d.Project.URL).To(Equal("/metal/v1/projects/" + projectID))
		Expect(d.CustomData).To(HaveKeyWithValue("a", BeNumerically("==", 1)))
		Expect(d.Tags).To(ConsistOf("cluster-api-provider-packet:cluster-id:c1"))
		_, err := time.Parse(time.RFC3339, d.Created)
		Expect(err).NotTo(HaveOccurred())

		e.sim.Advance(2 * time.Second)
		d, err = e.getDevice(d.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.State).To(Equal("provisioning"))
		Expect(d.GetNetworkInfo().PublicIPv4).NotTo(BeEmpty())
		Expect(d.GetNetworkInfo().PrivateIPv4).To(HavePrefix("127.128."))
		Expect(d.GetNetworkType()).To(Equal(packngo.NetworkTypeL3))
		Expect(d.ProvisionEvents).NotTo(BeEmpty())

		e.sim.Advance(5 * time.Second)
		d, _ = e.getDevice(d.ID)
		Expect(d.ProvisionPer).To(BeNumerically("~", 50, 1))

		e.sim.Advance(5 * time.Second)
		d, _ = e.getDevice(d.ID)
		Expect(d.State).To(Equal("active"))
		Expect(d.RootPassword).NotTo(BeEmpty())

		_, err = e.client.Devices.Delete(d.ID, false)
		Expect(err).NotTo(HaveOccurred())
		d, _ = e.getDevice(d.ID)
		Expect(d.State).To(Equal("deprovisioning"))
		devices, _, err := e.client.Devices.List(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(devices).To(HaveLen(1), "deprovisioning devices are still listed")

		e.sim.Advance(5 * time.Second)
		_, err = e.getDevice(d.ID)
		status, msgs := apiError(err)
		Expect(status).To(Equal(404))
		Expect(msgs).To(Equal([]string{"Not found"}))
		Expect(e.sim.Devices(projectID)).To(BeEmpty())
		Expect(e.sim.Capacity()["sv"]["c3.small.x86"]).To(Equal(50), "capacity is given back")
	})

	It("paginates with per_page 2 and packngo follows meta.next", func() {
		for i := 0; i < 5; i++ {
			e.createDevice()
		}
		devices, _, err := e.client.Devices.List(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(devices).To(HaveLen(5))
		Expect(e.sim.Counters()["GET /projects/{id}/devices"]).To(Equal(3))

		// With Page set, packngo fetches that page only.
		page, _, err := e.client.Devices.List(projectID, &packngo.ListOptions{Page: 3, PerPage: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(page).To(HaveLen(1))
		Expect(page[0].ID).To(Equal(devices[4].ID))
		Expect(e.sim.Counters()["GET /projects/{id}/devices"]).To(Equal(4))
	})

	It("filters lists by tag and hostname", func() {
		e.createDevice(func(r *packngo.DeviceCreateRequest) { r.Hostname = "cp-0"; r.Tags = []string{"role:cp"} })
		e.createDevice(func(r *packngo.DeviceCreateRequest) { r.Hostname = "worker-0"; r.Tags = nil })
		devices, _, err := e.client.Devices.List(projectID, (&packngo.ListOptions{}).Filter("tag", "role:cp"))
		Expect(err).NotTo(HaveOccurred())
		Expect(devices).To(HaveLen(1))
		Expect(devices[0].Hostname).To(Equal("cp-0"))
		devices, _, err = e.client.Devices.List(projectID, (&packngo.ListOptions{}).Filter("hostname", "worker"))
		Expect(err).NotTo(HaveOccurred())
		Expect(devices).To(HaveLen(1))
		Expect(devices[0].Tags).To(BeEmpty())
	})

	It("expands includes and leaves references as hrefs otherwise", func() {
		d := e.createDevice()
		plain, _, err := e.client.Devices.Get(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(plain.Project.ID).To(BeEmpty())
		Expect(plain.Project.URL).NotTo(BeEmpty())
		full, _, err := e.client.Devices.Get(d.ID, &packngo.GetOptions{Includes: []string{"project", "ssh_keys"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(full.Project.ID).To(Equal(projectID))
		Expect(full.Project.Name).To(Equal("sim-project"))
		Expect(full.SSHKeys).NotTo(BeEmpty())
		Expect(full.SSHKeys[0].FingerPrint).NotTo(BeEmpty())
	})

	It("updates, locks and refuses to delete a locked device", func() {
		d := e.createDevice()
		tags := []string{"a", "b/c:d"}
		host := "renamed"
		d2, _, err := e.client.Devices.Update(d.ID, &packngo.DeviceUpdateRequest{Tags: &tags, Hostname: &host})
		Expect(err).NotTo(HaveOccurred())
		Expect(d2.Tags).To(Equal(tags))
		Expect(d2.Hostname).To(Equal("renamed"))
		_, err = e.client.Devices.Lock(d.ID)
		Expect(err).NotTo(HaveOccurred())
		_, err = e.client.Devices.Delete(d.ID, true)
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Cannot delete a locked device"))
		_, err = e.client.Devices.Unlock(d.ID)
		Expect(err).NotTo(HaveOccurred())
		_, err = e.client.Devices.Delete(d.ID, true)
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs power and reinstall actions through their transitional states", func() {
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		_, err := e.client.Devices.PowerOff(d.ID)
		Expect(err).NotTo(HaveOccurred(), "%v", err)
		got, _ := e.getDevice(d.ID)
		Expect(got.State).To(Equal("powering_off"))
		e.sim.Advance(2 * time.Second)
		got, _ = e.getDevice(d.ID)
		Expect(got.State).To(Equal("inactive"))
		_, err = e.client.Devices.PowerOff(d.ID)
		status, _ := apiError(err)
		Expect(status).To(Equal(422))
		_, err = e.client.Devices.PowerOn(d.ID)
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(2 * time.Second)
		_, err = e.client.Devices.Reinstall(d.ID, &packngo.DeviceReinstallFields{OperatingSystem: "ubuntu_24_04"})
		Expect(err).NotTo(HaveOccurred())
		got, _ = e.getDevice(d.ID)
		Expect(got.State).To(Equal("reinstalling"))
		e.sim.Advance(10 * time.Second)
		got, _ = e.getDevice(d.ID)
		Expect(got.State).To(Equal("active"))
		Expect(got.OS.Slug).To(Equal("ubuntu_24_04"))
		events, _, err := e.client.Devices.ListEvents(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(events)).To(BeNumerically(">=", 5))
	})

	It("reboots in place and reinstalls with the user-data set since, keeping the device's addresses", func() {
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) { r.UserData = "#cloud-config\nruncmd: [echo first]\n" })
		e.sim.Advance(time.Minute)
		before, _ := e.getDevice(d.ID)
		Expect(before.State).To(Equal("active"))
		Expect(addressesOf(before)).NotTo(BeEmpty())
		_, err := e.client.Devices.Reboot(d.ID)
		Expect(err).NotTo(HaveOccurred())
		got, _ := e.getDevice(d.ID)
		Expect(got.State).To(Equal("active"), "a reboot is not a state of its own")

		userData := "#cloud-config\nruncmd: [echo second]\n"
		_, _, err = e.client.Devices.Update(d.ID, &packngo.DeviceUpdateRequest{UserData: &userData})
		Expect(err).NotTo(HaveOccurred())
		_, err = e.client.Devices.Reinstall(d.ID, &packngo.DeviceReinstallFields{OperatingSystem: "ubuntu_22_04", DeprovisionFast: true})
		Expect(err).NotTo(HaveOccurred())
		got, _ = e.getDevice(d.ID)
		Expect(got.State).To(Equal("reinstalling"))
		_, err = e.client.Devices.Reboot(d.ID)
		status, _ := apiError(err)
		Expect(status).To(Equal(422), "a reinstalling device cannot be rebooted")
		e.sim.Advance(time.Minute)
		got, _ = e.getDevice(d.ID)
		Expect(got.State).To(Equal("active"))
		Expect(got.UserData).To(Equal(userData))
		Expect(addressesOf(got)).To(Equal(addressesOf(before)))
		events, _, err := e.client.Devices.ListEvents(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		var types []string
		for _, ev := range events {
			types = append(types, ev.Type)
		}
		Expect(types).To(ContainElements("power.reboot", "reinstall.101", "provisioning.109"))
	})

	It("forces states through the Go and HTTP control APIs", func() {
		d := e.createDevice()
		Expect(e.sim.SetDeviceState(d.ID, "failed")).To(Succeed())
		got, _ := e.getDevice(d.ID)
		Expect(got.State).To(Equal("failed"))
		resp, err := http.Post(e.http.URL+"/_sim/devices/"+d.ID+"/state", "application/json", strings.NewReader(`{"state":"active"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(204))
		got, _ = e.getDevice(d.ID)
		Expect(got.State).To(Equal("active"))
		Expect(e.sim.SetDeviceState(d.ID, "bogus")).To(HaveOccurred())
	})

	DescribeTable("rejects bad creates with the API's 422 texts",
		func(mutate func(*packngo.DeviceCreateRequest), status int, msg string) {
			req := &packngo.DeviceCreateRequest{Hostname: "x", Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04", ProjectID: projectID}
			mutate(req)
			_, _, err := e.client.Devices.Create(req)
			code, msgs := apiError(err)
			Expect(code).To(Equal(status))
			Expect(strings.Join(msgs, ", ")).To(ContainSubstring(msg))
		},
		Entry("unknown plan", func(r *packngo.DeviceCreateRequest) { r.Plan = "x9.huge" }, 422, "Plan is not valid"),
		Entry("unknown OS", func(r *packngo.DeviceCreateRequest) { r.OS = "windows_95" }, 422, "Operating system is not valid"),
		Entry("unknown metro", func(r *packngo.DeviceCreateRequest) { r.Metro = "zz" }, 422, "Metro is not valid"),
		Entry("no location", func(r *packngo.DeviceCreateRequest) { r.Metro = "" }, 422, "Facility can't be blank"),
		Entry("bad userdata", func(r *packngo.DeviceCreateRequest) { r.UserData = "hello" }, 422, "Userdata unrecognized userdata format"),
		Entry("ipxe with both", func(r *packngo.DeviceCreateRequest) {
			r.OS, r.IPXEScriptURL, r.UserData = "custom_ipxe", "http://x/boot.ipxe", "#!ipxe\nchain x"
		}, 422, "only ipxe_script_url or userdata may be used for custom ipxe."),
		Entry("OS not on plan", func(r *packngo.DeviceCreateRequest) { r.OS, r.Plan = "flatcar_stable", "g2.large.x86" }, 422, "not provisionable on plan"),
		Entry("plan not in metro", func(r *packngo.DeviceCreateRequest) { r.Plan = "g2.large.x86"; r.Metro = "ny" }, 422, "not available"),
		Entry("unknown project", func(r *packngo.DeviceCreateRequest) { r.ProjectID = "00000000-0000-4000-8000-0000000000ff" }, 404, "Not found"),
	)

	It("accepts cloud-init's Jinja template header, which Cluster API's kubeadm bootstrap data starts with", func() {
		d, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "jinja", Plan: "c3.small.x86", Metro: "sv",
			OS: "ubuntu_22_04", ProjectID: projectID, UserData: "## template: jinja\n#cloud-config\nruncmd: []\n"})
		Expect(err).NotTo(HaveOccurred())
		Expect(d.UserData).To(HavePrefix("## template: jinja"))
	})

	It("answers 503 when a metro runs out of a plan", func() {
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCapacity, Metro: "da", Plan: "c3.small.x86", Remaining: 1})
		e.createDevice(func(r *packngo.DeviceCreateRequest) { r.Metro = "da" })
		_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "da", OS: "ubuntu_22_04", ProjectID: projectID})
		status, msgs := apiError(err)
		Expect(status).To(Equal(503))
		Expect(msgs).To(ConsistOf("There aren't available servers in that metro"))
		report, _, err := e.client.CapacityService.ListMetros()
		Expect(err).NotTo(HaveOccurred())
		Expect((*report)["da"]["c3.small.x86"].Level).To(Equal("unavailable"))
		Expect((*report)["sv"]["c3.small.x86"].Level).To(Equal("normal"))
	})

	It("answers raw-HTTP bad input with 4xx JSON, never 500", func() {
		do := func(method, path, body string) (int, map[string]any) {
			req, _ := http.NewRequest(method, e.http.URL+"/metal/v1"+path, strings.NewReader(body))
			req.Header.Set("X-Auth-Token", packetsim.DefaultToken)
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			Expect(resp.Header.Get("Content-Type")).To(HavePrefix("application/json"))
			Expect(resp.Header.Get("X-RateLimit-Limit")).NotTo(BeEmpty())
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}
		status, body := do("POST", "/projects/"+projectID+"/devices", `{"plan":`)
		Expect(status).To(Equal(422), "the spec gives createDevice no 400")
		Expect(body).To(HaveKey("errors"))
		status, _ = do("POST", "/projects/"+projectID+"/devices", `{"plan":42}`)
		Expect(status).To(Equal(422))
		status, _ = do("GET", "/devices/not-a-uuid", "")
		Expect(status).To(Equal(404))
		status, _ = do("POST", "/projects/devices", `{}`)
		Expect(status).To(Equal(404))
		status, _ = do("GET", "/metal/v1/projects/"+projectID+"/devices", "")
		Expect(status).To(Equal(404), "the doubled /metal/v1 prefix is not served")
		status, _ = do("POST", "/projects/"+projectID+"/devices",
			`{"plan":"c3.small.x86","metro":"sv","operating_system":"ubuntu_22_04","tags":null,"facility":"sv15","customdata":{"x":"y"},"spot_price_max":"1.5","force_delete":true}`)
		Expect(status).To(Equal(201))
		status, _ = do("POST", "/projects/"+projectID+"/ips", `{"type":"public_ipv4","quantity":3,"metro":"sv"}`)
		Expect(status).To(Equal(422))
	})

	It("deletes with force_delete in the query too", func() {
		d := e.createDevice()
		req, _ := http.NewRequest("DELETE", e.http.URL+"/metal/v1/devices/"+d.ID+"?force_delete=true", nil)
		req.Header.Set("X-Auth-Token", packetsim.DefaultToken)
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(204))
		got, _ := e.getDevice(d.ID)
		Expect(got.State).To(Equal("deprovisioning"))
	})
})

var _ = Describe("hardware reservations", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("claims next-available atomically under 50 concurrent creates", func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ok, exhausted int
		var otherErrs []error
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer GinkgoRecover()
				c := clientFor(e.http.URL, packetsim.DefaultToken)
				_, _, err := c.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04",
					ProjectID: projectID, HardwareReservationID: "next-available"})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case strings.Contains(err.Error(), " no available hardware reservations "):
					exhausted++
				default:
					otherErrs = append(otherErrs, err)
				}
			}()
		}
		wg.Wait()
		Expect(otherErrs).To(BeEmpty())
		Expect(ok).To(Equal(2), "sv has two provisionable c3.small reservations (one more is spare)")
		Expect(exhausted).To(Equal(48))
		booked := map[string]bool{}
		for _, d := range e.sim.Devices(projectID) {
			Expect(booked[d.HardwareReservationID]).To(BeFalse())
			booked[d.HardwareReservationID] = true
		}
		_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04",
			ProjectID: projectID, HardwareReservationID: "next-available"})
		status, msgs := apiError(err)
		Expect(status).To(Equal(503))
		Expect(msgs).To(ConsistOf("There are no available hardware reservations for selected plan and metro"))
	})

	It("refuses a busy reservation until the wipe delay has passed", func() {
		hwID := "00000000-0000-4000-8000-00000000a003"
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) {
			r.HardwareReservationID = hwID
			r.Metro = ""
			r.Facility = []string{"da11"}
		})
		got, err := e.getDevice(d.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.HardwareReservation.ID).To(Equal(hwID))
		Expect(got.Facility.Code).To(Equal("da11"))

		hw, _, err := e.client.HardwareReservations.Get(hwID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(hw.Provisionable).To(BeFalse())
		Expect(hw.Device).NotTo(BeNil())

		_, _, err = e.client.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Facility: []string{"da11"}, OS: "ubuntu_22_04",
			ProjectID: projectID, HardwareReservationID: hwID})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Server is not provisionable"))

		_, err = e.client.Devices.Delete(d.ID, false)
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(5 * time.Second) // deprovisioned, now wiping
		hw, _, _ = e.client.HardwareReservations.Get(hwID, nil)
		Expect(hw.Provisionable).To(BeFalse())
		e.sim.Advance(15 * time.Second)
		hw, _, _ = e.client.HardwareReservations.Get(hwID, nil)
		Expect(hw.Provisionable).To(BeTrue())
		Expect(hw.Device).To(BeNil())

		list, _, err := e.client.HardwareReservations.List(projectID, (&packngo.ListOptions{}).Filter("provisionable", "only"))
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(4), "five seeded, one spare")
		_, _, err = e.client.HardwareReservations.Get("00000000-0000-4000-8000-0000000000ff", nil)
		status, _ = apiError(err)
		Expect(status).To(Equal(404))
	})
})

func addressesOf(d *packngo.Device) []string {
	var out []string
	for _, ip := range d.Network {
		out = append(out, ip.Address)
	}
	return out
}
