package packet

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/packethost/packngo"
)

func (c *client) GetBGPConfig(ctx context.Context, projectID string) (*BGPConfig, error) {
	var cfg *packngo.BGPConfig
	err := c.do(ctx, "GET /projects/{id}/bgp-config", func(api *packngo.Client) (resp *packngo.Response, err error) {
		cfg, resp, err = api.BGPConfig.Get(projectID, nil)
		return resp, err
	})
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Packet answers 200 with an empty object when BGP was never enabled.
	if cfg == nil || cfg.ID == "" || cfg.Status == "disabled" {
		return nil, nil
	}
	return &BGPConfig{ID: cfg.ID, Status: cfg.Status, DeploymentType: cfg.DeploymentType, ASN: cfg.Asn}, nil
}

func (c *client) EnableBGP(ctx context.Context, projectID string, req BGPConfigRequest) error {
	return c.do(ctx, "POST /projects/{id}/bgp-configs", func(api *packngo.Client) (*packngo.Response, error) {
		return api.BGPConfig.Create(projectID, packngo.CreateBGPConfigRequest{
			DeploymentType: req.DeploymentType, Asn: req.ASN, Md5: req.MD5, UseCase: req.UseCase,
		})
	})
}

func (c *client) EnsureBGPSession(ctx context.Context, deviceID string) error {
	defaultRoute := false
	err := c.do(ctx, "POST /devices/{id}/bgp/sessions", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.BGPSessions.Create(deviceID, packngo.CreateBGPSessionRequest{
			AddressFamily: "ipv4", DefaultRoute: &defaultRoute,
		})
		return resp, err
	})
	// Packet refuses a second session for the same device and family with this text; the
	// session we want exists, which is all that matters.
	var e *Error
	if errors.As(err, &e) && e.Kind == KindInvalid && strings.Contains(e.Message(), "already has session") {
		return nil
	}
	return err
}

func (c *client) ListDeviceBGPSessions(ctx context.Context, deviceID string) ([]BGPSession, error) {
	var sessions []packngo.BGPSession
	err := c.do(ctx, "GET /devices/{id}/bgp/sessions", func(api *packngo.Client) (resp *packngo.Response, err error) {
		sessions, resp, err = api.Devices.ListBGPSessions(deviceID, nil)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]BGPSession, 0, len(sessions))
	for _, s := range sessions {
		bs := BGPSession{ID: s.ID, DeviceID: s.Device.ID, AddressFamily: s.AddressFamily, Status: s.Status}
		if bs.DeviceID == "" && s.Device.Href != "" {
			bs.DeviceID = path.Base(s.Device.Href) // not expanded: {"href": "/metal/v1/devices/<id>"}
		}
		if bs.DeviceID == "" {
			bs.DeviceID = deviceID
		}
		out = append(out, bs)
	}
	return out, nil
}

func (c *client) DeleteBGPSession(ctx context.Context, id string) error {
	err := c.do(ctx, "DELETE /bgp/sessions/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.BGPSessions.Delete(id)
	})
	if IsNotFound(err) {
		return nil
	}
	return err
}
