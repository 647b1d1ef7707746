package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta1-packetclustertemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetclustertemplates,versions=v1beta1,name=default.packetclustertemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta1-packetclustertemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetclustertemplates,versions=v1beta1,name=validation.packetclustertemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// PacketClusterTemplate defaults and validates PacketClusterTemplates.
type PacketClusterTemplate struct{}

var (
	_ admission.Defaulter[*infrav1.PacketClusterTemplate] = &PacketClusterTemplate{}
	_ admission.Validator[*infrav1.PacketClusterTemplate] = &PacketClusterTemplate{}
)

// SetupWebhookWithManager registers the webhooks with the manager's webhook server.
func (w *PacketClusterTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.PacketClusterTemplate{}).WithDefaulter(w).WithValidator(w).Complete()
}

// Default applies the PacketCluster defaults to the template's spec, so that clusters created
// from it and the template agree.
func (w *PacketClusterTemplate) Default(_ context.Context, t *infrav1.PacketClusterTemplate) error {
	DefaultPacketClusterSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate validates a new PacketClusterTemplate.
func (w *PacketClusterTemplate) ValidateCreate(_ context.Context, t *infrav1.PacketClusterTemplate) (admission.Warnings, error) {
	errs, warnings := validateClusterTemplate(t)
	return warnings, invalid("PacketClusterTemplate", t.Name, errs)
}

// ValidateUpdate rejects changes to spec.template.spec, except in the Cluster API topology
// controller's dry-run requests, and validates the template's metadata.
func (w *PacketClusterTemplate) ValidateUpdate(ctx context.Context, oldT, newT *infrav1.PacketClusterTemplate) (admission.Warnings, error) {
	errs, warnings := validateClusterTemplate(newT)
	oldErrs, _ := validateClusterTemplate(oldT)
	errs = ratchet(errs, oldErrs)

	dryRun, err := isTopologyDryRun(ctx, newT)
	if err != nil {
		return nil, err
	}
	oldSpec, newSpec := oldT.Spec.Template.Spec.DeepCopy(), newT.Spec.Template.Spec.DeepCopy()
	DefaultPacketClusterSpec(oldSpec)
	DefaultPacketClusterSpec(newSpec)
	if !dryRun && !equality.Semantic.DeepEqual(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "spec"),
			"PacketClusterTemplate spec.template.spec is immutable: create a new PacketClusterTemplate and point the ClusterClass at it"))
	}
	return warnings, invalid("PacketClusterTemplate", newT.Name, errs)
}

// ValidateDelete allows every deletion.
func (w *PacketClusterTemplate) ValidateDelete(_ context.Context, _ *infrav1.PacketClusterTemplate) (admission.Warnings, error) {
	return nil, nil
}

func validateClusterTemplate(t *infrav1.PacketClusterTemplate) (field.ErrorList, admission.Warnings) {
	path := field.NewPath("spec", "template")
	// A ClusterClass may patch the location in per cluster; the PacketCluster it creates is
	// validated (location included) by the PacketCluster webhook.
	errs, warnings := ValidatePacketClusterSpec(&t.Spec.Template.Spec, path.Child("spec"), false)
	errs = append(errs, t.Spec.Template.ObjectMeta.Validate(path.Child("metadata"))...)
	if t.Spec.Template.Spec.ControlPlaneEndpoint.Host != "" {
		warnings = append(warnings, "spec.template.spec.controlPlaneEndpoint is set: every cluster created from this template gets the same endpoint")
	}
	return errs, warnings
}
