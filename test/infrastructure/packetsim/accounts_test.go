package packetsim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/packethost/packngo"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

var _ = Describe("accounts: users, organizations and projects", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("shows the current user with a default organization and project, and updates it", func() {
		u, _, err := e.client.Users.Current()
		Expect(err).NotTo(HaveOccurred())
		Expect(u.ID).To(Equal(packetsim.DefaultUserID))
		Expect(u.DefaultOrganizationID).NotTo(BeEmpty())
		Expect(u.DefaultProjectID).To(HaveValue(Equal(projectID)))
		Expect(u.NumberOfSSHKeys).To(Equal(1), "the seed's user key")

		users, _, err := e.client.Users.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(users).To(HaveLen(1))
		Expect(users[0].Email).To(Equal(u.Email))
		got, _, err := e.client.Users.Get(u.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.FullName).To(Equal(u.FullName))

		first, zone := "Ada", "Europe/Amsterdam"
		updated, _, err := e.client.Users.Update(&packngo.UserUpdateRequest{FirstName: &first, Timezone: &zone})
		Expect(err).NotTo(HaveOccurred())
		Expect(updated.FirstName).To(Equal("Ada"))
		Expect(updated.TimeZone).To(Equal(zone))
		Expect(updated.LastName).To(Equal(u.LastName), "absent fields are kept")
		_, _, err = e.client.Users.Get("00000000-0000-4000-8000-00000000ffff", nil)
		status, _ := apiError(err)
		Expect(status).To(Equal(404))
	})

	It("creates, reads, updates and deletes an organization with its payment method", func() {
		org, _, err := e.client.Organizations.Create(&packngo.OrganizationCreateRequest{Name: "acme", Website: "https://acme.example"})
		Expect(err).NotTo(HaveOccurred())
		Expect(org.ID).NotTo(BeEmpty())
		Expect(org.URL).To(Equal("/metal/v1/organizations/" + org.ID))
		Expect(org.PrimaryOwner.URL).To(Equal("/metal/v1/users/" + packetsim.DefaultUserID))

		orgs, _, err := e.client.Organizations.List(&packngo.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(orgs).To(HaveLen(2), "the default organization and acme, over two pages of two")
		Expect(orgs[1].Name).To(Equal("acme"))

		desc := "rockets"
		updated, _, err := e.client.Organizations.Update(org.ID, &packngo.OrganizationUpdateRequest{Description: &desc})
		Expect(err).NotTo(HaveOccurred())
		Expect(updated.Description).To(Equal("rockets"))
		Expect(updated.Website).To(Equal("https://acme.example"))

		methods, _, err := e.client.Organizations.ListPaymentMethods(org.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(methods).To(HaveLen(1))
		Expect(methods[0].Default).To(BeTrue())
		plans, _, err := e.client.Plans.OrganizationList(org.ID, &packngo.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		all, _, err := e.client.Plans.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(all).NotTo(BeEmpty())
		Expect(plans).To(HaveLen(len(all)), "an organization is offered the whole catalog")

		_, _, err = e.client.Organizations.Create(&packngo.OrganizationCreateRequest{})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Name can't be blank"))

		_, err = e.client.Organizations.Delete(org.ID)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.Organizations.Get(org.ID, nil)
		status, _ = apiError(err)
		Expect(status).To(Equal(404))
	})

	It("creates a project in an organization, lists it with its organization, updates and deletes it", func() {
		org, _, err := e.client.Organizations.Create(&packngo.OrganizationCreateRequest{Name: "acme"})
		Expect(err).NotTo(HaveOccurred())
		p, _, err := e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: "edge", OrganizationID: org.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Organization.URL).To(Equal("/metal/v1/organizations/" + org.ID))

		got, _, err := e.client.Projects.Get(p.ID, &packngo.GetOptions{Includes: []string{"organization"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Organization.ID).To(Equal(org.ID), "included in full")
		Expect(got.Organization.Name).To(Equal("acme"))
		methods, _, err := e.client.Organizations.ListPaymentMethods(org.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.PaymentMethod.URL).To(HaveSuffix(methods[0].ID), "billed to its organization")

		all, _, err := e.client.Projects.List(&packngo.ListOptions{Includes: []string{"organization"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(HaveLen(2), "the seed's project and edge")
		Expect(all[0].Organization.ID).NotTo(Equal(org.ID), "seed projects are in the default organization")
		Expect(all[1].Organization.ID).To(Equal(org.ID))
		orgWithProjects, _, err := e.client.Organizations.Get(org.ID, &packngo.GetOptions{Includes: []string{"projects"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(orgWithProjects.Projects).To(HaveLen(1))
		Expect(orgWithProjects.Projects[0].Name).To(Equal("edge"))

		name, transfer := "edge-2", true
		updated, _, err := e.client.Projects.Update(p.ID, &packngo.ProjectUpdateRequest{Name: &name, BackendTransfer: &transfer})
		Expect(err).NotTo(HaveOccurred())
		Expect(updated.Name).To(Equal("edge-2"))
		Expect(updated.BackendTransfer).To(BeTrue())

		events, _, err := e.client.Projects.ListEvents(p.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(events).To(HaveLen(2))
		Expect(events[0].Type).To(Equal("project.updated"), "newest first")
		Expect(events[1].Type).To(Equal("project.created"))
		orgEvents, _, err := e.client.Organizations.ListEvents(org.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(orgEvents).To(HaveLen(2))
		byID, _, err := e.client.Events.Get(events[1].ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(byID.Type).To(Equal("project.created"))

		_, err = e.client.Projects.Delete(p.ID)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = e.client.Projects.Get(p.ID, nil)
		status, _ := apiError(err)
		Expect(status).To(Equal(404))
		_, err = e.client.Organizations.Delete(org.ID)
		Expect(err).NotTo(HaveOccurred())
	})

	It("answers invalid project requests with Packet's 422s", func() {
		_, _, err := e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: " "})
		status, msgs := apiError(err)
		Expect(status).To(Equal(422))
		Expect(msgs).To(ConsistOf("Name can't be blank"))
		long := make([]byte, 81)
		for i := range long {
			long[i] = 'a'
		}
		_, _, err = e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: string(long)})
		_, msgs = apiError(err)
		Expect(msgs).To(ConsistOf("Name is too long (maximum is 80 characters)"))
		_, _, err = e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: "x", OrganizationID: "00000000-0000-4000-8000-00000000ffff"})
		status, _ = apiError(err)
		Expect(status).To(Equal(422))
		_, _, err = e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: "x", PaymentMethodID: "00000000-0000-4000-8000-00000000ffff"})
		_, msgs = apiError(err)
		Expect(msgs[0]).To(ContainSubstring("Payment method"))
	})

	It("deletes a project with what it holds, as the spec's 204 says, devices and elastic IPs too", func() {
		p, _, err := e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: "short-lived"})
		Expect(err).NotTo(HaveOccurred())
		d, _, err := e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "n1", Plan: "c3.small.x86", Metro: "sv",
			OS: "ubuntu_22_04", ProjectID: p.ID})
		Expect(err).NotTo(HaveOccurred())
		metro := "sv"
		eip, _, err := e.client.ProjectIPs.Create(p.ID, &packngo.IPReservationCreateRequest{Type: "public_ipv4", Quantity: 1, Metro: &metro})
		Expect(err).NotTo(HaveOccurred())
		vlan, _, err := e.client.ProjectVirtualNetworks.Create(&packngo.VirtualNetworkCreateRequest{ProjectID: p.ID, Metro: "sv"})
		Expect(err).NotTo(HaveOccurred())
		key, _, err := e.client.SSHKeys.Create(&packngo.SSHKeyCreateRequest{Label: "k", ProjectID: p.ID,
			Key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRZ k"})
		Expect(err).NotTo(HaveOccurred())

		_, err = e.client.Projects.Delete(p.ID)
		Expect(err).NotTo(HaveOccurred())
		for what, get := range map[string]func() error{
			"device":  func() error { _, _, err := e.client.Devices.Get(d.ID, nil); return err },
			"EIP":     func() error { _, _, err := e.client.ProjectIPs.Get(eip.ID, nil); return err },
			"VLAN":    func() error { _, _, err := e.client.ProjectVirtualNetworks.Get(vlan.ID, nil); return err },
			"SSH key": func() error { _, _, err := e.client.SSHKeys.Get(key.ID, nil); return err },
			"project": func() error { _, _, err := e.client.Projects.Get(p.ID, nil); return err },
		} {
			status, _ := apiError(get())
			Expect(status).To(Equal(404), "the project's %s went with it", what)
		}
		Expect(e.sim.Devices(p.ID)).To(BeEmpty())
	})

	It("lets a project API key see its own project and organization only, and create neither", func() {
		e = newEnv(func(o *packetsim.Options) {
			o.Tokens = map[string][]string{packetsim.DefaultToken: nil, "project-key": {projectID}}
		})
		scoped := clientFor(e.http.URL, "project-key")
		projects, _, err := scoped.Projects.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(projects).To(HaveLen(1))
		orgs, _, err := scoped.Organizations.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(orgs).To(HaveLen(1))
		// 401: the spec gives createProject and createOrganization no 403.
		_, _, err = scoped.Projects.Create(&packngo.ProjectCreateRequest{Name: "mine"})
		status, _ := apiError(err)
		Expect(status).To(Equal(401))
		_, _, err = scoped.Organizations.Create(&packngo.OrganizationCreateRequest{Name: "mine"})
		status, _ = apiError(err)
		Expect(status).To(Equal(401))
		_, err = scoped.Projects.Delete(projectID)
		status, _ = apiError(err)
		Expect(status).To(Equal(403))
	})

	It("starts empty, as a new account does, with its user and organization", func() {
		e = newEnv(func(o *packetsim.Options) { o.Seed = packetsim.EmptySeed() })
		projects, _, err := e.client.Projects.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(projects).To(BeEmpty())
		u, _, err := e.client.Users.Current()
		Expect(err).NotTo(HaveOccurred())
		Expect(u.DefaultProjectID).To(BeNil())
		orgs, _, err := e.client.Organizations.List(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(orgs).To(HaveLen(1))
		Expect(orgs[0].ID).To(Equal(u.DefaultOrganizationID))

		p, _, err := e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: "first"})
		Expect(err).NotTo(HaveOccurred())
		u, _, err = e.client.Users.Current()
		Expect(err).NotTo(HaveOccurred())
		Expect(u.DefaultProjectID).To(HaveValue(Equal(p.ID)))
		_, _, err = e.client.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "n1", Plan: "c3.small.x86", Metro: "sv",
			OS: "ubuntu_22_04", ProjectID: p.ID})
		Expect(err).NotTo(HaveOccurred(), "a created project takes devices like a seeded one")
		_, _, err = e.client.Projects.DiscoverBGPSessions(p.ID, nil)
		Expect(err).NotTo(HaveOccurred())
	})

	It("keeps organizations and projects across a restart from the state file", func() {
		stateFile := GinkgoT().TempDir() + "/state.json"
		e = newEnv(func(o *packetsim.Options) { o.StateFile = stateFile })
		org, _, err := e.client.Organizations.Create(&packngo.OrganizationCreateRequest{Name: "acme"})
		Expect(err).NotTo(HaveOccurred())
		p, _, err := e.client.Projects.Create(&packngo.ProjectCreateRequest{Name: "kept", OrganizationID: org.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(e.sim.SaveState()).To(Succeed())

		again := newEnv(func(o *packetsim.Options) { o.StateFile = stateFile })
		got, _, err := again.client.Projects.Get(p.ID, &packngo.GetOptions{Includes: []string{"organization"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Organization.Name).To(Equal("acme"))
	})
})

var _ = Describe("project-scoped calls the other specs do not make", func() {
	It("lists the project's BGP sessions, reboots an active device and updates an IP reservation", func() {
		e := newEnv()
		d := e.createDevice()
		e.sim.Advance(time.Minute)
		_, err := e.client.Devices.Reboot(d.ID)
		Expect(err).NotTo(HaveOccurred())
		events, _, err := e.client.Devices.ListEvents(d.ID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(events[0].Type).To(Equal("power.reboot"))

		_, err = e.client.BGPConfig.Create(projectID, packngo.CreateBGPConfigRequest{DeploymentType: "local", Asn: 65000})
		Expect(err).NotTo(HaveOccurred())
		bs, _, err := e.client.BGPSessions.Create(d.ID, packngo.CreateBGPSessionRequest{AddressFamily: "ipv4"})
		Expect(err).NotTo(HaveOccurred())
		sessions, _, err := e.client.Projects.ListBGPSessions(projectID, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(sessions).To(HaveLen(1))
		Expect(sessions[0].ID).To(Equal(bs.ID))

		metro := "sv"
		res, _, err := e.client.ProjectIPs.Create(projectID, &packngo.IPReservationCreateRequest{Type: "public_ipv4", Quantity: 1, Metro: &metro})
		Expect(err).NotTo(HaveOccurred())
		details := "control plane"
		tags := []string{"a", "b"}
		updated, _, err := e.client.ProjectIPs.Update(res.ID, &packngo.IPAddressUpdateRequest{Description: &details, Tags: &tags}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(updated.Tags).To(Equal(tags))
		Expect(updated.Description).To(HaveValue(Equal(details)))
	})
})
