package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// RemediationStepType is what one step of a remediation does to the Machine's device.
// +kubebuilder:validation:Enum=Reboot;Reinstall;Replace
type RemediationStepType string

const (
	// RemediationStepReboot power-cycles the device through the Packet API.
	RemediationStepReboot RemediationStepType = "Reboot"
	// RemediationStepReinstall reinstalls the device's operating system with the Machine's
	// current bootstrap data: same device, same reservation, same IPs.
	RemediationStepReinstall RemediationStepType = "Reinstall"
	// RemediationStepReplace hands the Machine back to its owner (MachineSet) to be deleted and
	// replaced. Control-plane Machines are never replaced.
	RemediationStepReplace RemediationStepType = "Replace"
)

// Default step timeouts: how long a step waits for the Machine to be healthy again.
const (
	DefaultRebootTimeout    = 5 * time.Minute
	DefaultReinstallTimeout = 20 * time.Minute
)

// RemediationStep is one step of a remediation strategy.
type RemediationStep struct {
	// type of the step: Reboot, Reinstall or Replace.
	// +required
	Type RemediationStepType `json:"type"`
	// timeout is how long the step waits, after its action, for the Machine to be healthy again
	// before it is run again or the next step starts. Default 5m for Reboot, 20m for Reinstall;
	// not used by Replace.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// attempts is how many times the step's action is run (1: once) before the next step
	// starts. Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Attempts *int32 `json:"attempts,omitempty"`
}

// TimeoutOrDefault is the step's timeout, or its type's default.
func (s RemediationStep) TimeoutOrDefault() time.Duration {
	if s.Timeout != nil && s.Timeout.Duration > 0 {
		return s.Timeout.Duration
	}
	if s.Type == RemediationStepReinstall {
		return DefaultReinstallTimeout
	}
	return DefaultRebootTimeout
}

// AttemptsOrDefault is how many times the step's action is run.
func (s RemediationStep) AttemptsOrDefault() int32 {
	if s.Attempts != nil && *s.Attempts > 0 {
		return *s.Attempts
	}
	return 1
}

// PacketRemediationSpec is how an unhealthy Machine's device is remediated.
type PacketRemediationSpec struct {
	// strategy is the ordered list of steps. Each runs until the Machine is healthy again or its
	// timeout and attempts are spent, then the next one starts; Replace, if any, is the last.
	// Default: Reboot, Reinstall, Replace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:XValidation:rule="self.filter(s, s.type == 'Replace').size() == 0 || (self.filter(s, s.type == 'Replace').size() == 1 && self[size(self) - 1].type == 'Replace')",message="Replace can only be the last step: no step runs after it"
	Strategy []RemediationStep `json:"strategy,omitempty"`
}

// DefaultRemediationStrategy is the strategy of a PacketRemediation that names none.
func DefaultRemediationStrategy() []RemediationStep {
	return []RemediationStep{
		{Type: RemediationStepReboot},
		{Type: RemediationStepReinstall},
		{Type: RemediationStepReplace},
	}
}

// StrategyOrDefault is the spec's strategy, or DefaultRemediationStrategy.
func (s PacketRemediationSpec) StrategyOrDefault() []RemediationStep {
	if len(s.Strategy) == 0 {
		return DefaultRemediationStrategy()
	}
	return s.Strategy
}

// RemediationPhase is where a remediation is.
type RemediationPhase string

const (
	// RemediationPhaseRunning: a step's action was taken; waiting for the Machine to recover.
	RemediationPhaseRunning RemediationPhase = "Running"
	// RemediationPhaseSucceeded: the Machine is healthy again.
	RemediationPhaseSucceeded RemediationPhase = "Succeeded"
	// RemediationPhaseReplacing: the Machine was handed back to its owner to be replaced.
	RemediationPhaseReplacing RemediationPhase = "Replacing"
	// RemediationPhaseStopped: the remediation ended without repairing the Machine (its Machine
	// or device is gone, a control plane is not replaced, the strategy is spent); the reason is
	// in the RemediationSucceeded condition.
	RemediationPhaseStopped RemediationPhase = "Stopped"
)

// PacketRemediationStatus reports a remediation's progress.
// +kubebuilder:validation:MinProperties=1
type PacketRemediationStatus struct {
	// phase is where the remediation is: Running, Succeeded, Replacing or Stopped.
	// +optional
	// +kubebuilder:validation:Enum=Running;Succeeded;Replacing;Stopped
	Phase RemediationPhase `json:"phase,omitempty"`
	// currentStep is the index in the strategy of the step being run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CurrentStep *int32 `json:"currentStep,omitempty"`
	// stepAttempts is how many times the current step's action was run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	StepAttempts int32 `json:"stepAttempts,omitempty"`
	// reboots is how many reboots the remediation asked Packet for.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Reboots int32 `json:"reboots,omitempty"`
	// reinstalls is how many reinstalls the remediation asked Packet for.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Reinstalls int32 `json:"reinstalls,omitempty"`
	// lastStepStartTime is when the current step's action was last run.
	// +optional
	LastStepStartTime *metav1.Time `json:"lastStepStartTime,omitempty"`
	// deviceID is the Packet device the remediation acts on.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DeviceID string `json:"deviceID,omitempty"`
	// conditions: RemediationSucceeded (the Machine is healthy again) and StepSucceeded (the
	// current step's action worked).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetremediations,scope=Namespaced,categories=cluster-api,shortName=prem
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase",description="Where the remediation is"
// +kubebuilder:printcolumn:name="Step",type="integer",JSONPath=".status.currentStep",description="Index of the current step"
// +kubebuilder:printcolumn:name="Reboots",type="integer",JSONPath=".status.reboots"
// +kubebuilder:printcolumn:name="Reinstalls",type="integer",JSONPath=".status.reinstalls"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=`.status.conditions[?(@.type=="RemediationSucceeded")].reason`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// PacketRemediation is a request to remediate one unhealthy Machine's Packet device. A
// MachineHealthCheck creates it from a PacketRemediationTemplate with the Machine's name, owned
// by the Machine, and deletes it once the Machine is healthy again.
type PacketRemediation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is how the Machine is remediated.
	// +optional
	Spec PacketRemediationSpec `json:"spec,omitempty,omitzero"`
	// status reports the remediation's progress.
	// +optional
	Status PacketRemediationStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions of the PacketRemediation (Cluster API conditions.Getter).
func (r *PacketRemediation) GetConditions() []metav1.Condition { return r.Status.Conditions }

// SetConditions sets the conditions of the PacketRemediation (Cluster API conditions.Setter).
func (r *PacketRemediation) SetConditions(conditions []metav1.Condition) {
	r.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// PacketRemediationList is a list of PacketRemediations.
type PacketRemediationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketRemediation `json:"items"`
}

// PacketRemediationTemplateSpec holds the PacketRemediation a MachineHealthCheck creates.
type PacketRemediationTemplateSpec struct {
	// template is the PacketRemediation to create for each unhealthy Machine.
	// +required
	Template PacketRemediationTemplateResource `json:"template"`
}

// PacketRemediationTemplateResource is the metadata and spec of the PacketRemediation a template
// creates.
type PacketRemediationTemplateResource struct {
	// metadata holds the labels and annotations given to the created PacketRemediation.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// spec of the created PacketRemediation.
	// +optional
	Spec PacketRemediationSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetremediationtemplates,scope=Namespaced,categories=cluster-api,shortName=premt
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta1"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// PacketRemediationTemplate is what a MachineHealthCheck's spec.remediation.templateRef names:
// Cluster API clones it into a PacketRemediation per unhealthy Machine.
type PacketRemediationTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +required
	Spec PacketRemediationTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// PacketRemediationTemplateList is a list of PacketRemediationTemplates.
type PacketRemediationTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketRemediationTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &PacketRemediation{}, &PacketRemediationList{},
		&PacketRemediationTemplate{}, &PacketRemediationTemplateList{})
}
