package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta1-packetcluster,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetclusters,versions=v1beta1,name=default.packetcluster.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta1-packetcluster,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetclusters,versions=v1beta1,name=validation.packetcluster.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// PacketCluster defaults and validates PacketClusters.
type PacketCluster struct{}

var (
	_ admission.Defaulter[*infrav1.PacketCluster] = &PacketCluster{}
	_ admission.Validator[*infrav1.PacketCluster] = &PacketCluster{}
)

// SetupWebhookWithManager registers the webhooks with the manager's webhook server.
func (w *PacketCluster) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.PacketCluster{}).WithDefaulter(w).WithValidator(w).Complete()
}

// Default sets vipManager CPEM, elasticIPReclaimPolicy Delete and, when a host is given without
// a port, port 6443.
func (w *PacketCluster) Default(_ context.Context, c *infrav1.PacketCluster) error {
	DefaultPacketClusterSpec(&c.Spec)
	return nil
}

// DefaultPacketClusterSpec applies the PacketCluster defaults to spec (also used for templates).
func DefaultPacketClusterSpec(spec *infrav1.PacketClusterSpec) {
	if spec.VIPManager == "" {
		spec.VIPManager = infrav1.CPEMVIPManager
	}
	if spec.ElasticIPReclaimPolicy == "" {
		spec.ElasticIPReclaimPolicy = infrav1.ElasticIPReclaimDelete
	}
	if spec.ControlPlaneEndpoint.Host != "" && spec.ControlPlaneEndpoint.Port == 0 {
		spec.ControlPlaneEndpoint.Port = infrav1.DefaultAPIServerPort
	}
}

// ValidateCreate validates a new PacketCluster.
func (w *PacketCluster) ValidateCreate(_ context.Context, c *infrav1.PacketCluster) (admission.Warnings, error) {
	errs, warnings := ValidatePacketClusterSpec(&c.Spec, field.NewPath("spec"), true)
	if c.Spec.ElasticIPReclaimPolicy == infrav1.ElasticIPReclaimRetain && c.Spec.ControlPlaneEndpoint.Host != "" {
		warnings = append(warnings, "spec.elasticIPReclaimPolicy has no effect: the controller reserves no elastic IP for a controlPlaneEndpoint host you give")
	}
	return warnings, invalid("PacketCluster", c.Name, errs)
}

// ValidateUpdate validates a change to a PacketCluster. Problems the old object already had are
// not reported again (so that, say, the controller can still remove its finalizer from a
// PacketCluster created before these webhooks existed).
func (w *PacketCluster) ValidateUpdate(_ context.Context, oldC, newC *infrav1.PacketCluster) (admission.Warnings, error) {
	path := field.NewPath("spec")
	errs, warnings := ValidatePacketClusterSpec(&newC.Spec, path, true)
	oldErrs, _ := ValidatePacketClusterSpec(&oldC.Spec, path, true)
	errs = ratchet(errs, oldErrs)

	oldSpec := oldC.Spec.DeepCopy()
	DefaultPacketClusterSpec(oldSpec)
	newSpec := newC.Spec.DeepCopy()
	DefaultPacketClusterSpec(newSpec)

	if newSpec.ProjectID != oldSpec.ProjectID {
		errs = append(errs, field.Invalid(path.Child("projectID"), newSpec.ProjectID, fmt.Sprintf(
			"cannot change: the cluster's devices and elastic IP live in project %q; create a new cluster to use another project", oldSpec.ProjectID)))
	}
	errs = append(errs, validateLocationChange(oldSpec.Metro, oldSpec.Facility, newSpec.Metro, newSpec.Facility, path,
		"a cluster's location cannot change: its elastic IP and devices stay where they were created")...)
	errs = append(errs, clusterNetworkChange(oldSpec, newSpec, path)...)
	if newSpec.VIPManager != oldSpec.VIPManager {
		errs = append(errs, field.Invalid(path.Child("vipManager"), newSpec.VIPManager, fmt.Sprintf(
			"cannot change from %s: the control-plane endpoint was set up for it and the nodes run its components; create a new cluster to use another VIP manager", oldSpec.VIPManager)))
	}
	oldEP, newEP := oldSpec.ControlPlaneEndpoint, newSpec.ControlPlaneEndpoint
	if oldEP.Host != "" && (newEP.Host != oldEP.Host || newEP.Port != oldEP.Port) {
		errs = append(errs, field.Invalid(path.Child("controlPlaneEndpoint"), fmt.Sprintf("%s:%d", newEP.Host, newEP.Port), fmt.Sprintf(
			"cannot change once set (it is %s:%d): every node's kubeconfig and the API server certificates use it, and the controller tracks the elastic IP behind it", oldEP.Host, oldEP.Port)))
	}
	if oldEP.Host != "" && secretName(oldSpec.CredentialsRef) != secretName(newSpec.CredentialsRef) {
		errs = append(errs, field.Invalid(path.Child("credentialsRef"), secretName(newSpec.CredentialsRef), fmt.Sprintf(
			"cannot change once the cluster has its endpoint (it is %q; empty means the manager's own key): its devices and elastic IP belong to that key's project, and removing it would silently move the cluster onto the manager's key; rotate the key inside the Secret instead",
			secretName(oldSpec.CredentialsRef))))
	}
	if newSpec.ElasticIPReclaimPolicy != oldSpec.ElasticIPReclaimPolicy {
		if !newC.DeletionTimestamp.IsZero() {
			// The controller reads the policy when it releases the cluster's resources. Once
			// deletion has started it may already have acted on the old value: switching to
			// Delete now could leave the IP reserved (orphaned) while the object says it was
			// released, and switching to Retain could come after the IP is gone.
			errs = append(errs, field.Forbidden(path.Child("elasticIPReclaimPolicy"), fmt.Sprintf(
				"cannot change while the PacketCluster is being deleted: the controller may already have acted on %s, so the elastic IP could be left reserved without anyone tracking it", oldSpec.ElasticIPReclaimPolicy)))
		} else if newSpec.ElasticIPReclaimPolicy == infrav1.ElasticIPReclaimRetain {
			warnings = append(warnings, "spec.elasticIPReclaimPolicy is Retain: the control-plane elastic IP stays reserved (and billed) in the project after the cluster is deleted")
		}
	}
	return warnings, invalid("PacketCluster", newC.Name, errs)
}

func secretName(ref *infrav1.SecretReference) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// ValidateDelete allows every deletion.
func (w *PacketCluster) ValidateDelete(_ context.Context, _ *infrav1.PacketCluster) (admission.Warnings, error) {
	return nil, nil
}

// ValidatePacketClusterSpec validates a PacketCluster spec at path. locationRequired is false for
// templates, whose location (and project) a ClusterClass may patch in per cluster: neither is
// required there nor checked for format.
func ValidatePacketClusterSpec(spec *infrav1.PacketClusterSpec, path *field.Path, locationRequired bool) (field.ErrorList, admission.Warnings) {
	var errs field.ErrorList
	switch {
	case spec.ProjectID == "":
		errs = append(errs, field.Required(path.Child("projectID"), "set the UUID of the Packet project the cluster runs in"))
	case locationRequired && !infrav1.IsUUID(spec.ProjectID):
		errs = append(errs, field.Invalid(path.Child("projectID"), spec.ProjectID,
			"must be the UUID of the Packet project (as in the console's project settings), not its name"))
	}
	// A template's location and project are often placeholders that a ClusterClass's patches
	// replace per cluster: their formats are checked on the PacketCluster.
	locErrs, warnings := validateLocation(spec.Metro, spec.Facility, path, locationRequired, locationRequired)
	errs = append(errs, locErrs...)

	switch spec.VIPManager {
	case "", infrav1.CPEMVIPManager, infrav1.KubeVIPVIPManager:
	case infrav1.EMLBVIPManager:
		errs = append(errs, validateEMLBMetro(spec, path, locationRequired)...)
	default:
		errs = append(errs, field.NotSupported(path.Child("vipManager"), spec.VIPManager,
			[]string{string(infrav1.CPEMVIPManager), string(infrav1.KubeVIPVIPManager), string(infrav1.EMLBVIPManager)}))
	}

	errs = append(errs, validateEndpoint(spec.ControlPlaneEndpoint, path.Child("controlPlaneEndpoint"))...)

	switch spec.ElasticIPReclaimPolicy {
	case "", infrav1.ElasticIPReclaimDelete, infrav1.ElasticIPReclaimRetain:
	default:
		errs = append(errs, field.NotSupported(path.Child("elasticIPReclaimPolicy"), spec.ElasticIPReclaimPolicy,
			[]string{string(infrav1.ElasticIPReclaimDelete), string(infrav1.ElasticIPReclaimRetain)}))
	}

	if spec.CredentialsRef != nil {
		for _, msg := range validation.IsDNS1123Subdomain(spec.CredentialsRef.Name) {
			errs = append(errs, field.Invalid(path.Child("credentialsRef", "name"), spec.CredentialsRef.Name,
				"must name a Secret in the PacketCluster's namespace: "+msg))
		}
	}
	if spec.BGP != nil && spec.VIPManager != infrav1.KubeVIPVIPManager {
		warnings = append(warnings, fmt.Sprintf("%s is only used with vipManager KUBE_VIP and is ignored", path.Child("bgp")))
	}
	errs = append(errs, validateClusterNetwork(spec, path)...)
	switch {
	case spec.ExposeAPIKeyInUserData && spec.CredentialsRef == nil:
		errs = append(errs, field.Forbidden(path.Child("exposeAPIKeyInUserData"),
			"only the key of the cluster's own credentialsRef Secret can be put in user-data, never the manager's (it serves every namespace): set credentialsRef to a Secret with this cluster's key, or leave exposeAPIKeyInUserData off"))
	case spec.ExposeAPIKeyInUserData:
		warnings = append(warnings, fmt.Sprintf("%s puts the Packet API key in the devices' user-data, readable from their metadata service, once the Secret's owner annotates it %s: \"true\"; prefer delivering it as a Secret",
			path.Child("exposeAPIKeyInUserData"), infrav1.ExposeInUserDataAnnotation))
	}
	return errs, warnings
}

// ratchet drops from errs the errors the old object already had, so an update is only rejected
// for problems it introduces.
func ratchet(errs, oldErrs field.ErrorList) field.ErrorList {
	if len(oldErrs) == 0 {
		return errs
	}
	old := make(map[string]bool, len(oldErrs))
	for _, e := range oldErrs {
		old[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !old[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

// validateEMLBMetro checks that an EMLB cluster is in a metro with Equinix Metal Load Balancers:
// a load balancer lives in a metro, not a facility. A template's metro is checked on the
// PacketClusters made from it: a ClusterClass may patch it in per cluster.
func validateEMLBMetro(spec *infrav1.PacketClusterSpec, path *field.Path, locationRequired bool) field.ErrorList {
	metros := catalog.LoadBalancerMetros()
	switch {
	case !locationRequired:
		return nil
	case spec.Metro == "":
		return field.ErrorList{field.Required(path.Child("metro"), fmt.Sprintf(
			"vipManager EMLB needs a metro (load balancers live in metros, not facilities); metros with load balancers: %s", strings.Join(metros, ", ")))}
	case !slices.Contains(metros, strings.ToLower(spec.Metro)):
		return field.ErrorList{field.NotSupported(path.Child("metro"), spec.Metro, metros)}
	}
	return nil
}
