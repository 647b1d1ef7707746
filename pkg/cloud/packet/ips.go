package packet

import (
	"context"
	"path"
	"time"

	"github.com/packethost/packngo"
)

// maxIPPages bounds the manual paging of IP reservation lists (packngo's ProjectIPs.List reads
// one page only, so FindIPReservationsByTags pages by hand until a short page).
const maxIPPages = 1000

func (c *client) FindIPReservationsByTags(ctx context.Context, projectID string, tags ...string) ([]IPReservation, error) {
	var found []IPReservation
	for page := 1; page <= maxIPPages; page++ {
		opts := (&packngo.ListOptions{Page: page, PerPage: c.pageSize, Includes: []string{"assignments"}}).
			Filter("types", string(packngo.PublicIPv4))
		var ips []packngo.IPAddressReservation
		err := c.do(ctx, "GET /projects/{id}/ips", func(api *packngo.Client) (resp *packngo.Response, err error) {
			ips, resp, err = api.ProjectIPs.List(projectID, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for i := range ips {
			if hasAllTags(ips[i].Tags, tags) {
				found = append(found, *toIPReservation(&ips[i]))
			}
		}
		if len(ips) < c.pageSize {
			break
		}
	}
	return found, nil
}

func (c *client) GetIPReservation(ctx context.Context, id string) (*IPReservation, error) {
	var ip *packngo.IPAddressReservation
	err := c.do(ctx, "GET /ips/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		ip, resp, err = api.ProjectIPs.Get(id, &packngo.GetOptions{Includes: []string{"assignments"}})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return toIPReservation(ip), nil
}

func (c *client) ReserveIP(ctx context.Context, req ReserveIPRequest) (*IPReservation, error) {
	create := &packngo.IPReservationCreateRequest{
		Type:                   packngo.PublicIPv4,
		Quantity:               1,
		Tags:                   req.Tags,
		FailOnApprovalRequired: req.FailOnApprovalRequired,
	}
	if req.Metro != "" {
		create.Metro = &req.Metro
	} else {
		create.Facility = &req.Facility
	}
	var ip *packngo.IPAddressReservation
	err := c.do(ctx, "POST /projects/{id}/ips", func(api *packngo.Client) (resp *packngo.Response, err error) {
		ip, resp, err = api.ProjectIPs.Create(req.ProjectID, create)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return toIPReservation(ip), nil
}

func (c *client) ReleaseIP(ctx context.Context, id string) error {
	err := c.do(ctx, "DELETE /ips/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.ProjectIPs.Delete(id)
	})
	if IsNotFound(err) {
		return nil
	}
	return err
}

func (c *client) AssignIP(ctx context.Context, deviceID, address string) error {
	return c.do(ctx, "POST /devices/{id}/ips", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.DeviceIPs.Assign(deviceID, &packngo.AddressStruct{Address: address})
		return resp, err
	})
}

func toIPReservation(ip *packngo.IPAddressReservation) *IPReservation {
	out := &IPReservation{
		ID:      ip.ID,
		Address: ip.Address,
		CIDR:    ip.CIDR,
		State:   string(ip.State),
		Tags:    ip.Tags,
	}
	if t, err := time.Parse(time.RFC3339, ip.Created); err == nil {
		out.CreatedAt = t
	}
	if ip.Metro != nil {
		out.Metro = ip.Metro.Code
	}
	if ip.Facility != nil {
		out.Facility = ip.Facility.Code
	}
	for _, a := range ip.Assignments {
		if a != nil && a.AssignedTo.Href != "" {
			out.AssignedDeviceIDs = append(out.AssignedDeviceIDs, path.Base(a.AssignedTo.Href))
		}
	}
	return out
}

func (c *client) TagIPReservation(ctx context.Context, id string, tags []string) error {
	tags = append([]string{}, tags...)
	return c.do(ctx, "PATCH /ips/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		_, resp, err := api.ProjectIPs.Update(id, &packngo.IPAddressUpdateRequest{Tags: &tags}, nil)
		return resp, err
	})
}
