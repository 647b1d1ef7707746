// Package packet is the provider's only door to the Packet (Equinix Metal) API. It wraps packngo
// v0.31.0 behind a narrow, task-shaped Client interface that speaks the provider's own types,
// classifies every error by HTTP status, pages lists to the end, keeps to a request budget and
// backs off when Packet says so. No other package imports packngo.
package packet

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/packethost/packngo"
)

// Client is what the controllers need from Packet.
type Client interface {
	// GetDevice returns the device with this ID, read by ID: the answer for 404 decisions and
	// before anything destructive.
	GetDevice(ctx context.Context, id string) (*Device, error)
	// DeviceStatus returns the device as of a list of the project's devices taken at most a few
	// seconds ago, shared by every caller of this client; a device the list does not show is
	// read by ID. For following a device's progress: a list may still show a deleted device.
	DeviceStatus(ctx context.Context, projectID, id string) (*Device, error)
	// DeletionStatus follows a device whose deletion Packet accepted at deleteAsked: from the
	// same list as DeviceStatus when that list, taken later, shows the device deprovisioning or
	// (a complete list) not at all, reported as KindNotFound; read by ID otherwise.
	DeletionStatus(ctx context.Context, projectID, id string, deleteAsked time.Time) (*Device, error)
	// DeprovisioningTime is how long Packet took lately to deprovision the project's devices
	// this client deleted, as the project's lists showed them gone; 0 when not measured.
	DeprovisioningTime(projectID string) time.Duration
	// FindDevicesByTags returns the project's devices that carry every tag.
	FindDevicesByTags(ctx context.Context, projectID string, tags ...string) ([]Device, error)
	// RecentDevicesByTags is FindDevicesByTags answered from the same list as DeviceStatus, so
	// up to a few seconds old. Only for callers that know no device they care about can be
	// that new, or missing from lists because they lag.
	RecentDevicesByTags(ctx context.Context, projectID string, tags ...string) ([]Device, error)
	// CreateDevice creates a device. After a KindTransient error the device may exist anyway.
	CreateDevice(ctx context.Context, req CreateDeviceRequest) (*Device, error)
	// DeleteDevice deletes a device; deleting one that is already gone is not an error.
	DeleteDevice(ctx context.Context, id string) error
	// RebootDevice power-cycles an active device.
	RebootDevice(ctx context.Context, id string) error
	// PowerOnDevice powers on an inactive (powered-off) device.
	PowerOnDevice(ctx context.Context, id string) error
	// ReinstallDevice reinstalls a device's operating system in place: same device, hardware
	// and addresses; the disks are wiped. It boots the device's current user-data.
	ReinstallDevice(ctx context.Context, id string, req ReinstallDeviceRequest) error
	// TagDevice replaces the tags of a device.
	TagDevice(ctx context.Context, id string, tags []string) error
	// SetDeviceUserData replaces the user-data a device boots with (on its next install).
	SetDeviceUserData(ctx context.Context, id, userData string) error

	// FindIPReservationsByTags returns the project's IP reservations that carry every tag.
	FindIPReservationsByTags(ctx context.Context, projectID string, tags ...string) ([]IPReservation, error)
	// GetIPReservation returns the IP reservation with this ID.
	GetIPReservation(ctx context.Context, id string) (*IPReservation, error)
	// ReserveIP reserves one public IPv4 address.
	ReserveIP(ctx context.Context, req ReserveIPRequest) (*IPReservation, error)
	// TagIPReservation replaces the tags of an IP reservation.
	TagIPReservation(ctx context.Context, id string, tags []string) error
	// ReleaseIP deletes an IP reservation; releasing one that is already gone is not an error.
	ReleaseIP(ctx context.Context, id string) error
	// AssignIP assigns a reserved address to a device.
	AssignIP(ctx context.Context, deviceID, address string) error

	// GetBGPConfig returns the project's BGP configuration, nil when BGP is not enabled.
	GetBGPConfig(ctx context.Context, projectID string) (*BGPConfig, error)
	// EnableBGP creates the project's BGP configuration.
	EnableBGP(ctx context.Context, projectID string, req BGPConfigRequest) error
	// EnsureBGPSession gives the device an IPv4 BGP session; an existing one is kept.
	EnsureBGPSession(ctx context.Context, deviceID string) error
	// ListDeviceBGPSessions returns the device's BGP sessions.
	ListDeviceBGPSessions(ctx context.Context, deviceID string) ([]BGPSession, error)
	// DeleteBGPSession deletes a BGP session; deleting one that is already gone is not an error.
	DeleteBGPSession(ctx context.Context, id string) error

	// GetHardwareReservation returns a hardware reservation with the facility and metro it is in.
	GetHardwareReservation(ctx context.Context, id string) (*HardwareReservation, error)

	// ListPlans returns the plans the project can use.
	ListPlans(ctx context.Context, projectID string) ([]Plan, error)
	// ListFacilities returns every facility, as read at most an hour ago.
	ListFacilities(ctx context.Context) ([]Facility, error)

	// ListProjectSSHKeys returns the project's SSH keys.
	ListProjectSSHKeys(ctx context.Context, projectID string) ([]SSHKey, error)
	// CreateProjectSSHKey registers a public key with the project.
	CreateProjectSSHKey(ctx context.Context, projectID, label, publicKey string) (*SSHKey, error)
	// DeleteSSHKey deletes an SSH key; deleting one that is already gone is not an error.
	DeleteSSHKey(ctx context.Context, id string) error

	// GetDevicePorts returns the device's ports with the VLANs attached to them.
	GetDevicePorts(ctx context.Context, deviceID string) ([]Port, error)
	// DisbondPort takes a port out of its bond; with bulk, every port of the bond.
	DisbondPort(ctx context.Context, portID string, bulk bool) error
	// ConvertPortToLayer2 turns a bond into layer 2: the device loses its Packet addresses.
	ConvertPortToLayer2(ctx context.Context, portID string) error
	// AssignVLAN attaches a VLAN to a port.
	AssignVLAN(ctx context.Context, portID, vlanID string) error
	// GetVLAN returns the VLAN with this UUID.
	GetVLAN(ctx context.Context, id string) (*VLAN, error)
	// ListVLANs returns the project's VLANs in a metro; metro "" means every metro.
	ListVLANs(ctx context.Context, projectID, metro string) ([]VLAN, error)
	// CreateVLAN creates a VLAN in a metro.
	CreateVLAN(ctx context.Context, projectID, metro, description string) (*VLAN, error)
	// DeleteVLAN deletes a VLAN; deleting one that is already gone is not an error. Packet
	// refuses while a port still carries it.
	DeleteVLAN(ctx context.Context, id string) error

	// LoadBalancers speaks the load-balancer API with the same key.
	LoadBalancers
}

// DefaultAPIURL is the public Packet API.
const DefaultAPIURL = "https://api.equinix.com/metal/v1/"

// consumerToken identifies the provider to Packet, next to the User-Agent.
const consumerToken = "cluster-api-provider-packet" //nolint:gosec // Packet's public consumer name, not a secret

// Options configure a Client.
type Options struct {
	// APIURL is the API's base URL; a missing trailing slash is added (packngo needs it).
	APIURL string
	// APIKey authenticates every request. It is never logged.
	APIKey string
	// UserAgent is sent with every request, e.g. "cluster-api-provider-packet/v0.1.0".
	UserAgent string
	// Timeout bounds each HTTP request; packngo has none of its own. Default 30s.
	Timeout time.Duration
	// QPS and Burst cap the request rate of this client (one per API key): Packet's refill and
	// bucket for the key, of which the client's limiter keeps one request in hand
	// (limiterBurst). 0 means 10 and 20.
	QPS   float64
	Burst int
	// Transport is the HTTP transport to use; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// PageSize is the page size of paginated lists; 0 means 100. Large pages keep the request
	// count low; lists are always read to the last page.
	PageSize int
	// DeviceSnapshotMaxAge is how old the project device list behind DeviceStatus may be;
	// 0 means SnapshotMaxAge(QPS), a negative value turns snapshots off (DeviceStatus reads by ID).
	DeviceSnapshotMaxAge time.Duration
	// DeviceSnapshotPageSize is the page size of that list; 0 means 1000, Packet's largest.
	DeviceSnapshotPageSize int
	// LBaaSURL is the load-balancer API's base URL; "" means DefaultLBaaSURL.
	LBaaSURL string
	// TokenExchangeURL exchanges the API key for load-balancer API tokens; "" means
	// DefaultTokenExchangeURL.
	TokenExchangeURL string
	// Now is the clock of rate-limit pauses and token lifetimes; nil means time.Now. Tests give
	// the simulator's virtual clock.
	Now func() time.Time
}

// NormalizeAPIURL returns the base URL with exactly one trailing slash: packngo resolves paths
// against it, and without the slash the last path segment is silently dropped.
func NormalizeAPIURL(u string) string {
	if u == "" {
		u = DefaultAPIURL
	}
	return strings.TrimRight(u, "/") + "/"
}

// New returns a Client for one API key.
func New(opts Options) (Client, error) {
	if opts.APIKey == "" {
		return nil, fmt.Errorf("no Packet API key: set PACKET_API_KEY or the cluster's credentialsRef")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.QPS == 0 {
		opts.QPS, opts.Burst = 10, 20
	}
	if opts.PageSize == 0 {
		opts.PageSize = 100
	}
	if opts.Burst < 1 {
		opts.Burst = 1
	}
	next := opts.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// One pipeline for each API of the key, the same code: each API keeps its own budget and
	// its own 429 pause, as Packet keeps them.
	metal := newPipeline(next, opts.QPS, limiterBurst(opts.Burst), opts.Now, "Packet")
	lbaas := newPipeline(next, opts.QPS, limiterBurst(opts.Burst), opts.Now, "the load-balancer API")
	newAPI := func() (*pooledAPI, error) {
		calls := &callContext{next: metal}
		pc, err := packngo.NewClient(
			packngo.WithAuth(consumerToken, opts.APIKey),
			packngo.WithBaseURL(NormalizeAPIURL(opts.APIURL)),
			packngo.WithHTTPClient(&http.Client{Timeout: opts.Timeout, Transport: calls}),
		)
		if err != nil {
			return nil, fmt.Errorf("creating Packet client: %w", err)
		}
		if opts.UserAgent != "" {
			pc.UserAgent = opts.UserAgent + " " + pc.UserAgent
		}
		return &pooledAPI{api: pc, calls: calls}, nil
	}
	if _, err := newAPI(); err != nil { // fail now on a bad URL, not on the first call
		return nil, err
	}
	c := &client{pageSize: opts.PageSize, now: opts.Now, apiKey: opts.APIKey}
	lbaasHTTP := &http.Client{Timeout: opts.Timeout, Transport: lbaas}
	c.lbaas = &lbaasClient{baseURL: normalizeBaseURL(opts.LBaaSURL, DefaultLBaaSURL), userAgent: opts.UserAgent,
		http: lbaasHTTP, now: opts.Now,
		tokens: &tokenSource{exchangeURL: cmp.Or(opts.TokenExchangeURL, DefaultTokenExchangeURL), apiKey: opts.APIKey,
			userAgent: opts.UserAgent, http: lbaasHTTP, now: opts.Now}}
	if opts.DeviceSnapshotMaxAge == 0 {
		opts.DeviceSnapshotMaxAge = SnapshotMaxAge(opts.QPS)
	}
	if opts.DeviceSnapshotMaxAge > 0 {
		if opts.DeviceSnapshotPageSize <= 0 {
			opts.DeviceSnapshotPageSize = maxPageSize
		}
		c.snapshots = newDeviceSnapshots(opts.DeviceSnapshotMaxAge, opts.DeviceSnapshotPageSize, c.now)
	}
	c.apis.New = func() any {
		pc, _ := newAPI() // the options were checked above
		return pc
	}
	return c, nil
}

// limiterBurst is the burst of the client's limiter for a key whose bucket at Packet holds burst
// requests: one less. The limiter counts a request when it lets it go, Packet when it arrives, and
// a burst arrives spread out (concurrent requests queue for connections and for the server), so
// its last request can arrive later than the one the limiter lets go a refill interval after it:
// with Packet's bucket as empty as the limiter's, that one is refused. A request in hand absorbs
// up to a refill interval of that.
func limiterBurst(burst int) int { return max(1, burst-1) }

// client implements Client over packngo.
type client struct {
	// apis holds packngo clients, one per concurrent call: a packngo.Client records the rate
	// limit headers of every response in itself, so it cannot serve two calls at once. They
	// share one pipeline and so its budget and its connections.
	apis     sync.Pool
	pageSize int
	now      func() time.Time
	// apiKey is only ever taken out of texts (redact).
	apiKey string
	// snapshots answer DeviceStatus; nil when turned off.
	snapshots *deviceSnapshots
	// lbaas speaks the load-balancer API.
	lbaas *lbaasClient
	// facilities answers ListFacilities.
	facilities facilityCache
}

// pooledAPI is a packngo client with the callContext its requests carry.
type pooledAPI struct {
	api   *packngo.Client
	calls *callContext
}

// do runs one packngo call with the reconcile's context, through the pipeline's budget and
// 429 pause, and classifies its error.
func (c *client) do(ctx context.Context, operation string, call func(api *packngo.Client) (*packngo.Response, error)) error {
	p := c.apis.Get().(*pooledAPI)
	p.calls.ctx = ctx
	_, err := call(p.api)
	p.calls.ctx = nil
	c.apis.Put(p)
	e := classify(operation, err, c.now())
	if e != nil && e.Kind == KindTransient && ctx.Err() != nil {
		return ctx.Err() // the reconcile ended the call, not Packet
	}
	return redactError(e, c.apiKey)
}

// doObserved is do, also returning when the call was sent (after the budget's wait): the time a
// device's answer shows it at (Device.ObservedAt).
func (c *client) doObserved(ctx context.Context, operation string, call func(api *packngo.Client) (*packngo.Response, error)) (time.Time, error) {
	var sent time.Time
	err := c.do(withSentAt(ctx, &sent), operation, call)
	return sent, err
}

// hasAllTags reports whether have contains every tag in want.
func hasAllTags(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
