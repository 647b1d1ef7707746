package packet

import (
	"bytes"
	"encoding/json"
	"path"
	"time"

	"github.com/packethost/packngo"
)

// listedDevice is what the provider reads of a device: the fields of Device, and no others. The
// device snapshot decodes its lists straight into it; toDevice converts packngo's Device through
// it, so both end up alike. A list of a thousand devices is several megabytes of JSON, and decoding
// it is most of a busy manager's CPU; packngo's Device decodes the nested plan, operating system,
// ports and addresses in full, this type only what the provider reads, in a tenth of the
// allocations (BenchmarkDecodeDeviceList; figures in docs/performance.md).
type listedDevice struct {
	ID                  string             `json:"id"`
	Hostname            string             `json:"hostname"`
	State               string             `json:"state"`
	Tags                []string           `json:"tags"`
	Created             string             `json:"created_at"`
	ProvisionPer        float32            `json:"provisioning_percentage"`
	SpotInstance        bool               `json:"spot_instance"`
	TerminationTime     *packngo.Timestamp `json:"termination_time"`
	Project             *reference         `json:"project"`
	HardwareReservation *reference         `json:"hardware_reservation"`
	Facility            *listedFacility    `json:"facility"`
	Metro               *codeOnly          `json:"metro"`
	ProvisionEvents     []listedEvent      `json:"provisioning_events"`
	Network             []listedAddress    `json:"ip_addresses"`
}

type listedFacility struct {
	Code  string    `json:"code"`
	Metro *codeOnly `json:"metro"`
}

type listedEvent struct {
	Body string `json:"body"`
}

type listedAddress struct {
	Address       string `json:"address"`
	AddressFamily int    `json:"address_family"`
	Public        bool   `json:"public"`
	Management    bool   `json:"management"`
}

// reference is a nested object Packet may answer in full or as {"href": ...} only.
type reference struct {
	ID   string `json:"id"`
	Href string `json:"href"`
}

// id is the object's ID, taken from its href when it is not expanded.
func (r *reference) id() string {
	if r == nil {
		return ""
	}
	if r.ID == "" && r.Href != "" {
		return path.Base(r.Href)
	}
	return r.ID
}

type codeOnly struct {
	Code string `json:"code"`
}

// devicesPage is one page of GET /projects/{id}/devices.
type devicesPage struct {
	Devices []listedDevice `json:"devices"`
}

// getPage asks for one page of devices at path and decodes it into page, returning the page's
// size in bytes. packngo would decode the answer as it arrives, with a json.Decoder that grows
// its buffer by doubling: for a page of a thousand devices (megabytes) that growth, its clearing
// and copying, and the many small reads take much of the snapshot's refresh. The page is read
// whole into a buffer of the size the caller expects, a little more, and decoded in one go
// (BenchmarkGetDevicePage; figures in docs/performance.md).
func getPage(api *packngo.Client, path string, sizeHint int, page *devicesPage) (*packngo.Response, int, error) {
	buf := bytes.NewBuffer(make([]byte, 0, sizeHint+sizeHint/8+bytes.MinRead))
	// packngo copies the body of a successful answer into a Writer instead of decoding it.
	resp, err := api.DoRequest("GET", path, nil, buf)
	if err != nil {
		return resp, buf.Len(), err
	}
	return resp, buf.Len(), json.Unmarshal(buf.Bytes(), page)
}

// toDevice converts a device packngo decoded (a read by ID, a create's answer) the same way.
func toDevice(d *packngo.Device) *Device {
	l := listedDevice{ID: d.ID, Hostname: d.Hostname, State: d.State, Tags: d.Tags, Created: d.Created,
		ProvisionPer: d.ProvisionPer, SpotInstance: d.SpotInstance, TerminationTime: d.TerminationTime}
	if p := d.Project; p != nil {
		l.Project = &reference{ID: p.ID, Href: p.URL}
	}
	if hr := d.HardwareReservation; hr != nil {
		l.HardwareReservation = &reference{ID: hr.ID, Href: hr.Href}
	}
	if f := d.Facility; f != nil {
		l.Facility = &listedFacility{Code: f.Code}
		if f.Metro != nil {
			l.Facility.Metro = &codeOnly{Code: f.Metro.Code}
		}
	}
	if d.Metro != nil {
		l.Metro = &codeOnly{Code: d.Metro.Code}
	}
	if n := len(d.ProvisionEvents); n > 0 && d.ProvisionEvents[n-1] != nil {
		l.ProvisionEvents = []listedEvent{{Body: d.ProvisionEvents[n-1].Body}}
	}
	for _, ip := range d.Network {
		if ip != nil {
			l.Network = append(l.Network, listedAddress{Address: ip.Address, AddressFamily: ip.AddressFamily, Public: ip.Public, Management: ip.Management})
		}
	}
	dev := l.device()
	return &dev
}

// device converts a listed device into the provider's Device.
func (d *listedDevice) device() Device {
	out := Device{ID: d.ID, Hostname: d.Hostname, State: d.State, Tags: d.Tags, ProvisioningPercentage: d.ProvisionPer,
		SpotInstance: d.SpotInstance, ProjectID: d.Project.id(), HardwareReservationID: d.HardwareReservation.id()}
	if d.TerminationTime != nil {
		out.TerminationTime = d.TerminationTime.Time
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
	if n := len(d.ProvisionEvents); n > 0 {
		out.LastEvent = d.ProvisionEvents[n-1].Body
	}
	for _, ip := range d.Network {
		out.Addresses = append(out.Addresses, DeviceAddress(ip))
	}
	if t, err := time.Parse(time.RFC3339, d.Created); err == nil {
		out.CreatedAt = t
	}
	return out
}
