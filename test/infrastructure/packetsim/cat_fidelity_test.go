package packetsim_test

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"
)

// Conformance of the catalog (plans, metros, facilities, operating systems, capacity, spot
// prices) with what Packet sends, driven only through packngo.
var _ = Describe("catalog fidelity", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	plan := func(plans []packngo.Plan, slug string) packngo.Plan {
		i := slices.IndexFunc(plans, func(p packngo.Plan) bool { return p.Slug == slug })
		ExpectWithOffset(1, i).To(BeNumerically(">=", 0), "plan %s is listed", slug)
		return plans[i]
	}
	slugs := func(plans []packngo.Plan) []string {
		var out []string
		for _, p := range plans {
			out = append(out, p.Slug)
		}
		return out
	}

	It("sends Packet's deployment types and filters plans by deployment_type, as packngo's own tests do", func() {
		all, _, err := e.client.Plans.List(nil)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range all {
			for _, t := range p.DeploymentTypes {
				Expect(t).To(BeElementOf("on_demand", "spot_market"), p.Slug)
			}
		}
		Expect(plan(all, "c3.small.x86").DeploymentTypes).To(ConsistOf("on_demand", "spot_market"))
		Expect(plan(all, "c2.medium.x86").DeploymentTypes).To(BeEmpty(), "sold only through hardware reservations")

		onDemand, _, err := e.client.Plans.List((&packngo.ListOptions{Includes: []string{"available_in"}}).Filter("deployment_type", "on_demand"))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(onDemand)).To(BeNumerically("<", len(all)))
		Expect(slugs(onDemand)).To(ContainElement("c3.small.x86"))
		Expect(slugs(onDemand)).NotTo(ContainElement("c2.medium.x86"))
	})

	It("filters a project's plans by slug, type and categories", func() {
		bySlug, _, err := e.client.Plans.ProjectList(projectID, (&packngo.ListOptions{}).Filter("slug", "m3.small.x86"))
		Expect(err).NotTo(HaveOccurred())
		Expect(slugs(bySlug)).To(Equal([]string{"m3.small.x86"}))
		legacy, _, err := e.client.Plans.ProjectList(projectID, (&packngo.ListOptions{}).Filter("categories", "legacy_gen"))
		Expect(err).NotTo(HaveOccurred())
		Expect(slugs(legacy)).To(Equal([]string{"c2.medium.x86"}))
		custom, _, err := e.client.Plans.List((&packngo.ListOptions{}).Filter("type", "custom"))
		Expect(err).NotTo(HaveOccurred())
		Expect(custom).To(BeEmpty())
	})

	It("expands available_in and available_in_metros into full objects only when included", func() {
		plain, _, err := e.client.Plans.ProjectList(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		ref := plan(plain, "c3.small.x86").AvailableIn[0]
		Expect(ref.URL).To(HavePrefix("/metal/v1/facilities/"))
		Expect(ref.Name).To(BeEmpty(), "a reference, not the facility")

		Expect(plan(plain, "c3.small.x86").AvailableInMetros[0].Code).To(BeEmpty(), "metros are references too")

		full, _, err := e.client.Plans.ProjectList(projectID, &packngo.ListOptions{Includes: []string{"available_in", "available_in_metros"}})
		Expect(err).NotTo(HaveOccurred())
		small := plan(full, "c3.small.x86")
		codes := map[string]string{}
		for _, f := range small.AvailableIn {
			Expect(f.ID).NotTo(BeEmpty())
			Expect(f.Name).NotTo(BeEmpty())
			Expect(f.Metro).NotTo(BeNil())
			codes[f.Code] = f.Metro.Code
		}
		Expect(codes).To(HaveKeyWithValue("ams1", "am"))
		Expect(codes).NotTo(HaveKey("sg1"))
		var metros []string
		for _, m := range small.AvailableInMetros {
			metros = append(metros, m.Code)
		}
		Expect(metros).To(ContainElements("sv", "ty", "fr", "am"))
	})

	It("serves the facilities and images packngo's examples and tests deploy to", func() {
		facilities, _, err := e.client.Facilities.List(nil)
		Expect(err).NotTo(HaveOccurred())
		metroOf := map[string]string{}
		for _, f := range facilities {
			metroOf[f.Code] = f.Metro.Code
		}
		Expect(metroOf).To(And(HaveKeyWithValue("nrt1", "ty"), HaveKeyWithValue("dfw1", "da"), HaveKeyWithValue("fra1", "fr"),
			HaveKeyWithValue("ams1", "am"), HaveKeyWithValue("ewr1", "ny"), HaveKeyWithValue("sjc1", "sv"),
			HaveKeyWithValue("ny5", "ny"), HaveKeyWithValue("dc13", "dc")))

		oses, _, err := e.client.OperatingSystems.List()
		Expect(err).NotTo(HaveOccurred())
		var osSlugs []string
		for _, o := range oses {
			osSlugs = append(osSlugs, o.Slug)
		}
		Expect(osSlugs).To(ContainElements("ubuntu_18_04", "ubuntu_20_04", "centos_7", "coreos_stable", "custom_ipxe"))

		// packngo's TestAccDeviceCreateFacilities and TestAccCheckCapacity.
		d, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "facilities", Plan: "c3.small.x86",
			OS: "ubuntu_18_04", ProjectID: projectID, BillingCycle: "hourly", Facility: []string{"nrt1", "dfw1", "fra1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Facility.Code).To(BeElementOf("nrt1", "dfw1", "fra1"))
		Expect(d.OS.Slug).To(Equal("ubuntu_18_04"))
		check, _, err := e.client.CapacityService.Check(&packngo.CapacityInput{Servers: []packngo.ServerInfo{
			{Facility: "ams1", Plan: "c3.small.x86", Quantity: 1}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(check.Servers).To(HaveLen(1))
		Expect(check.Servers[0].Available).To(BeTrue())
	})

	It("sends a facility's address whole, as the spec's Facility has it, included or not", func() {
		plain, _, err := e.client.Facilities.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(plain[0].Address).NotTo(BeNil())
		Expect(plain[0].Address.Country).NotTo(BeEmpty(), "the spec requires address, country and zip_code")

		full, _, err := e.client.Facilities.List(&packngo.ListOptions{Includes: []string{"address"}})
		Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(full, func(f packngo.Facility) bool { return f.Code == "sjc1" })
		Expect(i).To(BeNumerically(">=", 0))
		addr := full[i].Address
		Expect(addr.ID).NotTo(BeEmpty())
		Expect(addr.City).To(HaveValue(Equal("Sunnyvale")))
		Expect(addr.State).To(HaveValue(Equal("CA")))
		Expect(addr.Country).To(Equal("US"))
		Expect(addr.Coordinates).NotTo(BeNil())
		Expect(addr.Coordinates.Latitude).To(HaveValue(Equal("37.3688")))
	})

	It("reports capacity by facility code on /capacity and by metro code on /capacity/metros", func() {
		byFacility, _, err := e.client.CapacityService.List()
		Expect(err).NotTo(HaveOccurred())
		Expect(*byFacility).To(And(HaveKey("sv15"), HaveKey("nrt1"), Not(HaveKey("sv"))))
		Expect((*byFacility)["sjc1"]["c3.small.x86"].Level).To(Equal("normal"))
		byMetro, _, err := e.client.CapacityService.ListMetros()
		Expect(err).NotTo(HaveOccurred())
		Expect(*byMetro).To(And(HaveKey("sv"), Not(HaveKey("sv15"))))
		Expect((*byMetro)["sv"]["c2.medium.x86"].Level).To(Equal("unavailable"), "no on-demand servers of a reserved-only plan")
	})

	It("checks capacity for metros and plans named by ID as well as by code and slug", func() {
		metros, _, err := e.client.Metros.List(nil)
		Expect(err).NotTo(HaveOccurred())
		plans, _, err := e.client.Plans.List(nil)
		Expect(err).NotTo(HaveOccurred())
		sv := metros[slices.IndexFunc(metros, func(m packngo.Metro) bool { return m.Code == "sv" })]
		check, _, err := e.client.CapacityService.CheckMetros(&packngo.CapacityInput{Servers: []packngo.ServerInfo{
			{Metro: sv.ID, Plan: plan(plans, "c3.small.x86").ID, Quantity: 2},
			{Metro: "SV", Plan: "c3.small.x86", Quantity: 51},
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(check.Servers).To(HaveLen(2))
		Expect(check.Servers[0].Available).To(BeTrue())
		Expect(check.Servers[1].Available).To(BeFalse(), "50 servers in sv")
	})

	It("sends the operating system, plan and metro fields packngo's models leave out", func() {
		var oses struct {
			OperatingSystems []map[string]any `json:"operating_systems"`
		}
		_, err := e.client.DoRequest("GET", "/operating-systems", nil, &oses)
		Expect(err).NotTo(HaveOccurred())
		Expect(oses.OperatingSystems[0]).To(And(HaveKeyWithValue("distro_label", "Ubuntu"), HaveKeyWithValue("licensed", false),
			HaveKeyWithValue("default_operating_system", false), HaveKeyWithValue("pricing", BeEmpty()), HaveKey("id")))

		var plans struct {
			Plans []map[string]any `json:"plans"`
		}
		_, err = e.client.DoRequest("GET", "/plans?slug=c3.small.x86", nil, &plans)
		Expect(err).NotTo(HaveOccurred())
		Expect(plans.Plans).To(HaveLen(1))
		Expect(plans.Plans[0]).To(And(HaveKeyWithValue("type", "standard"),
			HaveKeyWithValue("categories", ConsistOf("compute", "current_gen")), HaveKeyWithValue("legacy", false)))

		var metros struct {
			Metros []map[string]any `json:"metros"`
		}
		_, err = e.client.DoRequest("GET", "/locations/metros", nil, &metros)
		Expect(err).NotTo(HaveOccurred())
		Expect(metros.Metros[0]).To(And(HaveKey("id"), HaveKey("code"), HaveKey("name"), HaveKey("country"), Not(HaveKey("href"))))
	})

	It("leaves plans not sold on the spot market out of its prices", func() {
		byMetro, _, err := e.client.SpotMarket.PricesByMetro()
		Expect(err).NotTo(HaveOccurred())
		Expect(byMetro["sv"]).To(HaveKey("c3.small.x86"))
		Expect(byMetro["sv"]).NotTo(HaveKey("c2.medium.x86"))
		byFacility, _, err := e.client.SpotMarket.PricesByFacility()
		Expect(err).NotTo(HaveOccurred())
		Expect(byFacility["nrt1"]).To(HaveKeyWithValue("c3.small.x86", BeNumerically("==", 0.15)))
	})
})

var _ = Describe("catalog: deployment types at device create", func() {
	It("refuses an on-demand or spot device of a plan sold only through reservations, naming the plan", func() {
		e := newEnv()
		for _, spot := range []bool{false, true} {
			_, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "n1", Plan: "c2.medium.x86", Metro: "sv",
				OS: "ubuntu_22_04", ProjectID: projectID, SpotInstance: spot, SpotPriceMax: 1})
			status, msgs := apiError(err)
			Expect(status).To(Equal(422), "not the capacity 503")
			Expect(msgs[0]).To(ContainSubstring("c2.medium.x86"))
		}
	})
})
