package scope

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// MachineConditions are the PacketMachine conditions Ready summarises, in order.
var MachineConditions = []string{
	infrav1.PacketAPIAvailableCondition,
	infrav1.DeviceReadyCondition,
	infrav1.ElasticIPAssignedCondition,
	infrav1.BGPSessionReadyCondition,
	infrav1.NetworkReadyCondition,
	infrav1.LoadBalancerOriginReadyCondition,
}

// MachineScopeParams are what a MachineScope is built from.
type MachineScopeParams struct {
	Client        client.Client
	Cluster       *clusterv1.Cluster
	Machine       *clusterv1.Machine
	PacketCluster *infrav1.PacketCluster
	PacketMachine *infrav1.PacketMachine
	Packet        packet.Client
	Credentials   credentials.Keys
	// APIReader reads the PacketMachine from the API server for IsCurrent; nil skips that.
	APIReader client.Reader
	// ManagementCluster is the identity of this management cluster (ManagementClusterIdentity),
	// put on the machine's device; "" puts none on.
	ManagementCluster string
	// AdoptLegacy is ClusterScopeParams.AdoptLegacy: the machine may follow a device, and be
	// given an elastic IP, that only the previous provider's name-only tag marks as the cluster's.
	AdoptLegacy bool
}

// MachineScope is one reconcile of a PacketMachine.
type MachineScope struct {
	client.Client
	Cluster       *clusterv1.Cluster
	Machine       *clusterv1.Machine
	PacketCluster *infrav1.PacketCluster
	PacketMachine *infrav1.PacketMachine
	Packet        packet.Client
	Credentials   credentials.Keys
	// ManagementCluster and AdoptLegacy are MachineScopeParams'.
	ManagementCluster string
	AdoptLegacy       bool

	apiReader client.Reader
	writer    *machineWriter
}

// NewMachineScope validates params and starts tracking changes to the PacketMachine.
func NewMachineScope(p MachineScopeParams) (*MachineScope, error) {
	if p.Client == nil || p.Cluster == nil || p.Machine == nil || p.PacketCluster == nil || p.PacketMachine == nil {
		return nil, errors.New("machine scope needs a client, a Cluster, a Machine, a PacketCluster and a PacketMachine")
	}
	return &MachineScope{Client: p.Client, Cluster: p.Cluster, Machine: p.Machine, PacketCluster: p.PacketCluster,
		PacketMachine: p.PacketMachine, Packet: p.Packet, Credentials: p.Credentials, ManagementCluster: p.ManagementCluster, AdoptLegacy: p.AdoptLegacy,
		apiReader: p.APIReader,
		writer:    newMachineWriter(p.Client, p.PacketMachine)}, nil
}

// Name and Namespace are the PacketMachine's.
func (s *MachineScope) Name() string      { return s.PacketMachine.Name }
func (s *MachineScope) Namespace() string { return s.PacketMachine.Namespace }

// ProjectID is the Packet project of the cluster.
func (s *MachineScope) ProjectID() string { return s.PacketCluster.Spec.ProjectID }

// IsControlPlane reports whether the Machine is a control-plane machine.
func (s *MachineScope) IsControlPlane() bool { return util.IsControlPlaneMachine(s.Machine) }

// IdentityTags are the tags that find this machine's device again: machine identity, cluster,
// role. The machine identity tag comes first: it is the one lookups filter on.
func (s *MachineScope) IdentityTags() []string {
	return []string{
		infrav1.MachineIdentityTag(s.PacketMachine),
		infrav1.ClusterTag(s.Cluster.Namespace, s.Cluster.Name),
		infrav1.RoleTag(s.IsControlPlane()),
	}
}

// EnsureIdentity gives the PacketMachine its device identity (MachineIdentityAnnotation) if it
// has none yet. Callers persist it before sending anything that carries the identity tag.
func (s *MachineScope) EnsureIdentity() {
	if s.PacketMachine.Annotations[infrav1.MachineIdentityAnnotation] != "" {
		return
	}
	if s.PacketMachine.Annotations == nil {
		s.PacketMachine.Annotations = map[string]string{}
	}
	s.PacketMachine.Annotations[infrav1.MachineIdentityAnnotation] = string(uuid.NewUUID())
}

// DeviceID is the device recorded in spec.providerID, "" when none is.
func (s *MachineScope) DeviceID() string {
	id, err := infrav1.ParseProviderID(s.PacketMachine.Spec.ProviderID)
	if err != nil {
		return ""
	}
	return id
}

// SetDeviceID records the device in spec.providerID.
func (s *MachineScope) SetDeviceID(id string) {
	s.PacketMachine.Spec.ProviderID = infrav1.ProviderID(id)
}

// Location is where the device goes: the Machine's failure domain (a facility) when set, else
// the PacketMachine's metro or facility, else the PacketCluster's. Exactly one of the two
// results is set.
func (s *MachineScope) Location() (metro, facility string) {
	if fd := s.Machine.Spec.FailureDomain; fd != "" {
		return "", fd
	}
	if m := s.PacketMachine.Spec; m.Metro != "" || m.Facility != "" {
		if m.Metro != "" {
			return m.Metro, ""
		}
		return "", m.Facility
	}
	if s.PacketCluster.Spec.Metro != "" {
		return s.PacketCluster.Spec.Metro, ""
	}
	return "", s.PacketCluster.Spec.Facility
}

// BootstrapData returns the bootstrap Secret's user-data and its format ("cloud-config" or
// "ignition"). It errors while the Machine has no bootstrap data yet.
func (s *MachineScope) BootstrapData(ctx context.Context) (data []byte, format string, err error) {
	name := s.Machine.Spec.Bootstrap.DataSecretName
	if name == nil || *name == "" {
		return nil, "", errors.New("the Machine has no bootstrap data secret yet")
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: s.Machine.Namespace, Name: *name}
	if err := s.Get(ctx, key, secret); err != nil {
		return nil, "", fmt.Errorf("reading bootstrap data secret %s: %w", key, err)
	}
	value, ok := secret.Data["value"]
	if !ok {
		return nil, "", fmt.Errorf("bootstrap data secret %s has no \"value\" key", key)
	}
	format = string(secret.Data["format"])
	if format == "" {
		format = "cloud-config"
	}
	return value, format, nil
}

// Close summarises the conditions into Ready and writes the PacketMachine: at most one patch of
// metadata and spec and one of the status (see machineWriter).
func (s *MachineScope) Close(ctx context.Context) error {
	if err := setReadySummary(s.PacketMachine, MachineConditions); err != nil {
		return err
	}
	return s.writer.write(ctx, s.PacketMachine)
}

// IsCurrent reports whether the PacketMachine this reconcile works on is the API server's
// current one. A reconcile starts from the informer cache, which may not have this process's
// last writes yet: such a copy can lack the recorded device, the create in flight or Packet's
// refusal, and look like a machine that still needs a device. resourceVersions are compared for
// equality only, as Kubernetes allows.
func (s *MachineScope) IsCurrent(ctx context.Context) (bool, error) {
	if s.apiReader == nil {
		return true, nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(infrav1.GroupVersion.WithKind("PacketMachine"))
	if err := s.apiReader.Get(ctx, client.ObjectKeyFromObject(s.PacketMachine), live); err != nil {
		return false, err
	}
	return live.ResourceVersion == s.PacketMachine.ResourceVersion, nil
}

// PatchNow writes the PacketMachine's metadata and spec immediately, e.g. to record a create in
// flight or a new device's provider ID before anything else can fail. What must survive a crash
// lives there; the status changes made so far are written by Close, with the rest of the
// reconcile's status, in one request.
func (s *MachineScope) PatchNow(ctx context.Context) error {
	return s.writer.writeObject(ctx, s.PacketMachine)
}
