package packetsim_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// The second client: equinix-sdk-go's metalv1, generated from the published spec, is what the
// previous provider v0.9.0, metal-cli and the Terraform provider use. Its models refuse an answer
// that misses a required field or has a value outside an enum, so each call below decoding without
// error is the proof that the simulator's answers are Packet's shape for a client other than packngo.
var _ = Describe("equinix-sdk-go metalv1 client", func() {
	var (
		e   *env
		api *metalv1.APIClient
		ctx context.Context
	)
	BeforeEach(func() {
		e = newEnv()
		cfg := metalv1.NewConfiguration()
		cfg.Servers = metalv1.ServerConfigurations{{URL: e.http.URL + "/metal/v1"}}
		cfg.AddDefaultHeader("X-Auth-Token", packetsim.DefaultToken)
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
		api = metalv1.NewAPIClient(cfg)
		ctx = context.Background()
	})

	It("decodes the account, the catalog and capacity", func() {
		user, _, err := api.UsersApi.FindCurrentUser(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(user.GetId()).NotTo(BeEmpty())
		users, _, err := api.UsersApi.FindUsers(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(users.Users).NotTo(BeEmpty())
		Expect(users.Users[0].GetEmail()).NotTo(BeEmpty(), "GET /users shows each user's email")

		orgs, _, err := api.OrganizationsApi.FindOrganizations(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(orgs.Organizations).NotTo(BeEmpty())
		_, _, err = api.OrganizationsApi.FindOrganizationById(ctx, orgs.Organizations[0].GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		projects, _, err := api.ProjectsApi.FindProjects(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(projects.Projects).NotTo(BeEmpty())

		metros, _, err := api.MetrosApi.FindMetros(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(metros.Metros).NotTo(BeEmpty())
		_, _, err = api.MetrosApi.GetMetro(ctx, metros.Metros[0].GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		facilities, _, err := api.FacilitiesApi.FindFacilities(ctx).Include([]metalv1.FindFacilitiesIncludeParameterInner{metalv1.FINDFACILITIESINCLUDEPARAMETERINNER_ADDRESS}).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(facilities.Facilities).NotTo(BeEmpty())
		plans, _, err := api.PlansApi.FindPlans(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(plans.Plans).NotTo(BeEmpty())
		_, _, err = api.PlansApi.FindPlansByProject(ctx, projectID).Execute()
		Expect(err).NotTo(HaveOccurred())
		oses, _, err := api.OperatingSystemsApi.FindOperatingSystems(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(oses.OperatingSystems).NotTo(BeEmpty())
		_, _, err = api.CapacityApi.FindCapacityForMetro(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.SpotMarketApi.FindMetroSpotMarketPrices(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.HardwareReservationsApi.FindProjectHardwareReservations(ctx, projectID).Execute()
		Expect(err).NotTo(HaveOccurred())
	})

	It("creates a project with a device, an IP, a BGP session and an SSH key, and deletes them all", func() {
		orgs, _, err := api.OrganizationsApi.FindOrganizations(ctx).Execute()
		Expect(err).NotTo(HaveOccurred())
		orgID := orgs.Organizations[0].GetId()
		in := metalv1.NewProjectCreateFromRootInput("sdk-project")
		in.SetOrganizationId(orgID)
		project, _, err := api.ProjectsApi.CreateProject(ctx).ProjectCreateFromRootInput(*in).Execute()
		Expect(err).NotTo(HaveOccurred())
		org := project.GetOrganization()
		Expect(org.GetId()+fmt.Sprint(org.AdditionalProperties["href"])).To(ContainSubstring(orgID),
			"the project is in the organization asked for")
		pid := project.GetId()

		_, err = api.BGPApi.RequestBgpConfig(ctx, pid).
			BgpConfigRequestInput(*metalv1.NewBgpConfigRequestInput(65000, metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL)).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.BGPApi.FindBgpConfigByProject(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred())

		create := metalv1.NewDeviceCreateInMetroInput("sv", "ubuntu_22_04", "c3.small.x86")
		create.SetHostname("sdk-node")
		create.SetTags([]string{"sdk"})
		device, _, err := api.DevicesApi.CreateDevice(ctx, pid).
			CreateDeviceRequest(metalv1.DeviceCreateInMetroInputAsCreateDeviceRequest(create)).Execute()
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(time.Minute)
		device, _, err = api.DevicesApi.FindDeviceById(ctx, device.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(device.GetState()).To(Equal(metalv1.DEVICESTATE_ACTIVE))
		_, _, err = api.DevicesApi.FindProjectDevices(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.EventsApi.FindDeviceEvents(ctx, device.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.EventsApi.FindProjectEvents(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred())
		upd := metalv1.NewDeviceUpdateInput()
		upd.SetDescription("updated")
		_, _, err = api.DevicesApi.UpdateDevice(ctx, device.GetId()).DeviceUpdateInput(*upd).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, err = api.DevicesApi.PerformAction(ctx, device.GetId()).
			DeviceActionInput(*metalv1.NewDeviceActionInput(metalv1.DEVICEACTIONINPUTTYPE_REBOOT)).Execute()
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(time.Minute)
		for _, p := range device.NetworkPorts {
			_, _, err = api.PortsApi.FindPortById(ctx, p.GetId()).Execute()
			Expect(err).NotTo(HaveOccurred())
		}

		ipIn := metalv1.NewIPReservationRequestInput(1, "public_ipv4")
		ipIn.SetMetro("sv")
		reserved, _, err := api.IPAddressesApi.RequestIPReservation(ctx, pid).
			RequestIPReservationRequest(metalv1.IPReservationRequestInputAsRequestIPReservationRequest(ipIn)).Execute()
		Expect(err).NotTo(HaveOccurred())
		ip := reserved.IPReservation
		Expect(ip).NotTo(BeNil(), "a public IPv4 reservation decodes as an IPReservation")
		_, _, err = api.IPAddressesApi.FindIPReservations(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.IPAddressesApi.FindIPAddressById(ctx, ip.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		assignment, _, err := api.DevicesApi.CreateIPAssignment(ctx, device.GetId()).
			IPAssignmentInput(*metalv1.NewIPAssignmentInput(ip.GetAddress() + "/32")).Execute()
		Expect(err).NotTo(HaveOccurred())
		Expect(assignment.GetType()).To(Equal(metalv1.IPASSIGNMENTTYPE_IP_ASSIGNMENT))
		_, _, err = api.DevicesApi.FindIPAssignments(ctx, device.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())

		session, _, err := api.DevicesApi.CreateBgpSession(ctx, device.GetId()).
			BGPSessionInput(metalv1.BGPSessionInput{AddressFamily: metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4.Ptr()}).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.BGPApi.FindBgpSessionById(ctx, session.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.DevicesApi.FindBgpSessions(ctx, device.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.DevicesApi.GetBgpNeighborData(ctx, device.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())

		keyIn := metalv1.NewSSHKeyCreateInput()
		keyIn.SetLabel("sdk-key")
		keyIn.SetKey(testSSHKey)
		key, _, err := api.SSHKeysApi.CreateProjectSSHKey(ctx, pid).SSHKeyCreateInput(*keyIn).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.SSHKeysApi.FindProjectSSHKeys(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.SSHKeysApi.FindSSHKeyById(ctx, key.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())

		vlanIn := metalv1.NewVirtualNetworkCreateInput()
		vlanIn.SetMetro("sv")
		vlan, _, err := api.VLANsApi.CreateVirtualNetwork(ctx, pid).VirtualNetworkCreateInput(*vlanIn).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, _, err = api.VLANsApi.FindVirtualNetworks(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred())

		_, err = api.BGPApi.DeleteBgpSession(ctx, session.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, err = api.SSHKeysApi.DeleteSSHKey(ctx, key.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, err = api.IPAddressesApi.DeleteIPAddress(ctx, assignment.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, err = api.IPAddressesApi.DeleteIPAddress(ctx, ip.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, err = api.VLANsApi.DeleteVirtualNetwork(ctx, vlan.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		_, err = api.DevicesApi.DeleteDevice(ctx, device.GetId()).Execute()
		Expect(err).NotTo(HaveOccurred())
		e.sim.Advance(time.Minute)
		_, err = api.ProjectsApi.DeleteProject(ctx, pid).Execute()
		Expect(err).NotTo(HaveOccurred(), "a project emptied of its devices, IPs, VLANs, sessions and keys is deleted")
		_, resp, err := api.ProjectsApi.FindProjectById(ctx, pid).Execute()
		Expect(err).To(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	})
})

const testSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhVYQ3K7zWp0m2v9lQe2c6uO4tJmDk0bQ2O8pQz4Yx2 sdk"
