// Package device creates or adopts the Packet device behind a PacketMachine, follows it through
// provisioning, and deletes it. It owns the DeviceReady condition.
//
// Creating a second device for one machine is the failure this package exists to prevent. The
// device is found again by its identity tags before every create, the intent to create is
// written to the PacketMachine before the request is sent, and the device ID is written right
// after; see find.go and create.go.
package device

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// Annotations the service keeps its own bookkeeping in. They live on the PacketMachine, not in
// memory, so that a restarted manager knows what the previous one was doing.
const (
	// CreateStartedAnnotation holds when a create request was sent whose device is not recorded
	// in spec.providerID yet. Lists may show a new device late, so while it is recent an empty
	// lookup does not mean "no device".
	CreateStartedAnnotation = "packetmachine.infrastructure.cluster.x-k8s.io/device-create-started"
	// CreateRetryAnnotation holds when a create Packet refused for a while (a full project, a
	// spot bid below the market) may be sent again; a changed spec is tried at once.
	CreateRetryAnnotation = "packetmachine.infrastructure.cluster.x-k8s.io/device-create-retry-at"
	// DeleteRequestedAnnotation held when the device's deletion was requested, before
	// status.deviceDeletionRequestedAt did (one write fewer per deletion). It is still read, so
	// that a machine being deleted across an upgrade is followed, not asked for again.
	DeleteRequestedAnnotation = "packetmachine.infrastructure.cluster.x-k8s.io/device-delete-requested"
	// ProjectAnnotation and CredentialsAnnotation record, with the first create, the project
	// the device is in and the credentials Secret (in the PacketMachine's namespace) it was
	// created with, "" for the manager's key: what deleting it needs if the PacketCluster is
	// gone first.
	ProjectAnnotation     = "packetmachine.infrastructure.cluster.x-k8s.io/project"
	CredentialsAnnotation = "packetmachine.infrastructure.cluster.x-k8s.io/credentials-secret"
)

// RecordedPacketCluster is a stand-in PacketCluster with the project and credentials Secret the
// PacketMachine recorded, or nil when it recorded none.
func RecordedPacketCluster(pm *infrav1.PacketMachine) *infrav1.PacketCluster {
	project := pm.Annotations[ProjectAnnotation]
	if project == "" {
		return nil
	}
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: pm.Namespace}}
	pc.Spec.ProjectID = project
	if secret := pm.Annotations[CredentialsAnnotation]; secret != "" {
		pc.Spec.CredentialsRef = &infrav1.SecretReference{Name: secret}
	}
	return pc
}

// recordCluster writes the annotations RecordedPacketCluster reads.
func (s *Service) recordCluster() {
	pm, pc := s.scope.PacketMachine, s.scope.PacketCluster
	pm.Annotations[ProjectAnnotation] = pc.Spec.ProjectID
	if pc.Spec.CredentialsRef != nil {
		pm.Annotations[CredentialsAnnotation] = pc.Spec.CredentialsRef.Name
	} else {
		delete(pm.Annotations, CredentialsAnnotation)
	}
}

// Options tune the service; the zero value of each field means its default.
type Options struct {
	// PollMin and PollMax bound the interval between two looks at a device that is provisioning
	// or deprovisioning. Default 10s and 2m.
	PollMin, PollMax time.Duration
	// CreateConfirmWindow is how long a create whose answer was lost may take to show in
	// Packet's device lists before it is sent again. Default 2m.
	CreateConfirmWindow time.Duration
	// Now is the clock poll intervals and the bookkeeping annotations are computed with.
	Now func() time.Time
	// Progress remembers provisioning progress between reconciles; nil keeps none.
	Progress *Progress
	// DeleteDeadline is how long a device may be deprovisioning after its deletion was asked
	// before that is reported (Warning event, DeviceDeletionStuck) and the delete sent again.
	// Default 15m: Packet takes minutes, a wiped hardware reservation longer.
	DeleteDeadline time.Duration
	// SpotWatch is how often an active spot device is looked at, to see a termination notice
	// (Packet gives about two minutes). Default three times PollMin (30s).
	SpotWatch time.Duration
	// SentCreates remembers this process's creates, to recognise stale copies of a
	// PacketMachine; nil remembers none, and every lookup before a create then asks Packet.
	SentCreates *SentCreates
	// SnapshotMaxAge is how old the project's device list that answers a look may be (the
	// Packet client's packet.Options.DeviceSnapshotMaxAge); a look aimed at an estimated end
	// lands that long after it. Default packet.DefaultSnapshotMaxAge.
	SnapshotMaxAge time.Duration
}

func (o Options) withDefaults() Options {
	if o.PollMin <= 0 {
		o.PollMin = 10 * time.Second
	}
	if o.PollMax < o.PollMin {
		o.PollMax = max(2*time.Minute, o.PollMin)
	}
	if o.CreateConfirmWindow <= 0 {
		o.CreateConfirmWindow = 2 * time.Minute
	}
	if o.DeleteDeadline <= 0 {
		o.DeleteDeadline = 15 * time.Minute
	}
	if o.SpotWatch <= 0 {
		o.SpotWatch = 3 * o.PollMin
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SnapshotMaxAge <= 0 {
		o.SnapshotMaxAge = estimateMargin
	}
	return o
}

// Service manages the device of one PacketMachine.
type Service struct {
	scope *scope.MachineScope
	opts  Options
}

// NewService returns the device service for a machine.
func NewService(s *scope.MachineScope, opts Options) *Service {
	return &Service{scope: s, opts: opts.withDefaults()}
}

// SetWaiting says why no device is being created yet: what the machine waits for.
func SetWaiting(pm *infrav1.PacketMachine, reason, message string) {
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: message})
}

// CredentialsFailed reports that the cluster's API key cannot be used, so the device can be
// neither created, followed nor deleted.
func CredentialsFailed(pm *infrav1.PacketMachine, err error) (ctrl.Result, error) {
	return apistatus.Record(pm, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
}

// setCondition sets DeviceReady. A change of reason to a failure reason is announced with a
// Warning event, so users see transitions rather than one event per reconcile.
func (s *Service) setCondition(status metav1.ConditionStatus, reason, message string) {
	pm := s.scope.PacketMachine
	prev := conditions.Get(pm, infrav1.DeviceReadyCondition)
	if warningReasons[reason] && (prev == nil || prev.Reason != reason) {
		record.Warnf(pm, reason, "%s", message)
	}
	conditions.Set(pm, metav1.Condition{Type: infrav1.DeviceReadyCondition, Status: status, Reason: reason, Message: message})
}

var warningReasons = map[string]bool{
	infrav1.DeviceProvisionFailedReason:          true,
	infrav1.DeviceNotFoundReason:                 true,
	infrav1.BootstrapDataInvalidReason:           true,
	infrav1.HardwareReservationUnavailableReason: true,
	infrav1.InvalidRequestReason:                 true,
	infrav1.DeviceTerminationScheduledReason:     true,
	infrav1.DeviceReclaimedReason:                true,
	infrav1.SpotBidRefusedReason:                 true,
	infrav1.SpotControlPlaneNotAllowedReason:     true,
	infrav1.APIKeyNotExposableReason:             true,
	infrav1.DeviceNotOwnedReason:                 true,
	infrav1.DeviceDeletionStuckReason:            true,
}

// annotationTime reads one of the bookkeeping annotations.
func (s *Service) annotationTime(key string) (time.Time, bool) {
	v, ok := s.scope.PacketMachine.Annotations[key]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

func (s *Service) setAnnotationTime(key string, t time.Time) {
	pm := s.scope.PacketMachine
	if pm.Annotations == nil {
		pm.Annotations = map[string]string{}
	}
	pm.Annotations[key] = t.UTC().Format(time.RFC3339Nano)
}

func (s *Service) removeAnnotation(key string) { delete(s.scope.PacketMachine.Annotations, key) }

// Reconcile makes sure the machine has exactly one device and reports its state. It returns the
// device once it is active; before that it returns nil and when to look again.
//
// The order is what keeps a machine at one device:
//  1. a device recorded in spec.providerID is read by ID and never replaced;
//  2. otherwise the project's devices carrying the machine's identity tags are adopted;
//  3. otherwise, unless a create whose answer was lost may still show up, one is created.
func (s *Service) Reconcile(ctx context.Context) (*packet.Device, ctrl.Result, error) {
	dev, res, err := s.findOrCreate(ctx)
	if dev == nil || err != nil {
		return nil, res, err
	}
	if err := s.claim(ctx, dev); err != nil {
		res, err := apistatus.Record(s.scope.PacketMachine, infrav1.DeviceReadyCondition, err, apistatus.SlowRetry)
		return nil, res, err
	}
	return s.observe(dev)
}
