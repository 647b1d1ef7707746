package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta1-packetmachinetemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetmachinetemplates,versions=v1beta1,name=default.packetmachinetemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta1-packetmachinetemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetmachinetemplates,versions=v1beta1,name=validation.packetmachinetemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// PacketMachineTemplate defaults and validates PacketMachineTemplates.
type PacketMachineTemplate struct{}

var (
	_ admission.Defaulter[*infrav1.PacketMachineTemplate] = &PacketMachineTemplate{}
	_ admission.Validator[*infrav1.PacketMachineTemplate] = &PacketMachineTemplate{}
)

// SetupWebhookWithManager registers the webhooks with the manager's webhook server.
func (w *PacketMachineTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.PacketMachineTemplate{}).WithDefaulter(w).WithValidator(w).Complete()
}

// Default applies the PacketMachine defaults to the template's spec, so that the machines cloned
// from it and the template agree.
func (w *PacketMachineTemplate) Default(_ context.Context, t *infrav1.PacketMachineTemplate) error {
	DefaultPacketMachineSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate validates a new PacketMachineTemplate.
func (w *PacketMachineTemplate) ValidateCreate(_ context.Context, t *infrav1.PacketMachineTemplate) (admission.Warnings, error) {
	errs, warnings := validateMachineTemplate(t)
	return warnings, invalid("PacketMachineTemplate", t.Name, errs)
}

// ValidateUpdate rejects changes to spec.template.spec, except in the Cluster API topology
// controller's dry-run requests, and validates the template's metadata.
func (w *PacketMachineTemplate) ValidateUpdate(ctx context.Context, oldT, newT *infrav1.PacketMachineTemplate) (admission.Warnings, error) {
	errs, warnings := validateMachineTemplate(newT)
	oldErrs, _ := validateMachineTemplate(oldT)
	errs = ratchet(errs, oldErrs)

	dryRun, err := isTopologyDryRun(ctx, newT)
	if err != nil {
		return nil, err
	}
	if !dryRun {
		errs = append(errs, machineSpecChanges(&oldT.Spec.Template.Spec, &newT.Spec.Template.Spec,
			field.NewPath("spec", "template", "spec"), true,
			"PacketMachineTemplate spec.template.spec is immutable: create a new PacketMachineTemplate and point the MachineDeployment or KubeadmControlPlane at it (Cluster API then rolls the machines out)")...)
	}
	return warnings, invalid("PacketMachineTemplate", newT.Name, errs)
}

// ValidateDelete allows every deletion.
func (w *PacketMachineTemplate) ValidateDelete(_ context.Context, _ *infrav1.PacketMachineTemplate) (admission.Warnings, error) {
	return nil, nil
}

func validateMachineTemplate(t *infrav1.PacketMachineTemplate) (field.ErrorList, admission.Warnings) {
	path := field.NewPath("spec", "template")
	errs, warnings := ValidatePacketMachineSpec(&t.Spec.Template.Spec, path.Child("spec"))
	if t.Spec.Template.Spec.ProviderID != "" {
		errs = append(errs, field.Forbidden(path.Child("spec", "providerID"),
			"must be empty in a template: each machine cloned from it is a different device, and the controller sets providerID on each PacketMachine"))
	}
	errs = append(errs, t.Spec.Template.ObjectMeta.Validate(path.Child("metadata"))...)
	if _, ok := t.Spec.Template.ObjectMeta.Annotations[infrav1.MachineIdentityAnnotation]; ok {
		errs = append(errs, field.Forbidden(path.Child("metadata", "annotations").Key(infrav1.MachineIdentityAnnotation),
			"is the identity of one device, set by the controller on each PacketMachine; every machine cloned from the template would share it"))
	}
	return errs, warnings
}
