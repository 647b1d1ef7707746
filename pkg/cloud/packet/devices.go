package packet

import (
	"context"
	"encoding/json"
	"path"
	"slices"

	"github.com/packethost/packngo"
)

// deviceIncludes expands, in a device read by ID or through a filtered list, the nested objects
// whose IDs and codes Device carries.
var deviceIncludes = []string{"hardware_reservation", "metro"}

func (c *client) GetDevice(ctx context.Context, id string) (*Device, error) {
	var d *packngo.Device
	sent, err := c.doObserved(ctx, "GET /devices/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		d, resp, err = api.Devices.Get(id, &packngo.GetOptions{Includes: deviceIncludes})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	dev := toDevice(d)
	dev.ObservedAt = sent
	return dev, nil
}

func (c *client) FindDevicesByTags(ctx context.Context, projectID string, tags ...string) ([]Device, error) {
	opts := &packngo.ListOptions{PerPage: c.pageSize}
	if len(tags) > 0 {
		// Filter server-side on the most specific tag, then check the rest here.
		opts = opts.Filter("tag", tags[0])
	}
	devices, err := c.listDevices(ctx, projectID, opts)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(devices, func(d Device) bool { return !hasAllTags(d.Tags, tags) }), nil
}

// listDevices lists the project's devices as packngo does (every page, nested objects whole).
func (c *client) listDevices(ctx context.Context, projectID string, opts *packngo.ListOptions) ([]Device, error) {
	var devices []packngo.Device
	sent, err := c.doObserved(ctx, "GET /projects/{id}/devices", func(api *packngo.Client) (resp *packngo.Response, err error) {
		devices, resp, err = api.Devices.List(projectID, opts)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(devices))
	for i := range devices {
		dev := toDevice(&devices[i])
		dev.ObservedAt = sent
		out = append(out, *dev)
	}
	return out, nil
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
	// packngo's storage type has the filesystem options under mount.create, the published spec
	// under mount: the document goes in the spec's shape, over packngo's field of that name.
	body := struct {
		*packngo.DeviceCreateRequest
		Storage json.RawMessage `json:"storage,omitempty"`
	}{create, req.Storage}
	d := &packngo.Device{}
	sent, err := c.doObserved(ctx, "POST /projects/{id}/devices", func(api *packngo.Client) (*packngo.Response, error) {
		return api.DoRequest("POST", path.Join("/projects", req.ProjectID, "devices"), body, d)
	})
	if err != nil {
		return nil, err
	}
	dev := toDevice(d)
	dev.ObservedAt = sent
	if c.snapshots != nil {
		c.snapshots.addCreated(req.ProjectID, *dev)
	}
	return dev, nil
}

func (c *client) DeleteDevice(ctx context.Context, id string) error {
	sent, err := c.doObserved(ctx, "DELETE /devices/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.Devices.Delete(id, false)
	})
	if IsNotFound(err) {
		return nil
	}
	if err == nil && c.snapshots != nil {
		c.snapshots.deleteSent(id, sent)
	}
	return err
}
