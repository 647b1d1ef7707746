package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta1-packetmachine,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetmachines,versions=v1beta1,name=default.packetmachine.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta1-packetmachine,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=packetmachines,versions=v1beta1,name=validation.packetmachine.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// PacketMachine defaults and validates PacketMachines.
type PacketMachine struct{}

var (
	_ admission.Defaulter[*infrav1.PacketMachine] = &PacketMachine{}
	_ admission.Validator[*infrav1.PacketMachine] = &PacketMachine{}
)

// SetupWebhookWithManager registers the webhooks with the manager's webhook server.
func (w *PacketMachine) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.PacketMachine{}).WithDefaulter(w).WithValidator(w).Complete()
}

// Default writes down the billing cycle the Packet API uses when none is given (hourly).
func (w *PacketMachine) Default(_ context.Context, m *infrav1.PacketMachine) error {
	DefaultPacketMachineSpec(&m.Spec)
	return nil
}

// DefaultPacketMachineSpec applies the PacketMachine defaults to spec (also used for templates).
func DefaultPacketMachineSpec(spec *infrav1.PacketMachineSpec) {
	if spec.BillingCycle == "" {
		spec.BillingCycle = infrav1.DefaultBillingCycle
	}
}

// ValidateCreate validates a new PacketMachine.
func (w *PacketMachine) ValidateCreate(_ context.Context, m *infrav1.PacketMachine) (admission.Warnings, error) {
	errs, warnings := ValidatePacketMachineSpec(&m.Spec, field.NewPath("spec"))
	errs = append(errs, validateSpotControlPlane(m)...)
	errs = append(errs, validateControlPlaneNetwork(m)...)
	errs = append(errs, validateSSHKeyFormats(m.Spec.SSHKeys, field.NewPath("spec", "sshKeys"))...)
	return warnings, invalid("PacketMachine", m.Name, errs)
}

// ValidateUpdate validates a change to a PacketMachine: the spec describes a device that exists
// (or is being created), so only a facility-to-metro migration and an empty providerID (which
// the controller fills) may change; nor may the device identity annotation, once set.
func (w *PacketMachine) ValidateUpdate(_ context.Context, oldM, newM *infrav1.PacketMachine) (admission.Warnings, error) {
	errs, warnings := ValidatePacketMachineUpdate(&oldM.Spec, &newM.Spec, field.NewPath("spec"))
	// clusterctl move replaces all annotations of a moved object's source copy with its
	// delete-for-move annotation before deleting it; the copy on the target keeps the identity.
	_, deleteForMove := newM.Annotations[clusterctlv1.DeleteForMoveAnnotation]
	if was := oldM.Annotations[infrav1.MachineIdentityAnnotation]; was != "" && !deleteForMove &&
		newM.Annotations[infrav1.MachineIdentityAnnotation] != was {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(infrav1.MachineIdentityAnnotation),
			fmt.Sprintf("is immutable once set (%q): the machine's device is tagged with it", was)))
	}
	return warnings, invalid("PacketMachine", newM.Name, errs)
}

// ValidateDelete allows every deletion.
func (w *PacketMachine) ValidateDelete(_ context.Context, _ *infrav1.PacketMachine) (admission.Warnings, error) {
	return nil, nil
}

// ValidatePacketMachineSpec validates a PacketMachine spec at path.
func ValidatePacketMachineSpec(spec *infrav1.PacketMachineSpec, path *field.Path) (field.ErrorList, admission.Warnings) {
	var errs field.ErrorList
	if spec.OS == "" {
		errs = append(errs, field.Required(path.Child("os"), `set the operating system slug (for example "ubuntu_24_04")`))
	}
	if spec.MachineType == "" {
		errs = append(errs, field.Required(path.Child("machineType"), `set the Packet plan (for example "c3.small.x86")`))
	}
	locErrs, warnings := validateLocation(spec.Metro, spec.Facility, path, false, true)
	errs = append(errs, locErrs...)

	switch {
	case spec.IPXEUrl != "" && spec.OS != infrav1.CustomIPXEOS:
		errs = append(errs, field.Invalid(path.Child("ipxeURL"), spec.IPXEUrl, fmt.Sprintf(
			"is only used with os %q (os is %q): set os to %s to boot from this iPXE script, or remove ipxeURL", infrav1.CustomIPXEOS, spec.OS, infrav1.CustomIPXEOS)))
	case spec.OS == infrav1.CustomIPXEOS && spec.IPXEUrl == "":
		errs = append(errs, field.Required(path.Child("ipxeURL"), fmt.Sprintf(
			"os %q boots the iPXE script at ipxeURL: set it to the script's http(s) URL, or choose an operating system slug", infrav1.CustomIPXEOS)))
	case spec.IPXEUrl != "":
		errs = append(errs, validateHTTPURL(spec.IPXEUrl, path.Child("ipxeURL"))...)
	}
	if spec.AlwaysPXE && spec.OS != infrav1.CustomIPXEOS {
		warnings = append(warnings, fmt.Sprintf("%s only has an effect with os %q", path.Child("alwaysPXE"), infrav1.CustomIPXEOS))
	}

	if spec.BillingCycle != "" && !slices.Contains(infrav1.BillingCycles, spec.BillingCycle) {
		errs = append(errs, field.NotSupported(path.Child("billingCycle"), spec.BillingCycle, infrav1.BillingCycles))
	}
	if _, _, err := infrav1.ParseHardwareReservationIDs(spec.HardwareReservationID); err != nil {
		errs = append(errs, field.Invalid(path.Child("hardwareReservationID"), spec.HardwareReservationID,
			`must be a hardware reservation UUID, a comma-separated list of them (tried in order), or "next-available": `+err.Error()))
	}
	errs = append(errs, validateTags(spec.Tags, path.Child("tags"))...)
	for i, key := range spec.SSHKeys {
		if strings.TrimSpace(key) == "" {
			errs = append(errs, field.Invalid(path.Child("sshKeys").Index(i), key, "must be a project SSH key UUID or a public key, not empty"))
		}
	}
	if spec.ProviderID != "" && !isProviderID(spec.ProviderID) {
		errs = append(errs, field.Invalid(path.Child("providerID"), spec.ProviderID,
			"must be "+infrav1.ProviderIDPrefix+"<device UUID>; the controller sets it once the device exists, leave it empty"))
	}
	if spec.CustomData != nil && len(spec.CustomData.Raw) > 0 && !json.Valid(spec.CustomData.Raw) {
		errs = append(errs, field.Invalid(path.Child("customData"), string(spec.CustomData.Raw), "must be valid JSON"))
	}
	errs = append(errs, validateSpot(spec, path)...)
	if spec.Network != nil && spec.Network.PortMode != "" && !slices.Contains(portModes, string(spec.Network.PortMode)) {
		errs = append(errs, field.NotSupported(path.Child("network", "portMode"), spec.Network.PortMode, portModes))
	}
	errs = append(errs, validateMachineNetwork(spec.Network, path.Child("network"))...)
	errs = append(errs, validateStorage(spec.Storage, path.Child("storage"))...)
	return errs, warnings
}

var portModes = []string{string(infrav1.PortModeLayer3), string(infrav1.PortModeHybrid), string(infrav1.PortModeHybridBonded),
	string(infrav1.PortModeLayer2Individual), string(infrav1.PortModeLayer2Bonded)}

// validateSpot checks the spot-market fields: a bid above zero with spotInstance, and nothing
// Packet refuses (a spot device on a hardware reservation).
func validateSpot(spec *infrav1.PacketMachineSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case !spec.SpotInstance && spec.SpotPriceMax != nil:
		errs = append(errs, field.Invalid(path.Child("spotPriceMax"), spec.SpotPriceMax.String(),
			"is the bid of a spot device: set spotInstance: true to buy the device on the spot market, or remove spotPriceMax"))
	case spec.SpotInstance && spec.SpotPriceMax == nil:
		errs = append(errs, field.Required(path.Child("spotPriceMax"),
			`a spot device needs a bid: set the most it may cost an hour, in US dollars (for example "0.50")`))
	case spec.SpotInstance && spec.SpotPriceMax.Sign() <= 0:
		errs = append(errs, field.Invalid(path.Child("spotPriceMax"), spec.SpotPriceMax.String(),
			`must be more than 0: it is the most the device may cost an hour, in US dollars (for example "0.50")`))
	}
	if spec.SpotInstance && spec.HardwareReservationID != "" {
		errs = append(errs, field.Invalid(path.Child("spotInstance"), true,
			"a device on a hardware reservation is already paid for and cannot be a spot device: remove hardwareReservationID or spotInstance"))
	}
	return errs
}

// validateSSHKeyFormats checks that each sshKeys entry is a key UUID or a parseable OpenSSH
// public key, which the controller would otherwise fail on at create time. Only on
// PacketMachines: a ClusterClass's PacketMachineTemplate holds a placeholder that its patches
// replace (the machines cloned from a template are checked when they are created).
func validateSSHKeyFormats(keys []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, key := range keys {
		key = strings.TrimSpace(key)
		if key == "" || infrav1.IsUUID(key) {
			continue
		}
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key)); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), shorten(key),
				`must be a project SSH key UUID or an OpenSSH public key ("ssh-ed25519 AAAA... comment", one line): `+err.Error()))
		}
	}
	return errs
}

// validateSpotControlPlane refuses a spot control plane that was not explicitly allowed.
func validateSpotControlPlane(m *infrav1.PacketMachine) field.ErrorList {
	if !m.Spec.SpotInstance || !isControlPlane(m.Labels) || m.Annotations[infrav1.AllowSpotControlPlaneAnnotation] == "true" {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "spotInstance"), fmt.Sprintf(
		"control planes are not spot devices by default: one price rise can reclaim several at once and lose etcd quorum; use spot for workers, or annotate the machine (its template's metadata) %s: \"true\"",
		infrav1.AllowSpotControlPlaneAnnotation))}
}

// isControlPlane reports whether an object's labels mark it as part of a control plane.
func isControlPlane(labels map[string]string) bool {
	_, ok := labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// ValidatePacketMachineUpdate validates the change from oldSpec to newSpec at path. Problems the
// old spec already had are not reported again, so a machine created before these webhooks can
// still have its finalizer removed.
func ValidatePacketMachineUpdate(oldSpec, newSpec *infrav1.PacketMachineSpec, path *field.Path) (field.ErrorList, admission.Warnings) {
	errs, warnings := ValidatePacketMachineSpec(newSpec, path)
	oldErrs, _ := ValidatePacketMachineSpec(oldSpec, path)
	errs = ratchet(errs, oldErrs)
	errs = append(errs, machineSpecChanges(oldSpec, newSpec, path, false,
		"cannot change once the PacketMachine exists, its device is created from it: change the machine template instead and let Cluster API roll out new machines")...)
	return errs, warnings
}

// machineSpecChanges reports each field that differs between the two specs, after defaulting.
// Unless all is set, a facility-to-metro migration and filling an empty providerID are allowed.
func machineSpecChanges(oldSpec, newSpec *infrav1.PacketMachineSpec, path *field.Path, all bool, msg string) field.ErrorList {
	o, n := oldSpec.DeepCopy(), newSpec.DeepCopy()
	DefaultPacketMachineSpec(o)
	DefaultPacketMachineSpec(n)

	var errs field.ErrorList
	scalar := func(name, oldV, newV string) {
		if oldV != newV {
			errs = append(errs, field.Invalid(path.Child(name), newV, fmt.Sprintf("%s (was %q)", msg, oldV)))
		}
	}
	scalar("os", o.OS, n.OS)
	scalar("billingCycle", o.BillingCycle, n.BillingCycle)
	scalar("machineType", o.MachineType, n.MachineType)
	scalar("ipxeURL", o.IPXEUrl, n.IPXEUrl)
	scalar("hardwareReservationID", o.HardwareReservationID, n.HardwareReservationID)
	// Tags are sent with the create; the device's are never updated, so an edit would only make
	// the object disagree with the device.
	if !slices.Equal(o.Tags, n.Tags) {
		errs = append(errs, field.Forbidden(path.Child("tags"), msg))
	}
	if o.AlwaysPXE != n.AlwaysPXE {
		errs = append(errs, field.Invalid(path.Child("alwaysPXE"), n.AlwaysPXE, msg))
	}
	if !slices.Equal(o.SSHKeys, n.SSHKeys) {
		errs = append(errs, field.Forbidden(path.Child("sshKeys"), msg))
	}
	if o.SpotInstance != n.SpotInstance {
		errs = append(errs, field.Invalid(path.Child("spotInstance"), n.SpotInstance, msg))
	}
	if !quantityEqual(o.SpotPriceMax, n.SpotPriceMax) {
		errs = append(errs, field.Forbidden(path.Child("spotPriceMax"), msg))
	}
	if !jsonEqual(o.CustomData, n.CustomData) {
		errs = append(errs, field.Forbidden(path.Child("customData"), msg))
	}
	if !reflect.DeepEqual(o.Storage, n.Storage) {
		errs = append(errs, field.Forbidden(path.Child("storage"), msg))
	}
	if all {
		scalar("providerID", o.ProviderID, n.ProviderID)
		scalar("metro", o.Metro, n.Metro)
		scalar("facility", o.Facility, n.Facility)
	} else {
		errs = append(errs, validateLocationChange(o.Metro, o.Facility, n.Metro, n.Facility, path,
			"a machine's location cannot change, its device stays where it was created")...)
		if o.ProviderID != "" && n.ProviderID != o.ProviderID {
			errs = append(errs, field.Invalid(path.Child("providerID"), n.ProviderID, fmt.Sprintf(
				"cannot change once set (it is %q): it is the device this machine follows and deletes", o.ProviderID)))
		}
	}

	// Anything not compared above (a field added to the API later) cannot change either.
	if len(errs) == 0 && !reflect.DeepEqual(withoutComparedFields(o), withoutComparedFields(n)) {
		errs = append(errs, field.Forbidden(path, msg))
	}
	return errs
}

// withoutComparedFields zeroes the fields machineSpecChanges compares one by one.
func withoutComparedFields(s *infrav1.PacketMachineSpec) *infrav1.PacketMachineSpec {
	s = s.DeepCopy()
	s.OS, s.BillingCycle, s.MachineType, s.IPXEUrl, s.HardwareReservationID = "", "", "", "", ""
	s.AlwaysPXE, s.SSHKeys, s.CustomData, s.Storage = false, nil, nil, nil
	s.SpotInstance, s.SpotPriceMax = false, nil
	s.ProviderID, s.Tags, s.Metro, s.Facility = "", nil, "", ""
	return s
}

// isProviderID reports whether s is equinixmetal://<device UUID>, or packet://<device UUID> as the
// provider's first versions wrote it.
func isProviderID(s string) bool {
	_, err := infrav1.ParseProviderID(s)
	return err == nil
}

// shorten keeps an error about a long value readable.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// quantityEqual compares two optional quantities by value ("0.5" equals "500m").
func quantityEqual(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(*b) == 0
}

// jsonEqual compares two JSON documents by value, not by their bytes.
func jsonEqual(a, b *apiextensionsv1.JSON) bool {
	raw := func(j *apiextensionsv1.JSON) []byte {
		if j == nil {
			return nil
		}
		return j.Raw
	}
	ra, rb := raw(a), raw(b)
	if len(ra) == 0 || len(rb) == 0 {
		return len(ra) == len(rb)
	}
	var va, vb any
	if json.Unmarshal(ra, &va) != nil || json.Unmarshal(rb, &vb) != nil {
		return string(ra) == string(rb)
	}
	return reflect.DeepEqual(va, vb)
}
