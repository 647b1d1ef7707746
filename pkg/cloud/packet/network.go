package packet

import (
	"context"
	"path"
	"time"

	"github.com/packethost/packngo"
)

// Port is one of a device's network ports (bond0, eth0, eth1).
type Port struct {
	ID     string
	Name   string
	Bonded bool
	// NetworkType is the port's own network type as Packet reports it (layer3, hybrid-bonded,
	// layer2-bonded, layer2-individual, hybrid).
	NetworkType string
	// VLANIDs are the UUIDs of the VLANs attached to the port.
	VLANIDs []string
}

// VLAN is a Packet virtual network.
type VLAN struct {
	ID          string
	VXLAN       int
	Description string
	Metro       string
	CreatedAt   time.Time
}

// devicePortsJSON decodes a device's ports. packngo's Port type cannot: it declares two fields
// with the JSON name virtual_networks, so encoding/json fills neither.
type devicePortsJSON struct {
	NetworkPorts []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Data struct {
			Bonded bool `json:"bonded"`
		} `json:"data"`
		NetworkType     string `json:"network_type"`
		VirtualNetworks []struct {
			ID   string `json:"id"`
			Href string `json:"href"`
		} `json:"virtual_networks"`
	} `json:"network_ports"`
}

func (c *client) GetDevicePorts(ctx context.Context, deviceID string) ([]Port, error) {
	var root devicePortsJSON
	err := c.do(ctx, "GET /devices/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.DoRequest("GET", path.Join("/devices", deviceID)+"?include=network_ports", nil, &root)
	})
	if err != nil {
		return nil, err
	}
	ports := make([]Port, 0, len(root.NetworkPorts))
	for _, p := range root.NetworkPorts {
		port := Port{ID: p.ID, Name: p.Name, Bonded: p.Data.Bonded, NetworkType: p.NetworkType}
		for _, vn := range p.VirtualNetworks {
			id := vn.ID
			if id == "" && vn.Href != "" {
				id = path.Base(vn.Href) // not expanded: {"href": "/metal/v1/virtual-networks/<id>"}
			}
			port.VLANIDs = append(port.VLANIDs, id)
		}
		ports = append(ports, port)
	}
	return ports, nil
}

func (c *client) DisbondPort(ctx context.Context, portID string, bulk bool) error {
	return c.do(ctx, "POST /ports/{id}/disbond", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.Ports.Disbond(portID, bulk)
		return resp, err
	})
}

func (c *client) ConvertPortToLayer2(ctx context.Context, portID string) error {
	return c.do(ctx, "POST /ports/{id}/convert/layer-2", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.Ports.ConvertToLayerTwo(portID)
		return resp, err
	})
}

func (c *client) AssignVLAN(ctx context.Context, portID, vlanID string) error {
	return c.do(ctx, "POST /ports/{id}/assign", func(api *packngo.Client) (resp *packngo.Response, err error) {
		_, resp, err = api.Ports.Assign(portID, vlanID)
		return resp, err
	})
}

func (c *client) GetVLAN(ctx context.Context, id string) (*VLAN, error) {
	var vn *packngo.VirtualNetwork
	err := c.do(ctx, "GET /virtual-networks/{id}", func(api *packngo.Client) (resp *packngo.Response, err error) {
		vn, resp, err = api.ProjectVirtualNetworks.Get(id, nil)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return toVLAN(vn), nil
}

func (c *client) ListVLANs(ctx context.Context, projectID, metro string) ([]VLAN, error) {
	opts := &packngo.ListOptions{}
	if metro != "" {
		opts.QueryParams = map[string]string{"metro": metro}
	}
	var list *packngo.VirtualNetworkListResponse
	err := c.do(ctx, "GET /projects/{id}/virtual-networks", func(api *packngo.Client) (resp *packngo.Response, err error) {
		list, resp, err = api.ProjectVirtualNetworks.List(projectID, opts)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]VLAN, 0, len(list.VirtualNetworks))
	for i := range list.VirtualNetworks {
		out = append(out, *toVLAN(&list.VirtualNetworks[i]))
	}
	return out, nil
}

func (c *client) CreateVLAN(ctx context.Context, projectID, metro, description string) (*VLAN, error) {
	var vn *packngo.VirtualNetwork
	err := c.do(ctx, "POST /projects/{id}/virtual-networks", func(api *packngo.Client) (resp *packngo.Response, err error) {
		vn, resp, err = api.ProjectVirtualNetworks.Create(&packngo.VirtualNetworkCreateRequest{ProjectID: projectID,
			Metro: metro, Description: description})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return toVLAN(vn), nil
}

func (c *client) DeleteVLAN(ctx context.Context, id string) error {
	err := c.do(ctx, "DELETE /virtual-networks/{id}", func(api *packngo.Client) (*packngo.Response, error) {
		return api.ProjectVirtualNetworks.Delete(id)
	})
	if IsNotFound(err) {
		return nil
	}
	return err
}

func toVLAN(vn *packngo.VirtualNetwork) *VLAN {
	out := &VLAN{ID: vn.ID, VXLAN: vn.VXLAN, Description: vn.Description, Metro: vn.MetroCode}
	if out.Metro == "" && vn.Metro != nil {
		out.Metro = vn.Metro.Code
	}
	if t, err := time.Parse(time.RFC3339, vn.CreatedAt); err == nil {
		out.CreatedAt = t
	}
	return out
}
