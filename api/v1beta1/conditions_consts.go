package v1beta1

// Condition types and reasons, positive polarity (Cluster API v1beta2 conventions). Each Packet
// resource the controllers manage owns one condition; Ready summarises them. The Cluster API
// reasons (clusterv1.ReadyReason, DeletingReason, PausedCondition ...) are used where they fit.

// PacketCluster conditions.
const (
	// ControlPlaneEndpointReadyCondition is True once spec.controlPlaneEndpoint points at a reserved
	// (or user-supplied) address.
	ControlPlaneEndpointReadyCondition = "ControlPlaneEndpointReady"
	// BGPReadyCondition is True once the project's BGP is configured (KUBE_VIP only).
	BGPReadyCondition = "BGPReady"
	// VLANReadyCondition is True once the cluster's VLAN exists (spec.network only).
	VLANReadyCondition = "VLANReady"
)

// PacketMachine conditions.
const (
	// DeviceReadyCondition is True once the machine's device is active.
	DeviceReadyCondition = "DeviceReady"
	// ElasticIPAssignedCondition is True once a CPEM control plane's device holds the cluster's
	// elastic IP, or when the machine needs none.
	ElasticIPAssignedCondition = "ElasticIPAssigned"
	// BGPSessionReadyCondition is True once a KUBE_VIP control plane's device has a BGP session,
	// or when the machine needs none.
	BGPSessionReadyCondition = "BGPSessionReady"
	// NetworkReadyCondition is True once the device's ports are in the spec's mode with its VLANs,
	// or when the machine asks for nothing but the default.
	NetworkReadyCondition = "NetworkReady"
	// LoadBalancerOriginReadyCondition is True once an EMLB control plane's device is an active
	// origin of the cluster's load balancer, or when the machine needs none.
	LoadBalancerOriginReadyCondition = "LoadBalancerOriginReady"
)

// Conditions shared by both kinds.
const (
	// PacketAPIAvailableCondition is False while the Packet API refuses the provider's calls
	// (rate limit, invalid credentials, outage).
	PacketAPIAvailableCondition = "PacketAPIAvailable"
)

// Reasons.
const (
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	WaitingForBootstrapDataReason         = "WaitingForBootstrapData"
	WaitingForIPReservationReason         = "WaitingForIPReservation"
	ElasticIPReservedReason               = "ElasticIPReserved"
	UserSuppliedEndpointReason            = "UserSuppliedEndpoint"
	QuotaExceededReason                   = "QuotaExceeded"
	RateLimitedReason                     = "RateLimited"
	CredentialsInvalidReason              = "CredentialsInvalid"
	PacketAPIErrorReason                  = "PacketAPIError"
	InvalidRequestReason                  = "InvalidRequest"
	DeviceProvisioningReason              = "DeviceProvisioning"
	DeviceActiveReason                    = "DeviceActive"
	DeviceProvisionFailedReason           = "DeviceProvisionFailed"
	DeviceNotFoundReason                  = "DeviceNotFound"
	DeviceInactiveReason                  = "DeviceInactive"
	DevicePoweringReason                  = "DevicePowering"
	DeviceReinstallingReason              = "DeviceReinstalling"
	DeviceDeprovisioningReason            = "DeviceDeprovisioning"
	ElasticIPAssignedReason               = "ElasticIPAssigned"
	BGPSessionCreatedReason               = "BGPSessionCreated"
	HardwareReservationUnavailableReason  = "HardwareReservationUnavailable"
	CapacityUnavailableReason             = "CapacityUnavailable"
	BootstrapDataInvalidReason            = "BootstrapDataInvalid"
	NotNeededReason                       = "NotNeeded"
	// Private networking: ports being converted or VLANs attached, a VLAN that cannot be found.
	NetworkConfiguringReason = "NetworkConfiguring"
	NetworkConfiguredReason  = "NetworkConfigured"
	VLANNotFoundReason       = "VLANNotFound"
	VLANNotOwnedReason       = "VLANNotOwned"
	VLANReadyReason          = "VLANReady"
	// Spot market: the device is to be terminated (outbid), is gone, or the bid was refused.
	DeviceTerminationScheduledReason = "DeviceTerminationScheduled"
	DeviceReclaimedReason            = "DeviceReclaimed"
	SpotBidRefusedReason             = "SpotBidRefused"
	SpotControlPlaneNotAllowedReason = "SpotControlPlaneNotAllowed"
	// APIKeyNotExposableReason: exposeAPIKeyInUserData without the cluster's own credentials.
	APIKeyNotExposableReason = "APIKeyNotExposable" //nolint:gosec // a condition reason, not a credential
	// APIKeyNotInUserDataReason (an event): the bootstrap data names {{ .apiKey }}, which renders
	// empty because the cluster did not opt in to expose its own key.
	APIKeyNotInUserDataReason = "APIKeyNotInUserData" //nolint:gosec // an event reason, not a credential
	// DeviceNotOwnedReason: spec.providerID names a device outside the cluster's project or tags.
	DeviceNotOwnedReason = "DeviceNotOwned"
	// EMLB: the load balancer serves the endpoint; it is being set up; the metro has none; an
	// origin is registered.
	LoadBalancerReadyReason       = "LoadBalancerReady"
	WaitingForLoadBalancerReason  = "WaitingForLoadBalancer"
	LoadBalancerUnavailableReason = "LoadBalancerLocationUnavailable"
	LoadBalancerOriginAddedReason = "OriginRegistered"
	// DeviceDeletionStuckReason: the device is deprovisioning far longer than Packet takes.
	DeviceDeletionStuckReason = "DeviceDeletionStuck"
)

// PacketRemediation conditions and reasons.
const (
	// RemediationSucceededCondition is True once the Machine is healthy again; False while the
	// remediation runs or once it ended without repairing the Machine (the reason says why).
	RemediationSucceededCondition = "RemediationSucceeded"
	// StepSucceededCondition is about the current step: True once its action brought the Machine
	// back, False while it waits or after it timed out.
	StepSucceededCondition = "StepSucceeded"

	RemediationInProgressReason       = "RemediationInProgress"
	MachineHealthyReason              = "MachineHealthy"
	MachineNotFoundReason             = "MachineNotFound"
	ControlPlaneNotReplacedReason     = "ControlPlaneNotReplaced"
	ControlPlaneNotReinstalledReason  = "ControlPlaneNotReinstalled"
	StrategyExhaustedReason           = "StrategyExhausted"
	MachineReplacementRequestedReason = "MachineReplacementRequested"
	RebootRequestedReason             = "RebootRequested"
	ReinstallRequestedReason          = "ReinstallRequested"
	StepTimedOutReason                = "StepTimedOut"
	WaitingForDeviceReason            = "WaitingForDevice"
	NoOwnerToReplaceReason            = "NoOwnerToReplace"
)
