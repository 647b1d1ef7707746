package packet

import (
	"context"

	"github.com/packethost/packngo"
)

func (c *client) RebootDevice(ctx context.Context, id string) error {
	return c.do(ctx, "POST /devices/{id}/actions", func(api *packngo.Client) (*packngo.Response, error) {
		return api.Devices.Reboot(id)
	})
}

func (c *client) PowerOnDevice(ctx context.Context, id string) error {
	return c.do(ctx, "POST /devices/{id}/actions", func(api *packngo.Client) (*packngo.Response, error) {
		return api.Devices.PowerOn(id)
	})
}

func (c *client) ReinstallDevice(ctx context.Context, id string, req ReinstallDeviceRequest) error {
	fields := &packngo.DeviceReinstallFields{OperatingSystem: req.OS, PreserveData: req.PreserveData,
		DeprovisionFast: req.DeprovisionFast}
	return c.do(ctx, "POST /devices/{id}/actions", func(api *packngo.Client) (*packngo.Response, error) {
		return api.Devices.Reinstall(id, fields)
	})
}

// SetDeviceUserData never puts the user-data in an error: packngo's errors carry the response,
// not the request body.
func (c *client) SetDeviceUserData(ctx context.Context, id, userData string) error {
	return c.do(ctx, "PUT /devices/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.Devices.Update(id, &packngo.DeviceUpdateRequest{UserData: &userData})
		return resp, err
	})
}

// TagDevice replaces the tags of a device.
func (c *client) TagDevice(ctx context.Context, id string, tags []string) error {
	tags = append([]string{}, tags...)
	return c.do(ctx, "PUT /devices/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.Devices.Update(id, &packngo.DeviceUpdateRequest{Tags: &tags})
		return resp, err
	})
}
