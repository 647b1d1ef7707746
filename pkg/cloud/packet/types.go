package packet

import (
	"encoding/json"
	"time"
)

// The provider's own view of Packet objects: only what the controllers use, so that no packngo
// type leaks past this package.

// Device is a Packet server.
type Device struct {
	ID string
	// ProjectID is the project the device belongs to.
	ProjectID string
	Hostname  string
	// State is the device's state: queued, provisioning, active, inactive, failed, ...
	State string
	Tags  []string
	// Facility and Metro are the codes of where the device runs (e.g. "sv15", "sv").
	Facility string
	Metro    string
	// HardwareReservationID is the reservation the device runs on, if any.
	HardwareReservationID string
	// ProvisioningPercentage is how far provisioning got, 0–100.
	ProvisioningPercentage float32
	// LastEvent is the body of the latest provisioning event, if Packet reported any.
	LastEvent string
	Addresses []DeviceAddress
	CreatedAt time.Time
	// ObservedAt is when the request Packet answered with this view of the device was sent: a
	// list that answers many looks may be a few seconds old, and a provisioning percentage is
	// only as good as the time it was read at. Sent, not answered: Packet computes the
	// percentage as it starts its answer, and a page of a thousand devices is megabytes to
	// send and decode: timed after it, a fleet would learn devices as faster than they are.
	// Zero when unknown.
	ObservedAt time.Time
	// FirstReading is the first provisioning percentage an earlier list of the project showed
	// of this provisioning, when the client kept one: the lists other devices' looks asked for
	// give a device's rate before its own second look.
	FirstReading *Reading
	// SpotInstance is set for a device bought on the spot market.
	SpotInstance bool
	// TerminationTime is when Packet deletes the device (a spot device that was outbid, or a
	// time set at create); zero when none is set.
	TerminationTime time.Time
}

// Reading is a provisioning percentage and when the request Packet answered with it was sent.
type Reading struct {
	At         time.Time
	Percentage float32
}

// DeviceAddress is an IP address assigned to a device.
type DeviceAddress struct {
	Address       string
	AddressFamily int
	Public        bool
	// Management addresses come with the device; elastic IPs are not management addresses.
	Management bool
}

// Device states the controllers distinguish.
const (
	DeviceStateQueued         = "queued"
	DeviceStateProvisioning   = "provisioning"
	DeviceStateActive         = "active"
	DeviceStateFailed         = "failed"
	DeviceStateInactive       = "inactive"
	DeviceStateDeprovisioning = "deprovisioning"
)

// CreateDeviceRequest describes a device to create.
type CreateDeviceRequest struct {
	ProjectID    string
	Hostname     string
	Plan         string
	OS           string
	BillingCycle string
	// Exactly one of Metro and Facility.
	Metro                 string
	Facility              string
	UserData              string
	CustomData            string
	Tags                  []string
	IPXEScriptURL         string
	AlwaysPXE             bool
	HardwareReservationID string
	ProjectSSHKeyIDs      []string
	// SpotInstance buys the device on the spot market, for at most SpotPriceMax an hour.
	SpotInstance bool
	SpotPriceMax float64
	// PrivateIPv4Only creates the device with a private IPv4 and no public address.
	PrivateIPv4Only bool
	// Storage is the custom partitioning and RAID document, in the Metal API's Storage shape,
	// sent as it is; nil for the plan's default layout.
	Storage json.RawMessage
}

// IPReservation is a block of reserved IP addresses, such as an elastic IP.
type IPReservation struct {
	ID string
	// Address is empty while the reservation waits for approval.
	Address string
	CIDR    int
	// State is created, pending or denied.
	State    string
	Metro    string
	Facility string
	Tags     []string
	// AssignedDeviceIDs are the devices the address is assigned to.
	AssignedDeviceIDs []string
	CreatedAt         time.Time
}

// IP reservation states.
const (
	IPReservationStateCreated = "created"
	IPReservationStatePending = "pending"
	IPReservationStateDenied  = "denied"
)

// ReserveIPRequest asks for one public IPv4 address (/32) in a metro or facility.
type ReserveIPRequest struct {
	ProjectID string
	Metro     string
	Facility  string
	Tags      []string
	// FailOnApprovalRequired makes Packet refuse (422) instead of queueing a reservation above
	// the project's quota.
	FailOnApprovalRequired bool
}

// BGPConfig is a project's BGP configuration.
type BGPConfig struct {
	ID             string
	Status         string
	DeploymentType string
	ASN            int
}

// BGPConfigRequest enables BGP on a project.
type BGPConfigRequest struct {
	DeploymentType string
	ASN            int
	MD5            string
	UseCase        string
}

// Plan is a Packet server type.
type Plan struct {
	Slug string
	// CPUs is the number of logical CPUs.
	CPUs int
	// MemoryBytes is the total memory.
	MemoryBytes int64
	// GPUs is the number of GPUs, 0 for most plans.
	GPUs int
	// Drives is the number of disks.
	Drives int
	// Architecture is the Kubernetes name of the CPU architecture (amd64, arm64).
	Architecture string
	// AvailableInMetros are the codes of the metros that offer the plan.
	AvailableInMetros []string
	// AvailableInFacilities are the codes of the facilities that offer the plan.
	AvailableInFacilities []string
}

// Facility is a Packet data center.
type Facility struct {
	Code  string
	Metro string
}

// HardwareReservation is a server reserved for a project.
type HardwareReservation struct {
	ID            string
	Plan          string
	Facility      string
	Metro         string
	Provisionable bool
	DeviceID      string
}

// SSHKey is a project SSH key.
type SSHKey struct {
	ID          string
	Label       string
	Key         string
	Fingerprint string
	CreatedAt   time.Time
}

// BGPSession is a device's BGP session with Packet's routers.
type BGPSession struct {
	ID            string
	DeviceID      string
	AddressFamily string
	Status        string
}

// ReinstallDeviceRequest describes a reinstall.
type ReinstallDeviceRequest struct {
	// OS is the operating system slug to install; "" keeps the device's.
	OS string
	// PreserveData keeps the non-OS disks' data.
	PreserveData bool
	// DeprovisionFast skips the disk wipe before the install.
	DeprovisionFast bool
}
