package packet

import (
	"context"
	"path"

	"github.com/packethost/packngo"
)

func (c *client) GetHardwareReservation(ctx context.Context, id string) (*HardwareReservation, error) {
	var hr *packngo.HardwareReservation
	err := c.do(ctx, "GET /hardware-reservations/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		hr, resp, err = api.HardwareReservations.Get(id, &packngo.GetOptions{Includes: []string{"facility.metro"}})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := &HardwareReservation{ID: hr.ID, Provisionable: hr.Provisionable, Facility: hr.Facility.Code}
	if hr.Plan.Slug != "" {
		out.Plan = hr.Plan.Slug
	}
	if hr.Facility.Metro != nil {
		out.Metro = hr.Facility.Metro.Code
	}
	if hr.Device != nil {
		out.DeviceID = hr.Device.ID
		if out.DeviceID == "" && hr.Device.Href != "" {
			out.DeviceID = path.Base(hr.Device.Href) // not expanded: {"href": "/metal/v1/devices/<id>"}
		}
	}
	return out, nil
}
