package packet

import (
	"context"
	"errors"
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
