package packetsim_test

import (
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"
)

// Conformance of the port modes (network types) and VLAN assignments with Packet's, driven
// only through packngo over HTTP: each mode reached from a fresh layer-3 device and back, the
// single and batched VLAN assignments, and what Packet refuses on the way.
var _ = Describe("network modes", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	// active creates a device and waits until it is active.
	active := func() *packngo.Device {
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		got, err := e.getDevice(d.ID)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ExpectWithOffset(1, got.State).To(Equal("active"))
		return got
	}
	port := func(d *packngo.Device, name string) *packngo.Port {
		p, err := d.GetPortByName(name)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return p
	}
	vlan := func(metro string) *packngo.VirtualNetwork {
		vn, _, err := e.client.ProjectVirtualNetworks.Create(&packngo.VirtualNetworkCreateRequest{ProjectID: projectID, Metro: metro})
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return vn
	}
	// rawNetworkType is the device JSON's network_type, which packngo does not decode.
	rawNetworkType := func(id string) string {
		req, err := e.client.NewRequest("GET", "/devices/"+id, nil)
		ExpectWithOffset(2, err).NotTo(HaveOccurred())
		var out struct {
			NetworkType string `json:"network_type"`
		}
		_, err = e.client.Do(req, &out)
		ExpectWithOffset(2, err).NotTo(HaveOccurred())
		return out.NetworkType
	}
	// expectMode checks a mode the way a client sees it: the device's network_type, packngo's
	// GetNetworkType (which tells hybrid-bonded from layer3 only by the bond's VLANs), the
	// ports' bonds, network_type on bond0 alone, and the management addresses.
	expectMode := func(id, mode string) *packngo.Device {
		d, err := e.getDevice(id)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ExpectWithOffset(1, rawNetworkType(id)).To(Equal(mode))
		want := mode
		if mode == "hybrid-bonded" {
			want = packngo.NetworkTypeL3
		}
		ExpectWithOffset(1, d.GetNetworkType()).To(Equal(want))
		bonded := map[string][3]bool{
			"layer3": {true, true, true}, "hybrid-bonded": {true, true, true}, "layer2-bonded": {true, true, true},
			"hybrid": {true, true, false}, "layer2-individual": {false, false, false},
		}[mode]
		for i, name := range []string{"bond0", "eth0", "eth1"} {
			p := port(d, name)
			ExpectWithOffset(1, p.Data.Bonded).To(Equal(bonded[i]), "%s bonded in %s", name, mode)
			if name == "bond0" {
				ExpectWithOffset(1, p.NetworkType).To(Equal(mode))
			} else {
				ExpectWithOffset(1, p.NetworkType).To(BeEmpty(), "network_type is only set on bond ports")
			}
		}
		layer2 := mode == "layer2-bonded" || mode == "layer2-individual"
		ExpectWithOffset(1, d.HasManagementIPs()).To(Equal(!layer2), "management addresses in %s", mode)
		return d
	}
	expect422 := func(err error, words ...string) {
		status, msgs := apiError(err)
		ExpectWithOffset(1, status).To(Equal(422))
		for _, w := range words {
			ExpectWithOffset(1, msgs).To(ContainElement(ContainSubstring(w)))
		}
	}

	Describe("each mode from layer3 and back", func() {
		It("starts in layer3: bond0 over eth0 and eth1, with management addresses", func() {
			d := active()
			expectMode(d.ID, "layer3")
			Expect(d.Network).To(HaveLen(3))
		})

		It("reaches hybrid-bonded by assigning a VLAN to bond0, and leaves it by unassigning", func() {
			d := active()
			vn := vlan("sv")
			p, _, err := e.client.Ports.Assign(port(d, "bond0").ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.NetworkType).To(Equal("hybrid-bonded"))
			Expect(p.AttachedVirtualNetworks).To(HaveLen(1))
			expectMode(d.ID, "hybrid-bonded")
			_, _, err = e.client.Ports.Unassign(port(d, "bond0").ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			expectMode(d.ID, "layer3")
		})

		It("reaches hybrid by disbonding eth1, VLANs on eth1; back by unassigning and bonding it", func() {
			d := active()
			vn := vlan("sv")
			eth1 := port(d, "eth1")
			p, _, err := e.client.Ports.Disbond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Data.Bonded).To(BeFalse())
			expectMode(d.ID, "hybrid")
			_, _, err = e.client.Ports.Assign(eth1.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			got := expectMode(d.ID, "hybrid")
			Expect(port(got, "eth1").AttachedVirtualNetworks).To(HaveLen(1))
			Expect(port(got, "bond0").AttachedVirtualNetworks).To(BeEmpty())

			_, _, err = e.client.Ports.Bond(eth1.ID, false)
			expect422(err, "unassigned before bonding")
			_, _, err = e.client.Ports.Unassign(eth1.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			p, _, err = e.client.Ports.Bond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Data.Bonded).To(BeTrue())
			expectMode(d.ID, "layer3")
		})

		It("reaches layer2-bonded by converting bond0, VLANs on bond0; back with convert/layer-3", func() {
			d := active()
			vn := vlan("sv")
			bond := port(d, "bond0")
			p, _, err := e.client.Ports.ConvertToLayerTwo(bond.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.NetworkType).To(Equal("layer2-bonded"))
			got := expectMode(d.ID, "layer2-bonded")
			Expect(got.Network).To(BeEmpty())
			_, _, err = e.client.Ports.Assign(bond.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			expectMode(d.ID, "layer2-bonded")

			_, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, nil)
			expect422(err, "Virtual networks must be unassigned before converting to layer 3")
			_, _, err = e.client.Ports.Unassign(bond.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			p, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.NetworkType).To(Equal("layer3"))
			got = expectMode(d.ID, "layer3")
			Expect(got.Network).To(HaveLen(3), "new management addresses")
		})

		It("reaches layer2-individual by converting bond0 and disbonding all; VLANs on eth0 and eth1", func() {
			d := active()
			vn1, vn2 := vlan("sv"), vlan("sv")
			bond, eth0, eth1 := port(d, "bond0"), port(d, "eth0"), port(d, "eth1")
			_, _, err := e.client.Ports.ConvertToLayerTwo(bond.ID)
			Expect(err).NotTo(HaveOccurred())
			p, _, err := e.client.Ports.Disbond(bond.ID, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.NetworkType).To(Equal("layer2-individual"))
			expectMode(d.ID, "layer2-individual")
			_, _, err = e.client.Ports.Assign(eth0.ID, vn1.ID)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Assign(eth1.ID, vn2.ID)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Assign(bond.ID, vn1.ID)
			expect422(err, "Bond port is disbonded")
			got := expectMode(d.ID, "layer2-individual")
			Expect(port(got, "eth0").AttachedVirtualNetworks).To(HaveLen(1))
			Expect(port(got, "eth1").AttachedVirtualNetworks).To(HaveLen(1))

			_, _, err = e.client.Ports.Bond(bond.ID, true)
			expect422(err, "unassigned before bonding")
			_, _, err = e.client.Ports.Unassign(eth0.ID, vn1.ID)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Unassign(eth1.ID, vn2.ID)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Bond(bond.ID, true)
			Expect(err).NotTo(HaveOccurred())
			expectMode(d.ID, "layer2-bonded")
			_, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			expectMode(d.ID, "layer3")
		})
	})

	Describe("VLAN assignment", func() {
		It("refuses an eth port still in its bond, and a VLAN of another metro", func() {
			d := active()
			vn, far := vlan("sv"), vlan("da")
			for _, name := range []string{"eth0", "eth1"} {
				_, _, err := e.client.Ports.Assign(port(d, name).ID, vn.ID)
				expect422(err, "Port is bonded")
			}
			_, _, err := e.client.Ports.Assign(port(d, "bond0").ID, far.ID)
			expect422(err, "metro")
			expectMode(d.ID, "layer3")
		})

		It("refuses a second assignment of the same VLAN and an unassignment of one not there", func() {
			d := active()
			vn := vlan("sv")
			bond := port(d, "bond0")
			_, _, err := e.client.Ports.Assign(bond.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Assign(bond.ID, vn.ID)
			expect422(err, "already assigned")
			p, _, err := e.client.Ports.Get(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.AttachedVirtualNetworks).To(HaveLen(1))
			_, _, err = e.client.Ports.Unassign(bond.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Unassign(bond.ID, vn.ID)
			expect422(err, "not assigned")
		})

		It("keeps a VLAN while it is assigned, and deletes it once unassigned", func() {
			d := active()
			vn := vlan("sv")
			eth1 := port(d, "eth1")
			_, _, err := e.client.Ports.Disbond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Assign(eth1.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			_, err = e.client.ProjectVirtualNetworks.Delete(vn.ID)
			expect422(err, "still assigned")
			_, _, err = e.client.Ports.Unassign(eth1.ID, vn.ID)
			Expect(err).NotTo(HaveOccurred())
			_, err = e.client.ProjectVirtualNetworks.Delete(vn.ID)
			Expect(err).NotTo(HaveOccurred())
		})
	})

	Describe("devices not active, and repeated conversions", func() {
		It("refuses every port change on a provisioning device with a 422, and still shows its ports", func() {
			d := e.createDevice()
			e.sim.Advance(3 * time.Second)
			got, err := e.getDevice(d.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.State).To(Equal("provisioning"))
			vn := vlan("sv")
			bond, eth1 := port(got, "bond0"), port(got, "eth1")
			_, _, err = e.client.Ports.Assign(bond.ID, vn.ID)
			expect422(err, "Device must be active")
			_, _, err = e.client.Ports.Disbond(eth1.ID, false)
			expect422(err, "Device must be active")
			_, _, err = e.client.Ports.Bond(eth1.ID, false)
			expect422(err, "Device must be active")
			_, _, err = e.client.Ports.ConvertToLayerTwo(bond.ID)
			expect422(err, "Device must be active")
			_, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, nil)
			expect422(err, "Device must be active")
			_, _, err = e.client.VLANAssignments.CreateBatch(bond.ID, &packngo.VLANAssignmentBatchCreateRequest{
				VLANAssignments: []packngo.VLANAssignmentCreateRequest{{VLAN: vn.ID, State: packngo.VLANAssignmentAssigned}}}, nil)
			expect422(err, "Device must be active")
			p, _, err := e.client.Ports.Get(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.NetworkType).To(Equal("layer3"))
		})

		It("answers a repeated bond, disbond or conversion with the port unchanged", func() {
			d := active()
			bond, eth1 := port(d, "bond0"), port(d, "eth1")
			for range 2 {
				p, _, err := e.client.Ports.Bond(eth1.ID, false)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Data.Bonded).To(BeTrue())
				p, _, err = e.client.Ports.ConvertToLayerThree(bond.ID, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.NetworkType).To(Equal("layer3"))
			}
			got := expectMode(d.ID, "layer3")
			Expect(got.Network).To(HaveLen(3), "no second set of addresses")
			for range 2 {
				p, _, err := e.client.Ports.Disbond(eth1.ID, false)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Data.Bonded).To(BeFalse())
			}
			expectMode(d.ID, "hybrid")
			_, _, err := e.client.Ports.Bond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			for range 2 {
				p, _, err := e.client.Ports.ConvertToLayerTwo(bond.ID)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.NetworkType).To(Equal("layer2-bonded"))
			}
			for range 2 {
				_, _, err := e.client.Ports.Disbond(bond.ID, true)
				Expect(err).NotTo(HaveOccurred())
			}
			p, _, err := e.client.Ports.ConvertToLayerTwo(bond.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.NetworkType).To(Equal("layer2-individual"), "converting to layer 2 again keeps the ports apart")
			expectMode(d.ID, "layer2-individual")
		})

		It("refuses to disbond all ports of a bond still in layer 3", func() {
			d := active()
			_, _, err := e.client.Ports.Disbond(port(d, "bond0").ID, true)
			expect422(err, "converted to layer 2")
			expectMode(d.ID, "layer3")
		})
	})

	Describe("VLAN assignment batches", func() {
		batchOf := func(items ...packngo.VLANAssignmentCreateRequest) *packngo.VLANAssignmentBatchCreateRequest {
			return &packngo.VLANAssignmentBatchCreateRequest{VLANAssignments: items}
		}
		assign := func(vlan string) packngo.VLANAssignmentCreateRequest {
			return packngo.VLANAssignmentCreateRequest{VLAN: vlan, State: packngo.VLANAssignmentAssigned}
		}
		unassign := func(vlan string) packngo.VLANAssignmentCreateRequest {
			return packngo.VLANAssignmentCreateRequest{VLAN: vlan, State: packngo.VLANAssignmentUnassigned}
		}

		It("assigns several VLANs to bond0, queued, in progress, then completed on the clock", func() {
			d := active()
			vn1, vn2 := vlan("sv"), vlan("sv")
			bond := port(d, "bond0")
			// A VLAN is named by its UUID or its VXLAN, as the API takes both.
			b, _, err := e.client.VLANAssignments.CreateBatch(bond.ID, batchOf(assign(vn1.ID), assign(strconv.Itoa(vn2.VXLAN))), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.State).To(Equal(packngo.VLANAssignmentBatchQueued))
			Expect(b.Quantity).To(Equal(2))
			Expect(b.VLANAssignments).To(HaveLen(2))
			Expect(b.VLANAssignments[0].VirtualNetworkID).To(Equal(vn1.ID))
			Expect(b.VLANAssignments[1].VLAN).To(Equal(vn2.VXLAN))
			Expect(b.Port.Href.Href).To(Equal("/metal/v1/ports/" + bond.ID))
			p, _, err := e.client.Ports.Get(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.AttachedVirtualNetworks).To(BeEmpty(), "nothing changes before the batch runs")

			e.sim.Advance(time.Second)
			b, _, err = e.client.VLANAssignments.GetBatch(bond.ID, b.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.State).To(Equal(packngo.VLANAssignmentBatchInProgress))
			expectMode(d.ID, "layer3")

			e.sim.Advance(2 * time.Second)
			b, _, err = e.client.VLANAssignments.GetBatch(bond.ID, b.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.State).To(Equal(packngo.VLANAssignmentBatchCompleted))
			Expect(b.ErrorMessages).To(BeEmpty())
			expectMode(d.ID, "hybrid-bonded")
			list, _, err := e.client.VLANAssignments.List(bond.ID, &packngo.ListOptions{Includes: []string{"virtual_network"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(list).To(HaveLen(2))
			vxlans := []int{}
			for _, a := range list {
				Expect(a.State).To(Equal(packngo.VLANAssignmentAssigned))
				Expect(a.VirtualNetwork).NotTo(BeNil())
				Expect(a.VirtualNetwork.VXLAN).To(Equal(a.VLAN))
				one, _, err := e.client.VLANAssignments.Get(bond.ID, a.ID, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(one.VLAN).To(Equal(a.VLAN))
				vxlans = append(vxlans, a.VLAN)
			}
			Expect(vxlans).To(ConsistOf(vn1.VXLAN, vn2.VXLAN))

			// One batch both unassigns and assigns; the list of batches pages (two per page here).
			vn3 := vlan("sv")
			_, _, err = e.client.VLANAssignments.CreateBatch(bond.ID, batchOf(unassign(vn1.ID), unassign(vn2.ID)), nil)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.VLANAssignments.CreateBatch(bond.ID, batchOf(assign(vn3.ID)), nil)
			Expect(err).NotTo(HaveOccurred())
			e.sim.Advance(3 * time.Second)
			batches, _, err := e.client.VLANAssignments.ListBatch(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(batches).To(HaveLen(3))
			for _, b := range batches {
				Expect(b.State).To(Equal(packngo.VLANAssignmentBatchCompleted))
			}
			list, _, err = e.client.VLANAssignments.List(bond.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(list).To(HaveLen(1))
			Expect(list[0].VLAN).To(Equal(vn3.VXLAN))
			expectMode(d.ID, "hybrid-bonded")
		})

		It("sets the native VLAN of eth1 in hybrid mode", func() {
			d := active()
			vn1, vn2 := vlan("sv"), vlan("sv")
			eth1 := port(d, "eth1")
			_, _, err := e.client.Ports.Disbond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			native := true
			_, _, err = e.client.VLANAssignments.CreateBatch(eth1.ID, batchOf(assign(vn1.ID),
				packngo.VLANAssignmentCreateRequest{VLAN: vn2.ID, State: packngo.VLANAssignmentAssigned, Native: &native}), nil)
			Expect(err).NotTo(HaveOccurred())
			e.sim.Advance(3 * time.Second)
			p, _, err := e.client.Ports.Get(eth1.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.AttachedVirtualNetworks).To(HaveLen(2))
			Expect(p.NativeVirtualNetwork).NotTo(BeNil())
			Expect(p.NativeVirtualNetwork.ID).To(Equal(vn2.ID))
			expectMode(d.ID, "hybrid")
		})

		It("refuses a batch for a bonded eth port, another metro's VLAN, or nothing, with a 422", func() {
			d := active()
			vn, far := vlan("sv"), vlan("da")
			_, _, err := e.client.VLANAssignments.CreateBatch(port(d, "eth1").ID, batchOf(assign(vn.ID)), nil)
			expect422(err, "Port is bonded")
			_, _, err = e.client.VLANAssignments.CreateBatch(port(d, "bond0").ID, batchOf(assign(far.ID)), nil)
			expect422(err, "metro")
			_, _, err = e.client.VLANAssignments.CreateBatch(port(d, "bond0").ID, batchOf(), nil)
			expect422(err)
			batches, _, err := e.client.VLANAssignments.ListBatch(port(d, "bond0").ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(batches).To(BeEmpty())
		})

		It("fails a batch whose port went back into its bond before it ran", func() {
			d := active()
			vn := vlan("sv")
			eth1 := port(d, "eth1")
			_, _, err := e.client.Ports.Disbond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			b, _, err := e.client.VLANAssignments.CreateBatch(eth1.ID, batchOf(assign(vn.ID)), nil)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = e.client.Ports.Bond(eth1.ID, false)
			Expect(err).NotTo(HaveOccurred())
			e.sim.Advance(3 * time.Second)
			b, _, err = e.client.VLANAssignments.GetBatch(eth1.ID, b.ID, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.State).To(Equal(packngo.VLANAssignmentBatchFailed))
			Expect(b.ErrorMessages).To(ConsistOf(ContainSubstring("Port is bonded")))
			expectMode(d.ID, "layer3")
		})
	})
})
