package packetsim_test

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"
)

// Conformance of IPs, BGP, SSH keys and hardware reservations: what packngo
// v0.31.0 decodes must be what Packet would send.

// ed25519Key is an OpenSSH public key line for a made-up key (seed fills
// the 32 key bytes) and its MD5 fingerprint as Packet shows it.
func ed25519Key(seed byte, comment string) (line, fingerprint string) {
	var blob []byte
	for _, part := range [][]byte{[]byte("ssh-ed25519"), make([]byte, 32)} {
		blob = binary.BigEndian.AppendUint32(blob, uint32(len(part)))
		blob = append(blob, part...)
	}
	for i := len(blob) - 32; i < len(blob); i++ {
		blob[i] = seed + byte(i)
	}
	sum := md5.Sum(blob)
	hex := make([]string, len(sum))
	for i, b := range sum {
		hex[i] = fmt.Sprintf("%02x", b)
	}
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob) + " " + comment, strings.Join(hex, ":")
}

func strPtr(s string) *string { return &s }

var _ = Describe("SSH key fidelity", func() {
	It("keeps key bodies byte for byte: a trailing newline is part of the key", func() {
		e := newEnv()
		line, fp := ed25519Key(1, "ops@example.com")
		body := line + "\n"
		k, _, err := e.client.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: "ops", Key: body, ProjectID: projectID})
		Expect(err).NotTo(HaveOccurred())
		Expect(k.Key).To(Equal(body))
		Expect(k.FingerPrint).To(Equal(fp), "MD5 of the key blob, whatever surrounds it")
		got, _, err := e.client.SSHKeys.Get(k.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Key).To(Equal(body))
		listed, _, err := e.client.SSHKeys.ProjectList(projectID)
		Expect(err).NotTo(HaveOccurred())
		Expect(listed).To(ContainElement(HaveField("Key", body)))

		userLine, _ := ed25519Key(2, "me")
		user, _, err := e.client.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: "me", Key: "  " + userLine + "\r\n"})
		Expect(err).NotTo(HaveOccurred())
		Expect(user.Key).To(Equal("  " + userLine + "\r\n"))
		Expect(user.Owner.Href).To(HavePrefix("/metal/v1/users/"))

		newLine, newFP := ed25519Key(3, "rotated")
		updated, _, err := e.client.SSHKeys.Update(k.ID, &packngo.SSHKeyUpdateRequest{Key: strPtr(newLine + "\n\n")})
		Expect(err).NotTo(HaveOccurred())
		Expect(updated.Key).To(Equal(newLine + "\n\n"))
		Expect(updated.FingerPrint).To(Equal(newFP))
		Expect(updated.Label).To(Equal("ops"), "a PATCH without a label keeps it")
	})
})

var _ = Describe("IP reservation fidelity", func() {
	It("marks global IPv4 global and metro-less, and assigns it in any metro", func() {
		e := newEnv()
		global, _, err := e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.GlobalIPv4, Quantity: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(global.Global).To(BeTrue())
		Expect(global.Metro).To(BeNil())
		Expect(global.Facility).To(BeNil())
		Expect(global.CIDR).To(Equal(32))

		_, _, err = e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.GlobalIPv4, Quantity: 1, Metro: strPtr("sv")})
		status, _ := apiError(err)
		Expect(status).To(Equal(422), "global addresses belong to no metro")

		d := e.createDevice(func(r *packngo.DeviceCreateRequest) { r.Metro = "da" })
		e.sim.Advance(time.Minute)
		a, _, err := e.client.DeviceIPs.Assign(d.ID, &packngo.AddressStruct{Address: global.Address})
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Global).To(BeTrue())
		Expect(a.Metro).To(BeNil())

		elastic, _, err := e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.PublicIPv4, Quantity: 1, Metro: strPtr("da")})
		Expect(err).NotTo(HaveOccurred())
		Expect(elastic.Global).To(BeFalse())
		Expect(elastic.Metro).NotTo(BeNil())
		Expect(elastic.Metro.Code).To(Equal("da"))
	})

	It("bills elastic blocks as add-ons, never the management blocks a device brings", func() {
		e := newEnv()
		e.createDevice()
		e.sim.Advance(time.Minute)
		_, _, err := e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.PublicIPv4, Quantity: 2, Metro: strPtr("sv")})
		Expect(err).NotTo(HaveOccurred())
		all, _, err := e.client.ProjectIPs.List(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(HaveLen(4), "public IPv4, IPv6 and private IPv4 management blocks, one elastic block")
		for _, r := range all {
			Expect(r.Addon).To(Equal(!r.Management), "addon of %s management=%v", r.Type, r.Management)
			Expect(r.Bill).To(Equal(!r.Management), "bill of %s management=%v", r.Type, r.Management)
		}
	})
})

var _ = Describe("BGP fidelity", func() {
	// deviceAddress is the device's management address of a family and kind.
	deviceAddress := func(e *env, deviceID string, family int, public bool) string {
		ips, _, err := e.client.DeviceIPs.List(deviceID, nil)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		for _, ip := range ips {
			if ip.Management && ip.AddressFamily == family && ip.Public == public {
				return ip.Address
			}
		}
		Fail(fmt.Sprintf("device %s has no management IPv%d address (public=%v)", deviceID, family, public))
		return ""
	}

	It("gives neighbors the routes Packet accepts from and sends to the device", func() {
		e := newEnv()
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		elastic, _, err := e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.PublicIPv4, Quantity: 4, Metro: strPtr("sv")})
		Expect(err).NotTo(HaveOccurred())
		global, _, err := e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.GlobalIPv4, Quantity: 1})
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: packngo.PublicIPv4, Quantity: 1, Metro: strPtr("ny")})
		Expect(err).NotTo(HaveOccurred())
		v6Blocks, _, err := e.client.ProjectIPs.List(projectID, (&packngo.ListOptions{}).Filter("types", "public_ipv6"))
		Expect(err).NotTo(HaveOccurred())
		Expect(v6Blocks).To(HaveLen(1))

		_, err = e.client.BGPConfig.Create(projectID, packngo.CreateBGPConfigRequest{DeploymentType: "local", Asn: 65000, Md5: "Secret1234x"})
		Expect(err).NotTo(HaveOccurred())
		yes := true
		_, _, err = e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: "ipv4", DefaultRoute: &yes})
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(time.Second) // the IPv6 session is the younger one
		_, _, err = e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: "ipv6"})
		Expect(err).NotTo(HaveOccurred())

		neighbors, _, err := e.client.Devices.ListBGPNeighbors(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(neighbors).To(HaveLen(2))
		v4, v6 := neighbors[0], neighbors[1]
		Expect(v4.AddressFamily).To(Equal(4))
		Expect(v4.CustomerIP).To(Equal(deviceAddress(e, d.ID, 4, false)), "IPv4 sessions run over the private address")
		Expect(v4.Md5Enabled).To(BeTrue())
		Expect(v4.Md5Password).To(Equal("Secret1234x"))
		Expect(v4.RoutesIn).To(ConsistOf(
			packngo.BGPRoute{Route: fmt.Sprintf("%s/%d", elastic.Network, elastic.CIDR)},
			packngo.BGPRoute{Route: global.Network + "/32"}), "the project's elastic blocks in the metro, and global ones")
		Expect(v4.RoutesOut).To(ConsistOf(packngo.BGPRoute{Route: "0.0.0.0/0", Exact: true}), "the default route, asked for")

		Expect(v6.AddressFamily).To(Equal(6))
		Expect(v6.CustomerIP).To(Equal(deviceAddress(e, d.ID, 6, true)), "IPv6 sessions run over the public IPv6 address")
		Expect(v6.PeerIps).To(ConsistOf("fc00::e", "fc00::f"))
		Expect(v6.RoutesIn).To(ConsistOf(packngo.BGPRoute{Route: fmt.Sprintf("%s/%d", v6Blocks[0].Network, v6Blocks[0].CIDR)}))
		Expect(v6.RoutesOut).To(BeEmpty())
		Expect(v6.RoutesOut).NotTo(BeNil(), "routes_out is an empty list, never null")
	})

	It("lists neighbors and a config's sessions oldest first, every time", func() {
		e := newEnv()
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		_, err := e.client.BGPConfig.Create(projectID, packngo.CreateBGPConfigRequest{DeploymentType: "local", Asn: 65000})
		Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, family := range []string{"ipv6", "ipv4"} {
			bs, _, err := e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: family})
			Expect(err).NotTo(HaveOccurred())
			ids = append(ids, bs.ID)
			e.sim.Advance(time.Second)
		}
		for range 20 {
			neighbors, _, err := e.client.Devices.ListBGPNeighbors(d.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect([]int{neighbors[0].AddressFamily, neighbors[1].AddressFamily}).To(Equal([]int{6, 4}))
			cfg, _, err := e.client.BGPConfig.Get(projectID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{cfg.Sessions[0].ID, cfg.Sessions[1].ID}).To(Equal(ids))
		}
	})
})

var _ = Describe("hardware reservation fidelity", func() {
	It("serves every field packngo reads, with the device expanded on request", func() {
		e := newEnv()
		const hwID = "00000000-0000-4000-8000-00000000a004"
		d := e.createDevice(func(r *packngo.DeviceCreateRequest) {
			r.Plan, r.HardwareReservationID = "m3.large.x86", hwID
		})
		hw, _, err := e.client.HardwareReservations.Get(hwID, &packngo.GetOptions{Includes: []string{"device", "project"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(hw.ShortID).To(Equal(hwID[:8]))
		Expect(hw.Href).To(Equal("/metal/v1/hardware-reservations/" + hwID))
		Expect(hw.Plan.Slug).To(Equal("m3.large.x86"))
		Expect(hw.Facility.Code).To(Equal("sv16"))
		Expect(hw.Facility.Metro).NotTo(BeNil())
		Expect(hw.Facility.Metro.Code).To(Equal("sv"))
		Expect(hw.Project.ID).To(Equal(projectID))
		Expect(hw.Device).NotTo(BeNil())
		Expect(hw.Device.ID).To(Equal(d.ID))
		Expect(hw.Device.Hostname).To(Equal(d.Hostname))
		Expect(hw.Provisionable).To(BeFalse())
		Expect(hw.Spare).To(BeFalse())
		Expect(hw.SwitchUUID).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`))
		Expect(hw.CreatedAt.Time.IsZero()).To(BeFalse())

		plain, _, err := e.client.HardwareReservations.Get(hwID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(plain.Device.Href).To(Equal("/metal/v1/devices/"+d.ID), "a reference unless included")
		Expect(plain.Device.Hostname).To(BeEmpty())
		Expect(plain.Project.URL).To(Equal("/metal/v1/projects/" + projectID))

		spare, _, err := e.client.HardwareReservations.Get("00000000-0000-4000-8000-00000000a005", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(spare.Spare).To(BeTrue())
		Expect(spare.Provisionable).To(BeFalse(), "spares are not provisionable until activated")
		Expect(spare.Device).To(BeNil())
	})
})
