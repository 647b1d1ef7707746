package packetsim_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// Conformance of devices, their events, ports and virtual networks with what Packet sends and
// packngo v0.31.0 decodes, driven only through packngo over HTTP.
var _ = Describe("device fidelity", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	// provisioning returns the device once its management addresses are assigned.
	provisioning := func(id string) *packngo.Device {
		e.sim.Advance(2 * time.Second)
		d, err := e.getDevice(id)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ExpectWithOffset(1, d.State).To(Equal("provisioning"))
		return d
	}
	// managementIP is the device's management address of a type, or nil. An assignment's own
	// type is "IPAssignment" (the spec's), so the family is told by public and address_family, as
	// packngo's GetNetworkInfo does.
	managementIP := func(d *packngo.Device, typ packngo.IPReservationType) *packngo.IPAddressAssignment {
		for _, ip := range d.Network {
			family := packngo.PrivateIPv4
			switch {
			case ip.AddressFamily == 6:
				family = packngo.PublicIPv6
			case ip.Public:
				family = packngo.PublicIPv4
			}
			if ip.Management && family == typ {
				Expect(string(ip.Type)).To(Equal("IPAssignment"))
				return ip
			}
		}
		return nil
	}

	It("reports root as the device's login user", func() {
		d := e.createDevice()
		Expect(d.User).To(Equal("root"))
		got, err := e.getDevice(d.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.User).To(Equal("root"))
	})

	It("collapses the nested objects a list excludes to references, and keeps the others whole", func() {
		d := e.createDevice()
		provisioning(d.ID)
		opts := &packngo.ListOptions{Includes: []string{"facility"}, Excludes: []string{"plan", "operating_system", "network_ports", "provisioning_events"}}
		listed, _, err := e.client.Devices.List(packetsim.DefaultProjectID, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(listed).To(HaveLen(1))
		got := listed[0]
		Expect(got.Plan.Href).To(HavePrefix("/metal/v1/plans/"))
		Expect(got.Plan.Slug).To(BeEmpty(), "only an href")
		Expect(got.OS).NotTo(BeNil())
		Expect(got.OS.Slug).To(BeEmpty(), "only an href (packngo keeps none for an OS)")
		Expect(got.NetworkPorts).NotTo(BeEmpty())
		for _, p := range got.NetworkPorts {
			Expect(p.Href).To(HaveField("Href", HavePrefix("/metal/v1/ports/")))
			Expect(p.Name).To(BeEmpty(), "only an href")
		}
		Expect(got.ProvisionEvents).NotTo(BeEmpty())
		for _, ev := range got.ProvisionEvents {
			Expect(ev.Href).To(HavePrefix("/metal/v1/events/"))
			Expect(ev.Body).To(BeEmpty(), "only an href")
		}
		Expect(got.Facility.Code).To(Equal(d.Facility.Code), "not excluded")
		Expect(got.Network).NotTo(BeEmpty(), "not excluded")
		Expect(got.Network[0].Address).NotTo(BeEmpty())
	})

	It("gives a device created with only a private IPv4 no public address", func() {
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) {
			r.IPAddresses = []packngo.IPAddressCreateRequest{{AddressFamily: 4, Public: false}}
		})
		d = provisioning(d.ID)
		Expect(d.Network).To(HaveLen(1))
		info := d.GetNetworkInfo()
		Expect(info.PublicIPv4).To(BeEmpty())
		Expect(info.PublicIPv6).To(BeEmpty())
		Expect(info.PrivateIPv4).To(HavePrefix("127.128."))
		Expect(d.Network[0].Public).To(BeFalse())
		Expect(d.Network[0].CIDR).To(Equal(31))
	})

	It("honours the requested public IPv4 subnet size, with the first host as gateway", func() {
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) {
			r.IPAddresses = []packngo.IPAddressCreateRequest{{AddressFamily: 4, Public: true, CIDR: 29}, {AddressFamily: 4}}
		})
		d = provisioning(d.ID)
		Expect(d.Network).To(HaveLen(2), "no IPv6 was asked for")
		pub := managementIP(d, packngo.PublicIPv4)
		Expect(pub).NotTo(BeNil())
		Expect(pub.CIDR).To(Equal(29))
		Expect(pub.Netmask).To(Equal("255.255.255.248"))
		network := netip.MustParseAddr(pub.Network)
		Expect(pub.Gateway).To(Equal(network.Next().String()))
		Expect(pub.Address).To(Equal(network.Next().Next().String()))

		d = e.createDevice(func(r *packngo.DeviceCreateRequest) { r.PublicIPv4SubnetSize = 30 })
		d = provisioning(d.ID)
		Expect(d.Network).To(HaveLen(3), "public_ipv4_subnet_size keeps the default families")
		Expect(managementIP(d, packngo.PublicIPv4).CIDR).To(Equal(30))
	})

	It("refuses ip_addresses without a private IPv4, with a private IPv6 or with a bad cidr", func() {
		for _, ips := range [][]packngo.IPAddressCreateRequest{
			{{AddressFamily: 4, Public: true}},
			{{AddressFamily: 4}, {AddressFamily: 6, Public: false}},
			{{AddressFamily: 4}, {AddressFamily: 4, Public: true, CIDR: 24}},
		} {
			_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04",
				ProjectID: projectID, IPAddresses: ips})
			status, _ := apiError(err)
			Expect(status).To(Equal(422), "ip_addresses %+v", ips)
		}
		Expect(e.sim.Devices(projectID)).To(BeEmpty())
	})

	It("refuses a billing cycle Packet does not sell, on create and on update", func() {
		_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Plan: "c3.small.x86", Metro: "sv", OS: "ubuntu_22_04",
			ProjectID: projectID, BillingCycle: "weekly"})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf(ContainSubstring("Billing cycle")))
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) { r.BillingCycle = "monthly" })
		Expect(d.BillingCycle).To(Equal("monthly"))
		// packngo's DeviceUpdateRequest has no billing_cycle; the API's PUT does.
		req, err := e.client.NewRequest("PUT", "/devices/"+d.ID, map[string]string{"billing_cycle": "weekly"})
		Expect(err).NotTo(HaveOccurred())
		_, err = e.client.Do(req, nil)
		status, _ = apiError(err)
		Expect(status).To(Equal(422))
	})

	It("refuses to reinstall an operating system the plan cannot run", func() {
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) { r.Plan = "g2.large.x86" })
		e.sim.Advance(time.Minute)
		_, err := e.client.Devices.Reinstall(d.ID, &packngo.DeviceReinstallFields{OperatingSystem: "flatcar_stable"})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Operating system flatcar_stable is not provisionable on plan g2.large.x86"))
		got, _ := e.getDevice(d.ID)
		Expect(got.State).To(Equal("active"))
		Expect(got.OS.Slug).To(Equal("ubuntu_22_04"))
	})

	It("gives Windows the Admin user and a /30 public IPv4", func() {
		e = newEnv(func(o *packetsim.Options) {
			o.Seed = packetsim.DefaultSeed()
			o.Seed.OperatingSystems = append(o.Seed.OperatingSystems,
				packetsim.SeedOS{Slug: "windows_2022", Name: "Windows 2022", Distro: "windows", Version: "2022"})
		})
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) { r.OS = "windows_2022" })
		Expect(d.User).To(Equal("Admin"))
		d = provisioning(d.ID)
		Expect(managementIP(d, packngo.PublicIPv4).CIDR).To(Equal(30))
	})

	It("returns the custom storage layout it was created with", func() {
		var cpr packngo.CPR
		Expect(json.Unmarshal([]byte(`{"disks":[{"device":"/dev/sda","wipeTable":true,
			"partitions":[{"label":"ROOT","number":1,"size":"0"}]}],
			"filesystems":[{"mount":{"device":"/dev/sda1","format":"ext4","point":"/","create":{"options":["-L","ROOT"]}}}]}`), &cpr)).To(Succeed())
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) { r.Storage = &cpr })
		Expect(d.Storage).To(Equal(&cpr))
		got, err := e.getDevice(d.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Storage).NotTo(BeNil())
		Expect(got.Storage.Filesystems[0].Mount.Point).To(Equal("/"))
		Expect(e.createDevice().Storage).To(BeNil(), "no layout, no storage")
	})

	DescribeTable("refuses, with a 422 saying what is wrong, a storage layout the plan's servers cannot have",
		func(doc string, says string) {
			var cpr packngo.CPR
			Expect(json.Unmarshal([]byte(doc), &cpr)).To(Succeed())
			_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "node-1", Plan: "c3.small.x86", Metro: "sv",
				OS: "ubuntu_22_04", ProjectID: projectID, Storage: &cpr})
			status, msgs := apiError(err)
			Expect(status).To(Equal(http.StatusUnprocessableEntity))
			Expect(msgs).To(ContainElement(ContainSubstring(says)))
		},
		Entry("more disks than c3.small.x86's two", `{"disks":[{"device":"/dev/sda"},{"device":"/dev/sdb"},{"device":"/dev/sdc"}]}`,
			"Storage names 3 disks; plan c3.small.x86 has 2"),
		Entry("RAID 1 over one partition", `{"disks":[{"device":"/dev/sda","partitions":[{"label":"ROOT","number":1,"size":"0"}]}],
			"raid":[{"devices":["/dev/sda1"],"level":"1","name":"/dev/md/ROOT"}]}`, "level 1 needs at least 2 devices, got 1"),
		Entry("a filesystem on no declared device", `{"disks":[{"device":"/dev/sda","partitions":[{"label":"ROOT","number":1,"size":"0"}]}],
			"filesystems":[{"mount":{"device":"/dev/sda2","format":"ext4","point":"/"}}]}`, "/dev/sda2 is not a declared partition or RAID array"),
		Entry("a size that does not parse", `{"disks":[{"device":"/dev/sda","partitions":[{"label":"ROOT","number":1,"size":"lots"}]}]}`,
			`invalid size "lots"`),
	)

	It("relates project events to their device, also after it is deleted", func() {
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		live, _, err := e.client.Projects.ListEvents(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(live).NotTo(BeEmpty())
		one, _, err := e.client.Events.Get(live[0].ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(one.Relationships).To(ConsistOf(packngo.Href{Href: "/metal/v1/devices/" + d.ID}))
		_, err = e.client.Devices.Delete(d.ID, false)
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(time.Minute)
		events, _, err := e.client.Projects.ListEvents(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(events).NotTo(BeEmpty())
		types := []string{}
		for _, ev := range events {
			types = append(types, ev.Type)
			Expect(ev.Relationships).To(ConsistOf(packngo.Href{Href: "/metal/v1/devices/" + d.ID}), "event %s", ev.Type)
		}
		Expect(types).To(ContainElements("provisioning.101", "provisioning.109", "instance.deleted"))
		Expect(len(events)).To(BeNumerically(">", len(live)), "the device's own events stay in the project's log")
	})

	It("lists the devices on a virtual network as its instances", func() {
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		vn, _, err := e.client.ProjectVirtualNetworks.Create(&packngo.VirtualNetworkCreateRequest{ProjectID: projectID, Metro: "sv"})
		Expect(err).NotTo(HaveOccurred())
		Expect(vn.Instances).To(BeEmpty())
		got, _ := e.getDevice(d.ID)
		bond, err := got.GetPortByName("bond0")
		Expect(err).NotTo(HaveOccurred())
		port, _, err := e.client.Ports.Assign(bond.ID, vn.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(port.AttachedVirtualNetworks).To(HaveLen(1))
		Expect(port.AttachedVirtualNetworks[0].Instances).To(HaveLen(1))
		Expect(port.AttachedVirtualNetworks[0].Instances[0].Href).To(Equal("/metal/v1/devices/" + d.ID))
		vn, _, err = e.client.ProjectVirtualNetworks.Get(vn.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(vn.Instances).To(HaveLen(1))
		Expect(vn.Instances[0].Href).To(Equal("/metal/v1/devices/" + d.ID))
	})

	It("converts back to layer 3 with only the addresses in request_ips", func() {
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		got, _ := e.getDevice(d.ID)
		bond, err := got.GetPortByName("bond0")
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.Ports.ConvertToLayerTwo(bond.ID)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, []packngo.AddressRequest{{AddressFamily: 4, Public: false}})
		Expect(err).NotTo(HaveOccurred())
		got, _ = e.getDevice(d.ID)
		Expect(got.Network).To(HaveLen(1))
		Expect(got.GetNetworkInfo().PrivateIPv4).NotTo(BeEmpty())
		Expect(got.GetNetworkInfo().PublicIPv4).To(BeEmpty())
	})
})
