package capi

import (
	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// ciLabel marks the specs CI runs (`make test-e2e`, beside the other suite); `make
// test-e2e-full` and `make test-e2e-capi` run them all. See docs/e2e.md.
const ciLabel = "ci"

// Each of Cluster API's specs creates its own namespace and cluster and deletes both when it
// ends; the leak check after it (an outer AfterEach, so it runs after the spec's own) looks at
// the whole simulated project.

var _ = Describe("Cluster API quick start", Label(ciLabel), func() {
	AfterEach(expectNoLeaks)

	Context("default flavour", func() {
		capie2e.QuickStartSpec(ctx, func() capie2e.QuickStartSpecInput {
			return capie2e.QuickStartSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet")}
		})
	})

	Context("topology flavour (ClusterClass)", func() {
		capie2e.QuickStartSpec(ctx, func() capie2e.QuickStartSpecInput {
			return capie2e.QuickStartSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet"),
				Flavor: ptr.To("topology")}
		})
	})
})

var _ = Describe("Cluster API MachineDeployment scale", Label(ciLabel), func() {
	AfterEach(expectNoLeaks)

	Context("default flavour", func() {
		capie2e.MachineDeploymentScaleSpec(ctx, func() capie2e.MachineDeploymentScaleSpecInput {
			return capie2e.MachineDeploymentScaleSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet")}
		})
	})
})

// The spec starts from Machines with two taints (test-only flavour kcp-md-taints), which Cluster
// API accepts only with its MachineTaintPropagation feature gate: the suite's sandbox turns it on.
var _ = Describe("Cluster API KubeadmControlPlane and MachineDeployment rollout", func() {
	AfterEach(expectNoLeaks)

	Context("kcp-md-taints flavour: in-place changes and taints, then the workers rolled to a new template", func() {
		capie2e.KCPAndMachineDeploymentRolloutSpec(ctx, func() capie2e.KCPAndMachineDeploymentRolloutSpecInput {
			return capie2e.KCPAndMachineDeploymentRolloutSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet"),
				Flavor: "kcp-md-taints"}
		})
	})
})

var _ = Describe("Cluster API cluster upgrade", func() {
	AfterEach(expectNoLeaks)

	// Conformance needs container images and a real kubelet: the emulated nodes have neither.
	Context("topology flavour: control plane and workers to a new Kubernetes version, conformance skipped", func() {
		capie2e.ClusterUpgradeConformanceSpec(ctx, func() capie2e.ClusterUpgradeConformanceSpecInput {
			return capie2e.ClusterUpgradeConformanceSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet"),
				Flavor: ptr.To("topology"), SkipConformanceTests: true}
		})
	})
})

var _ = Describe("Cluster API ClusterClass changes", func() {
	AfterEach(expectNoLeaks)

	// Each change to the ClusterClass's templates rolls out: the control plane's kubeadm
	// verbosity, the workers' bootstrap verbosity, then their PacketMachineTemplate's tags (new
	// devices); then the Cluster is rebased onto a copy of the class in another namespace.
	Context("topology flavour: control plane, bootstrap and PacketMachineTemplate changes rolled out", func() {
		capie2e.ClusterClassChangesSpec(ctx, func() capie2e.ClusterClassChangesSpecInput {
			return capie2e.ClusterClassChangesSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet"),
				Flavor:                   "topology",
				ModifyControlPlaneFields: map[string]any{"spec.kubeadmConfigSpec.verbosity": int64(4)},
				ModifyMachineDeploymentBootstrapConfigTemplateFields:       map[string]any{"spec.template.spec.verbosity": int64(4)},
				ModifyMachineDeploymentInfrastructureMachineTemplateFields: map[string]any{"spec.template.spec.tags": []any{"clusterclass-changed"}},
			}
		})
	})
})

var _ = Describe("Cluster API MachineDeployment remediation", Label(ciLabel), func() {
	AfterEach(expectNoLeaks)

	Context("md-remediation flavour: a worker's node condition set, its Machine replaced", func() {
		capie2e.MachineDeploymentRemediationSpec(ctx, func() capie2e.MachineDeploymentRemediationSpecInput {
			return capie2e.MachineDeploymentRemediationSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet")}
		})
	})
})

var _ = Describe("Cluster API KubeadmControlPlane remediation", Label(ciLabel), func() {
	AfterEach(expectNoLeaks)

	// The spec's control planes wait in /wait-signal.sh, before kubeadm, for its signal through a
	// ConfigMap of the management cluster: the sandbox's boot emulation runs that script with
	// bash (curl and jq) on this machine, and the sandbox publishes kube-public/cluster-info,
	// where the spec finds the management cluster's address.
	Context("kcp-remediation flavour: control planes replaced while bootstrapping and once provisioned", func() {
		capie2e.KCPRemediationSpec(ctx, func() capie2e.KCPRemediationSpecInput {
			return capie2e.KCPRemediationSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet")}
		})
	})
})

var _ = Describe("Cluster API cluster deletion", Label(ciLabel), func() {
	AfterEach(expectNoLeaks)

	Context("topology flavour: workers, then control planes, then the PacketCluster", func() {
		capie2e.ClusterDeletionSpec(ctx, func() capie2e.ClusterDeletionSpecInput {
			return capie2e.ClusterDeletionSpecInput{E2EConfig: e2eConfig, ClusterctlConfigPath: clusterctlConfigPath,
				BootstrapClusterProxy: bootstrapClusterProxy, ArtifactFolder: artifactFolder, InfrastructureProvider: ptr.To("packet"),
				Flavor: ptr.To("topology"), ControlPlaneMachineCount: ptr.To[int64](3),
				ClusterDeletionPhases: []capie2e.ClusterDeletionPhase{
					{ObjectFilter: ownedBy("MachineDeployment", "MachineSet"), BlockingObjectFilter: kindIs("Machine")},
					{ObjectFilter: ownedBy("KubeadmControlPlane"), BlockingObjectFilter: kindIs("Machine")},
					{ObjectFilter: kindIs("PacketCluster"), BlockingObjectFilter: kindIs("PacketCluster")},
				}}
		})
	})
})

type objectFilter = func(corev1.ObjectReference, []metav1.OwnerReference) bool

// ownedBy selects the owners of a deletion phase (objects of those kinds) and the Machines they
// own, as Cluster API's own cluster deletion test does.
func ownedBy(kinds ...string) objectFilter {
	return func(ref corev1.ObjectReference, owners []metav1.OwnerReference) bool {
		for _, k := range kinds {
			if ref.Kind == k {
				return true
			}
		}
		if ref.Kind != "Machine" {
			return false
		}
		for _, o := range owners {
			for _, k := range kinds {
				if o.Kind == k {
					return true
				}
			}
		}
		return false
	}
}

func kindIs(kind string) objectFilter {
	return func(ref corev1.ObjectReference, _ []metav1.OwnerReference) bool { return ref.Kind == kind }
}
