package packetsim_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

var _ = Describe("elastic IPs", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	eipRequest := func() *packngo.IPReservationCreateRequest {
		empty, metro := "", "sv"
		return &packngo.IPReservationCreateRequest{Type: "public_ipv4", Quantity: 1, Facility: &empty, Metro: &metro,
			Tags: []string{"cluster-api-provider-packet:cluster-id:c1"}, FailOnApprovalRequired: true}
	}

	It("never hands out a pool's network or broadcast address, as Packet never does", func() {
		e = newEnv(func(o *packetsim.Options) {
			o.Seed = packetsim.DefaultSeed()
			o.Seed.IPPools.PublicIPv4 = "198.51.100.0/29"
			for i := range o.Seed.Projects {
				o.Seed.Projects[i].PublicIPv4Quota = 100
			}
		})
		var got []string
		for {
			res, _, err := e.client.ProjectIPs.Create(projectID, eipRequest())
			if err != nil {
				status, _ := apiError(err)
				Expect(status).To(Equal(422), "the pool runs out")
				break
			}
			got = append(got, res.Address)
		}
		Expect(got).To(Equal([]string{"198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4", "198.51.100.5", "198.51.100.6"}))
	})

	It("reserves, assigns, unassigns and deletes with cascade", func() {
		res, _, err := e.client.ProjectIPs.Create(projectID, eipRequest())
		Expect(err).NotTo(HaveOccurred())
		Expect(res.State).To(Equal(packngo.IPReservationState("created")))
		Expect(res.CIDR).To(Equal(32))
		Expect(res.Metro.Code).To(Equal("sv"))
		Expect(res.Assignments).To(BeEmpty())
		Expect(res.Address).NotTo(BeEmpty())

		d := e.createDevice()
		e.sim.Advance(time.Minute)
		a, _, err := e.client.DeviceIPs.Assign(d.ID, &packngo.AddressStruct{Address: res.Address})
		Expect(err).NotTo(HaveOccurred())
		Expect(a.ID).NotTo(Equal(res.ID))
		Expect(a.AssignedTo.Href).To(Equal("/metal/v1/devices/" + d.ID))
		Expect(*a.ParentBlock.Href).To(Equal("/metal/v1/ips/" + res.ID))

		_, _, err = e.client.DeviceIPs.Assign(d.ID, &packngo.AddressStruct{Address: res.Address + "/32"})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Address has already been taken"))
		_, _, err = e.client.DeviceIPs.Assign(d.ID, &packngo.AddressStruct{Address: "192.0.2.1"})
		_, msgs = apiError(err)
		Expect(msgs).To(ConsistOf("Address is not reserved for the project"))

		got, _, err := e.client.ProjectIPs.Get(res.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Assignments).To(HaveLen(1))
		deviceIPs, _, err := e.client.DeviceIPs.List(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(deviceIPs).To(HaveLen(4), "three management addresses plus the EIP")
		byID, _, err := e.client.DeviceIPs.Get(a.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(byID.Address).To(Equal(res.Address))

		_, err = e.client.DeviceIPs.Unassign(a.ID)
		Expect(err).NotTo(HaveOccurred())
		got, _, _ = e.client.ProjectIPs.Get(res.ID, nil)
		Expect(got.Assignments).To(BeEmpty())

		a, _, err = e.client.DeviceIPs.Assign(d.ID, &packngo.AddressStruct{Address: res.Address})
		Expect(err).NotTo(HaveOccurred())
		_, err = e.client.ProjectIPs.Delete(res.ID)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.DeviceIPs.Get(a.ID, nil)
		status, _ = apiError(err)
		Expect(status).To(Equal(404))

		list, _, err := e.client.ProjectIPs.List(projectID, &packngo.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, ip := range list {
			Expect(ip.Management).To(BeTrue(), "only the management blocks of the first device remain")
		}
		Expect(list).To(HaveLen(3))
		avail, _, err := e.client.ProjectIPs.AvailableAddresses(list[0].ID, &packngo.AvailableRequest{CIDR: 31})
		Expect(err).NotTo(HaveOccurred())
		Expect(avail).NotTo(BeEmpty())
	})

	It("enforces the quota: 422 with fail_on_approval_required, pending otherwise", func() {
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: projectID, IPv4Quota: 1})
		_, _, err := e.client.ProjectIPs.Create(projectID, eipRequest())
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.ProjectIPs.Create(projectID, eipRequest())
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs[0]).To(ContainSubstring("quota"))

		req := eipRequest()
		req.FailOnApprovalRequired = false
		pending, _, err := e.client.ProjectIPs.Create(projectID, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(pending.State)).To(Equal("pending"))
		Expect(pending.Address).To(BeEmpty())
		e.sim.Advance(30 * time.Second)
		approved, _, err := e.client.ProjectIPs.Get(pending.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(approved.State)).To(Equal("created"))
		Expect(approved.Address).NotTo(BeEmpty())
	})

	It("requires a location", func() {
		req := eipRequest()
		empty := ""
		req.Metro = &empty
		_, _, err := e.client.ProjectIPs.Create(projectID, req)
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Facility is required"))
	})

	It("hides slow assignments from the reservation and device for a while", func() {
		res, _, _ := e.client.ProjectIPs.Create(projectID, eipRequest())
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultEIPSlowAssign, Duration: 10 * time.Second, Count: 1})
		_, _, err := e.client.DeviceIPs.Assign(d.ID, &packngo.AddressStruct{Address: res.Address})
		Expect(err).NotTo(HaveOccurred())
		got, _, _ := e.client.ProjectIPs.Get(res.ID, nil)
		Expect(got.Assignments).To(BeEmpty())
		e.sim.Advance(10 * time.Second)
		got, _, _ = e.client.ProjectIPs.Get(res.ID, nil)
		Expect(got.Assignments).To(HaveLen(1))
	})
})

var _ = Describe("BGP", func() {
	It("configures BGP, creates one session per family and reports neighbors", func() {
		e := newEnv()
		cfg, _, err := e.client.BGPConfig.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.ID).To(BeEmpty(), "200 {} when not configured")
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		_, _, err = e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: "ipv4"})
		_, msgs := apiError(err)
		Expect(msgs).To(ConsistOf("BGP is not enabled for this project"))

		_, err = e.client.BGPConfig.Create(projectID, packngo.CreateBGPConfigRequest{DeploymentType: "local", Asn: 65000, UseCase: "kubernetes-load-balancer"})
		Expect(err).NotTo(HaveOccurred())
		cfg, _, err = e.client.BGPConfig.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Status).To(Equal("enabled"))
		Expect(cfg.Asn).To(Equal(65000))

		bs, _, err := e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: "ipv4"})
		Expect(err).NotTo(HaveOccurred())
		Expect(bs.Device.Href).To(Equal("/metal/v1/devices/" + d.ID))
		_, _, err = e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: "ipv4"})
		status, _ := apiError(err)
		Expect(status).To(Equal(422))
		Expect(err.Error()).To(ContainSubstring("already has session"))

		sessions, _, err := e.client.Devices.ListBGPSessions(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(sessions).To(HaveLen(1))
		neighbors, _, err := e.client.Devices.ListBGPNeighbors(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(neighbors).To(HaveLen(1))
		Expect(neighbors[0].PeerAs).To(Equal(65530))
		Expect(neighbors[0].CustomerIP).To(HavePrefix("127.128."))
		_, err = e.client.BGPSessions.Delete(bs.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(e.sim.BGPSessions(projectID)).To(BeEmpty())
	})
})

var _ = Describe("catalog, projects, SSH keys, ports and VLANs", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("serves the seeded catalog", func() {
		metros, _, err := e.client.Metros.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(metros).To(HaveLen(7))
		facilities, _, err := e.client.Facilities.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(facilities)).To(BeNumerically(">=", 6))
		Expect(facilities[0].Metro).NotTo(BeNil())
		plans, _, err := e.client.Plans.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(plans).To(HaveLen(6), "not paginated even with per_page 2")
		Expect(plans[0].Specs.Cpus).NotTo(BeEmpty())
		oses, _, err := e.client.OperatingSystems.List()
		Expect(err).NotTo(HaveOccurred())
		Expect(oses).To(HaveLen(8))
		projects, _, err := e.client.Projects.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(projects).To(HaveLen(1))
		p, _, err := e.client.Projects.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Name).To(Equal("sim-project"))
		u, _, err := e.client.Users.Current()
		Expect(err).NotTo(HaveOccurred())
		Expect(u.ID).To(Equal(packetsim.DefaultUserID))
	})

	It("manages user and project SSH keys", func() {
		key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhVYQ3K7zWp0m2v9lQe2c6uO4tJmDk0bQ2O8pQz4Yx1 test"
		k, _, err := e.client.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: "mine", Key: key, ProjectID: projectID})
		Expect(err).NotTo(HaveOccurred())
		Expect(k.FingerPrint).To(MatchRegexp(`^([0-9a-f]{2}:){15}[0-9a-f]{2}$`))
		Expect(k.Owner.Href).To(Equal("/metal/v1/projects/" + projectID))
		_, _, err = e.client.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: "dup", Key: key, ProjectID: projectID})
		status, _ := apiError(err)
		Expect(status).To(Equal(422))
		_, _, err = e.client.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: "bad", Key: "not a key"})
		status, _ = apiError(err)
		Expect(status).To(Equal(422))
		keys, _, err := e.client.SSHKeys.ProjectList(projectID)
		Expect(err).NotTo(HaveOccurred())
		Expect(keys).To(HaveLen(2))
		label := "renamed"
		k, _, err = e.client.SSHKeys.Update(k.ID, &packngo.SSHKeyUpdateRequest{Label: &label})
		Expect(err).NotTo(HaveOccurred())
		Expect(k.Label).To(Equal("renamed"))
		_, err = e.client.SSHKeys.Delete(k.ID)
		Expect(err).NotTo(HaveOccurred())
		userKeys, _, err := e.client.SSHKeys.List()
		Expect(err).NotTo(HaveOccurred())
		Expect(userKeys).To(HaveLen(2), "the user key and the seeded project key")
	})

	It("assigns VLANs to ports and converts to layer 2 and back", func() {
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		vn, _, err := e.client.ProjectVirtualNetworks.Create(&packngo.VirtualNetworkCreateRequest{ProjectID: projectID, Metro: "sv", Description: "v"})
		Expect(err).NotTo(HaveOccurred())
		Expect(vn.VXLAN).To(Equal(1000))
		got, _ := e.getDevice(d.ID)
		bond, err := got.GetPortByName("bond0")
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.Ports.Assign(bond.ID, vn.ID)
		Expect(err).NotTo(HaveOccurred())
		_, err = e.client.ProjectVirtualNetworks.Delete(vn.ID)
		status, _ := apiError(err)
		Expect(status).To(Equal(422))
		port, _, err := e.client.Ports.ConvertToLayerTwo(bond.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(port.NetworkType).To(Equal("layer2-bonded"))
		got, _ = e.getDevice(d.ID)
		Expect(got.GetNetworkType()).To(Equal(packngo.NetworkTypeL2Bonded))
		_, _, err = e.client.Ports.Unassign(bond.ID, vn.ID)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, []packngo.AddressRequest{{AddressFamily: 4, Public: true}})
		Expect(err).NotTo(HaveOccurred())
		got, _ = e.getDevice(d.ID)
		Expect(got.GetNetworkType()).To(Equal(packngo.NetworkTypeL3))
		Expect(got.GetNetworkInfo().PublicIPv4).NotTo(BeEmpty())
		_, err = e.client.ProjectVirtualNetworks.Delete(vn.ID)
		Expect(err).NotTo(HaveOccurred())
	})
})

var _ = Describe("auth, rate limits and faults", func() {
	It("answers 401 for a bad token and 403 for a foreign project", func() {
		e := newEnv(func(o *packetsim.Options) {
			o.Tokens = map[string][]string{"all": nil, "other": {"00000000-0000-4000-8000-0000000000ee"}}
		})
		_, _, err := clientFor(e.http.URL, "wrong").Projects.Get(projectID, nil)
		status, msgs := apiError(err)
		Expect(status).To(Equal(401))
		Expect(msgs).To(ConsistOf("Invalid authentication token"))
		_, _, err = clientFor(e.http.URL, "other").Projects.Get(projectID, nil)
		status, msgs = apiError(err)
		Expect(status).To(Equal(403))
		Expect(msgs).To(ConsistOf("You are not authorized to view this project"))
		_, _, err = clientFor(e.http.URL, "all").Projects.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())

		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultAuth, Token: "all"})
		_, _, err = clientFor(e.http.URL, "all").Projects.Get(projectID, nil)
		status, _ = apiError(err)
		Expect(status).To(Equal(401))
		e.sim.ClearFaults()
		_, _, err = clientFor(e.http.URL, "all").Projects.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
	})

	It("rate-limits a burst with 429, Retry-After and X-RateLimit headers", func() {
		e := newEnv(func(o *packetsim.Options) { o.RateLimit = packetsim.RateLimit{PerSecond: 1, Burst: 3} })
		var last *packngo.Response
		var err error
		for i := 0; i < 4; i++ {
			_, last, err = e.client.Projects.Get(projectID, nil)
		}
		status, msgs := apiError(err)
		Expect(status).To(Equal(429))
		Expect(msgs).To(ConsistOf("Too Many Requests"))
		Expect(last.Header.Get("Retry-After")).To(Equal("1"))
		Expect(last.Header.Get("X-RateLimit-Remaining")).To(Equal("0"))
		Expect(last.Rate.RequestLimit).To(Equal(3))
		e.sim.Advance(time.Second)
		_, _, err = e.client.Projects.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
	})

	It("injects 503 JSON, HTML 502 and truncated bodies", func() {
		e := newEnv()
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "GET /projects/{id}", Status: 503, Message: "Service Unavailable", Count: 1})
		_, _, err := e.client.Projects.Get(projectID, nil)
		status, msgs := apiError(err)
		Expect(status).To(Equal(503))
		Expect(msgs).To(ConsistOf("Service Unavailable"))
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "/projects/{id}", Status: 502, Body: "html", Count: 1})
		_, _, err = e.client.Projects.Get(projectID, nil)
		Expect(err.Error()).To(ContainSubstring("Unexpected Content-Type text/html with status 502"))
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "/projects/*", Body: "truncated", Count: 1})
		_, _, err = e.client.Projects.Get(projectID, nil)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("EOF"))
		_, _, err = e.client.Projects.Get(projectID, nil)
		Expect(err).NotTo(HaveOccurred(), "count-limited faults expire")
	})

	It("commit-then-fail stores exactly one device", func() {
		e := newEnv()
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCommitThenFail, Route: "POST /projects/{id}/devices", Count: 1})
		_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04",
			ProjectID: projectID, Tags: []string{"t"}})
		status, _ := apiError(err)
		Expect(status).To(Equal(500))
		Expect(e.sim.Devices(projectID)).To(HaveLen(1))
		devices, _, err := e.client.Devices.List(projectID, (&packngo.ListOptions{}).Filter("tag", "t"))
		Expect(err).NotTo(HaveOccurred())
		Expect(devices).To(HaveLen(1))
	})

	It("keeps devices stuck, fails them and lags lists", func() {
		e := newEnv()
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultDeviceStuck, Count: 1})
		stuck := e.createDevice()
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultDeviceFail, Duration: 5 * time.Second, Forbidden403: true, Count: 1})
		failing := e.createDevice()
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultListLag, Duration: 30 * time.Second, Count: 1})
		lagging := e.createDevice()
		devices, _, _ := e.client.Devices.List(projectID, nil)
		Expect(devices).To(HaveLen(2))
		e.sim.Advance(time.Hour)
		got, _ := e.getDevice(stuck.ID)
		Expect(got.State).To(Equal("provisioning"))
		_, err := e.getDevice(failing.ID)
		status, _ := apiError(err)
		Expect(status).To(Equal(403))
		got, _ = e.getDevice(lagging.ID)
		Expect(got.State).To(Equal("active"))
		devices, _, _ = e.client.Devices.List(projectID, nil)
		Expect(devices).To(HaveLen(3))
	})

	It("records requests with redacted bodies and serves metrics and control routes", func() {
		e := newEnv()
		e.createDevice(func(r *packngo.DeviceCreateRequest) { r.UserData = "#!/bin/sh\necho secret" })
		var create packetsim.Request
		for _, r := range e.sim.Requests() {
			if r.Route == "POST /projects/{id}/devices" {
				create = r
			}
		}
		Expect(create.Status).To(Equal(201))
		Expect(create.Authenticated).To(BeTrue())
		Expect(create.Body).NotTo(ContainSubstring("secret"))
		Expect(create.Body).To(ContainSubstring(`"userdata":"[redacted]"`))
		Expect(string(create.RawBody)).To(ContainSubstring("secret"))

		resp, err := http.Get(e.http.URL + "/metrics")
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).To(ContainSubstring(`packetsim_requests_total{method="POST",route="/projects/{id}/devices",status="201"} 1`))

		resp, err = http.Post(e.http.URL+"/_sim/clock/advance?d=1h", "application/json", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200))
		Expect(e.sim.Devices(projectID)[0].State).To(Equal("active"))
		resp, err = http.Post(e.http.URL+"/_sim/faults", "application/json",
			strings.NewReader(`{"kind":"latency","latency":"1ms","route":"/devices/{id}"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(201))
		Expect(e.sim.Faults()[0].Latency).To(Equal(time.Millisecond))
		resp, err = http.Post(e.http.URL+"/_sim/reset", "application/json", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(204))
		Expect(e.sim.Devices(projectID)).To(BeEmpty())
		Expect(e.sim.Faults()).To(BeEmpty())
	})
})

var _ = Describe("state file", func() {
	It("survives a restart", func() {
		path := filepath.Join(GinkgoT().TempDir(), "state.json")
		clock := packetsim.NewVirtualClock(time.Time{})
		first, err := packetsim.New(packetsim.Options{StateFile: path, Clock: clock})
		Expect(err).NotTo(HaveOccurred())
		srv := httptest(first)
		c := clientFor(srv.URL, packetsim.DefaultToken)
		d, _, err := c.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04", ProjectID: projectID})
		Expect(err).NotTo(HaveOccurred())
		metro := "sv"
		res, _, err := c.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: "public_ipv4", Quantity: 1, Metro: &metro})
		Expect(err).NotTo(HaveOccurred())
		srv.Close()
		Expect(first.Close()).To(Succeed())

		second, err := packetsim.New(packetsim.Options{StateFile: path, Clock: packetsim.NewVirtualClock(time.Time{})})
		Expect(err).NotTo(HaveOccurred())
		defer second.Close()
		Expect(second.Devices(projectID)).To(HaveLen(1))
		Expect(second.Devices(projectID)[0].ID).To(Equal(d.ID))
		second.Advance(time.Minute)
		Expect(second.Devices(projectID)[0].State).To(Equal("active"))
		Expect(second.IPReservations(projectID)[0].ID).To(Equal(res.ID))
		Expect(filepath.Glob(path + ".tmp-*")).To(BeEmpty())
	})
})

var _ = Describe("latency fault", func() {
	It("delays each request once, alone or combined with other faults", func() {
		e := newEnv()
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultLatency, Route: "*", Latency: 20 * time.Millisecond})
		for range 3 {
			start := time.Now()
			_, _, err := e.client.Projects.List(nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(time.Since(start)).To(And(BeNumerically(">=", 20*time.Millisecond), BeNumerically("<", time.Second)))
		}
		e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "*", Status: 503, Count: 1})
		start := time.Now()
		_, _, err := e.client.Projects.List(nil)
		Expect(err).To(MatchError(ContainSubstring("503")))
		Expect(time.Since(start)).To(BeNumerically("<", time.Second))
	})
})
