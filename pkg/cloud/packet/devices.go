package packet

import (
	"context"
	"path"
	"time"

	"github.com/packethost/packngo"
)

func (c *client) GetDevice(ctx context.Context, id string) (*Device, error) {
	var d *packngo.Device
	err := c.do(ctx, "GET /devices/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		d, resp, err = api.Devices.Get(id, &packngo.GetOptions{Includes: []string{"hardware_reservation", "metro"}})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return toDevice(d), nil
}

func (c *client) FindDevicesByTags(ctx context.Context, projectID string, tags ...string) ([]Device, error) {
	opts := &packngo.ListOptions{PerPage: c.pageSize}
	if len(tags) > 0 {
		// Filter server-side on the most specific tag, then check the rest here.
		opts = opts.Filter("tag", tags[0])
	}
	var devices []packngo.Device
	err := c.do(ctx, "GET /projects/{id}/devices", func(api *packngo.Client) (resp *packngo.Response, err error) {
		devices, resp, err = api.Devices.List(projectID, opts)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	var found []Device
	for i := range devices {
		if hasAllTags(devices[i].Tags, tags) {
			found = append(found, *toDevice(&devices[i]))
		}
	}
	return found, nil
}

func (c *client) CreateDevice(ctx context.Context, req CreateDeviceRequest) (*Device, error) {
	create := &packngo.DeviceCreateRequest{
		Hostname:              req.Hostname,
		Plan:                  req.Plan,
		Metro:                 req.Metro,
		OS:                    req.OS,
		BillingCycle:          req.BillingCycle,
		ProjectID:             req.ProjectID,
		UserData:              req.UserData,
		CustomData:            req.CustomData,
		Tags:                  append([]string{}, req.Tags...),
		IPXEScriptURL:         req.IPXEScriptURL,
		AlwaysPXE:             req.AlwaysPXE,
		HardwareReservationID: req.HardwareReservationID,
		ProjectSSHKeys:        req.ProjectSSHKeyIDs,
		SpotInstance:          req.SpotInstance,
		SpotPriceMax:          req.SpotPriceMax,
	}
	if req.Facility != "" {
		create.Facility = []string{req.Facility}
	}
	if req.PrivateIPv4Only {
		create.IPAddresses = []packngo.IPAddressCreateRequest{{AddressFamily: 4, Public: false}}
	}
	var d *packngo.Device
	err := c.do(ctx, "POST /projects/{id}/devices", func(api *packngo.Client) (resp *packngo.Response, err error) {
		d, resp, err = api.Devices.Create(create)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	dev := toDevice(d)
	if c.snapshots != nil {
		c.snapshots.addCreated(req.ProjectID, *dev)
	}
	return dev, nil
}

func (c *client) DeleteDevice(ctx context.Context, id string) error {
	err := c.do(ctx, "DELETE /devices/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.Devices.Delete(id, false)
	})
	if IsNotFound(err) {
		return nil
	}
	return err
}

func toDevice(d *packngo.Device) *Device {
	out := &Device{
		ID:                     d.ID,
		Hostname:               d.Hostname,
		State:                  d.State,
		Tags:                   d.Tags,
		ProvisioningPercentage: d.ProvisionPer,
		SpotInstance:           d.SpotInstance,
	}
	if d.TerminationTime != nil {
		out.TerminationTime = d.TerminationTime.Time
	}
	if p := d.Project; p != nil {
		out.ProjectID = p.ID
		if out.ProjectID == "" && p.URL != "" {
			out.ProjectID = path.Base(p.URL) // not expanded: {"href": "/metal/v1/projects/<id>"}
		}
	}
	if d.Facility != nil {
		out.Facility = d.Facility.Code
		if d.Facility.Metro != nil {
			out.Metro = d.Facility.Metro.Code
		}
	}
	if d.Metro != nil && d.Metro.Code != "" {
		out.Metro = d.Metro.Code
	}
	if hr := d.HardwareReservation; hr != nil {
		out.HardwareReservationID = hr.ID
		if out.HardwareReservationID == "" && hr.Href != "" {
			out.HardwareReservationID = path.Base(hr.Href)
		}
	}
	if n := len(d.ProvisionEvents); n > 0 && d.ProvisionEvents[n-1] != nil {
		out.LastEvent = d.ProvisionEvents[n-1].Body
	}
	for _, ip := range d.Network {
		if ip == nil {
			continue
		}
		out.Addresses = append(out.Addresses, DeviceAddress{
			Address: ip.Address, AddressFamily: ip.AddressFamily, Public: ip.Public, Management: ip.Management,
		})
	}
	if t, err := time.Parse(time.RFC3339, d.Created); err == nil {
		out.CreatedAt = t
	}
	return out
}
