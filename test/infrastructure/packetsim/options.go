package packetsim

import (
	"fmt"
	"io"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim/metalspec"
)

// DefaultToken is the API token accepted by a simulator built with no Tokens.
const DefaultToken = "sim-token"

// Options configures a Server. The zero value is usable: built-in seed, token
// "sim-token" for every project, real clock, the "fast" timing profile,
// per_page 10 and no rate limit.
type Options struct {
	// Seed is the initial catalog and projects; nil means DefaultSeed().
	Seed *Seed
	// Tokens maps a valid API token to the project IDs it may access. A nil
	// or empty slice means every project. Nil map means {"sim-token": all}.
	Tokens map[string][]string
	// Clock drives every state transition; nil means a RealClock.
	Clock Clock
	// Timing holds the state-machine durations; zero value means TimingFast.
	Timing *Timing
	// PerPage is the default page size of paginated lists (the API's is 10).
	// The project IP list keeps the API's own default of 250.
	PerPage int
	// RateLimit is a token bucket per API token; a zero PerSecond disables it.
	RateLimit RateLimit
	// StateFile, when set, is loaded at start (if present) and written
	// atomically after changes and on Close.
	StateFile string
	// StateFlushInterval is how often a dirty state is written (default 1s).
	StateFlushInterval time.Duration
	// RandomSeed seeds the RNG used by probabilistic faults and chaos.
	RandomSeed int64
	// Behaviour knobs from the reference (section 6.3).
	Knobs Knobs
	// MaxRecordedRequests bounds the request log kept in memory (default
	// 50000; older records are dropped, counters are kept forever).
	MaxRecordedRequests int
	// Log, when set, receives one line per request: method, path, status,
	// duration. Tokens, bodies and user-data are never logged.
	Log io.Writer
	// LBaaSTokenTTL is how long an access token of the load-balancer service
	// lives, on Clock (default 1h, about what the real token exchange gives).
	LBaaSTokenTTL time.Duration
	// Spec is the Metal API document every request and answer is checked against; nil means the
	// one equinix-sdk-go ships (metalspec.Default), and New fails if it cannot be found.
	// Conformance() reports what the check saw.
	Spec *metalspec.Spec
	// NoSpecCheck turns the check off (for a machine without the spec).
	NoSpecCheck bool
	// SpecLog, when set, receives a line for each new kind of answer off the spec.
	SpecLog io.Writer
}

// Knobs are the switches the reference marks as unverified behaviour.
type Knobs struct {
	// ExpandAll returns every reference in full, as if include= named it.
	ExpandAll bool `json:"expand_all,omitempty"`
	// MetaHrefPrefix is prepended to meta.*.href (default "", which is the
	// form packngo can follow; "/metal/v1" reproduces the doubled-path bug).
	MetaHrefPrefix string `json:"meta_href_prefix,omitempty"`
	// RejectAssignedIPDelete makes DELETE /ips/{reservation} answer 422 while
	// the reservation is assigned, instead of cascading.
	RejectAssignedIPDelete bool `json:"reject_assigned_ip_delete,omitempty"`
	// CapacityStatus is the status for "There aren't available servers in
	// that metro" (default 503; 422 is the alternative).
	CapacityStatus int `json:"capacity_status,omitempty"`
	// SkipUserdataValidation accepts any userdata.
	SkipUserdataValidation bool `json:"skip_userdata_validation,omitempty"`
	// MaxUserdataBytes is the userdata limit (default 64 KiB).
	MaxUserdataBytes int `json:"max_userdata_bytes,omitempty"`
	// HardwareReservationStrictPlan rejects a plan that differs from the
	// reservation's plan instead of silently taking the reservation's.
	HardwareReservationStrictPlan bool `json:"hardware_reservation_strict_plan,omitempty"`
	// FailedDevicesReturn403 makes GET /devices/{id} of a failed device
	// answer 403, the quirk CAPP relies on.
	FailedDevicesReturn403 bool `json:"failed_devices_return_403,omitempty"`
	// SingleErrorField answers errors as {"error":"..."} instead of
	// {"errors":["..."]}.
	SingleErrorField bool `json:"single_error_field,omitempty"`
}

// RateLimit is a token bucket per API token.
type RateLimit struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// Timing holds the durations of the device state machine and friends.
type Timing struct {
	Queued             time.Duration `json:"queued"`
	Provisioning       time.Duration `json:"provisioning"`
	CustomIPXE         time.Duration `json:"custom_ipxe"`
	Deprovisioning     time.Duration `json:"deprovisioning"`
	PowerOff           time.Duration `json:"power_off"`
	PowerOn            time.Duration `json:"power_on"`
	Reinstall          time.Duration `json:"reinstall"`
	EIPAssignLag       time.Duration `json:"eip_assign_lag"`
	EIPApproval        time.Duration `json:"eip_approval"`
	HardwareWipe       time.Duration `json:"hardware_wipe"`
	RootPasswordExpiry time.Duration `json:"root_password_expiry"`
	// TerminationNotice is how long an outbid spot device runs after it gets its
	// termination_time (Packet: about two minutes).
	TerminationNotice time.Duration `json:"termination_notice"`
	// VLANBatchQueued and VLANBatchInProgress are how long a VLAN assignment batch stays
	// queued and then in_progress before it is applied and completed.
	VLANBatchQueued     time.Duration `json:"vlan_batch_queued"`
	VLANBatchInProgress time.Duration `json:"vlan_batch_in_progress"`
}

// Timing profiles. "fast" is the reference's suggested simulator default,
// "realistic" is what the real API roughly does, "instant" moves every
// device to its next stable state on the next request.
var (
	TimingRealistic = Timing{Queued: 30 * time.Second, Provisioning: 6 * time.Minute, CustomIPXE: 3 * time.Minute,
		Deprovisioning: 90 * time.Second, PowerOff: 45 * time.Second, PowerOn: 45 * time.Second, Reinstall: 6 * time.Minute,
		EIPApproval: 10 * time.Minute, HardwareWipe: 10 * time.Minute, RootPasswordExpiry: 24 * time.Hour, TerminationNotice: 2 * time.Minute,
		VLANBatchQueued: 5 * time.Second, VLANBatchInProgress: 20 * time.Second}
	TimingFast = Timing{Queued: 2 * time.Second, Provisioning: 10 * time.Second, CustomIPXE: 5 * time.Second,
		Deprovisioning: 5 * time.Second, PowerOff: 2 * time.Second, PowerOn: 2 * time.Second, Reinstall: 10 * time.Second,
		EIPApproval: 30 * time.Second, HardwareWipe: 15 * time.Second, RootPasswordExpiry: 24 * time.Hour, TerminationNotice: time.Minute,
		VLANBatchQueued: time.Second, VLANBatchInProgress: 2 * time.Second}
	TimingInstant = Timing{RootPasswordExpiry: 24 * time.Hour}
	// TimingSandbox is "fast" with devices active about 20s after creation, what `make sandbox`
	// shows people: long enough to watch a Machine provision, short enough to wait for.
	TimingSandbox = Timing{Queued: 3 * time.Second, Provisioning: 17 * time.Second, CustomIPXE: 5 * time.Second,
		Deprovisioning: 5 * time.Second, PowerOff: 2 * time.Second, PowerOn: 2 * time.Second, Reinstall: 15 * time.Second,
		EIPApproval: 30 * time.Second, HardwareWipe: 15 * time.Second, RootPasswordExpiry: 24 * time.Hour, TerminationNotice: time.Minute,
		VLANBatchQueued: time.Second, VLANBatchInProgress: 2 * time.Second}
)

// TimingProfile returns a named profile: realistic, fast, sandbox or instant.
func TimingProfile(name string) (Timing, error) {
	switch name {
	case "realistic":
		return TimingRealistic, nil
	case "fast", "":
		return TimingFast, nil
	case "sandbox":
		return TimingSandbox, nil
	case "instant":
		return TimingInstant, nil
	}
	return Timing{}, fmt.Errorf("unknown timing profile %q (want realistic, fast, sandbox or instant)", name)
}
