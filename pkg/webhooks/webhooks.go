// Package webhooks holds the defaulting and validating admission webhooks of the four Packet kinds,
// served by the manager (see SetupWithManager) and registered with the kube-apiserver by
// config/webhook (generated from the kubebuilder:webhook markers in this package).
//
// Rejections are apierrors.NewInvalid errors built from a field.ErrorList, so users see the field
// path and a message that says what to do instead. Validation is pure: nothing here calls the
// Packet API or reads other objects, so the webhooks answer quickly and never fail on an outage.
package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/topology"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// SetupWithManager registers the defaulting and validating webhooks of all four kinds with the
// manager's webhook server.
func SetupWithManager(mgr ctrl.Manager) error {
	for name, setup := range map[string]func(ctrl.Manager) error{
		"PacketCluster":         (&PacketCluster{}).SetupWebhookWithManager,
		"PacketClusterTemplate": (&PacketClusterTemplate{}).SetupWebhookWithManager,
		"PacketMachine":         (&PacketMachine{}).SetupWebhookWithManager,
		"PacketMachineTemplate": (&PacketMachineTemplate{}).SetupWebhookWithManager,
	} {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s webhooks: %w", name, err)
		}
	}
	return nil
}

func groupKind(kind string) schema.GroupKind {
	return infrav1.GroupVersion.WithKind(kind).GroupKind()
}

// invalid turns a non-empty error list into the Invalid status error the API server returns to
// the user (HTTP 422 with one cause per field).
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(groupKind(kind), name, errs)
}

// isTopologyDryRun reports whether the request is the Cluster API topology controller's
// server-side-apply dry run (dry-run request and the topology.cluster.x-k8s.io/dry-run
// annotation), which template immutability checks must let through.
func isTopologyDryRun(ctx context.Context, obj metav1.Object) (bool, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return false, apierrors.NewBadRequest(fmt.Sprintf("expected an admission.Request inside the context: %v", err))
	}
	return topology.IsDryRunRequest(req, obj), nil
}

// validateLocation enforces "metro or facility, not both" for a spec at path. required says
// whether having neither is an error (a PacketCluster needs a location; a machine inherits it);
// formats whether the codes must look like Packet's (a ClusterClass's template holds
// placeholders that its patches replace).
func validateLocation(metro, facility string, path *field.Path, required, formats bool) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	switch {
	case metro == "" && facility == "" && required:
		errs = append(errs, field.Required(path.Child("metro"),
			`set the Packet metro the cluster runs in (for example "da" or "sv"); facility is deprecated`))
	case metro != "" && facility != "":
		errs = append(errs, field.Invalid(path.Child("facility"), facility,
			fmt.Sprintf("metro and facility are mutually exclusive: remove facility (deprecated) and keep metro %q", metro)))
	case facility != "":
		warnings = append(warnings, fmt.Sprintf("%s is deprecated: Packet is retiring facilities, use %s (the facility's metro) instead",
			path.Child("facility"), path.Child("metro")))
	}
	if !formats {
		return errs, warnings
	}
	if metro != "" && !metroCode.MatchString(metro) {
		errs = append(errs, field.Invalid(path.Child("metro"), metro,
			`must be a Packet metro code, two letters (for example "da", "sv" or "ny")`))
	}
	if facility != "" && !facilityCode.MatchString(facility) {
		errs = append(errs, field.Invalid(path.Child("facility"), facility,
			`must be a Packet facility code, letters then digits (for example "da11" or "sv15"); facilities are deprecated, prefer metro`))
	}
	return errs, warnings
}

// Packet's location codes, matched case-insensitively as Packet matches them.
var (
	metroCode    = regexp.MustCompile(`^[a-zA-Z]{2}$`)
	facilityCode = regexp.MustCompile(`^[a-zA-Z]{2,3}[0-9]{1,3}$`)
)

// validateLocationChange allows a location to stay as it is or to move from a facility to a
// metro (facility removed, metro set, to the metro already given if there was one): Packet
// retires facilities, and what was created stays in its data center either way. Anything else
// would leave existing devices and addresses where they are while the object claims otherwise.
func validateLocationChange(oldMetro, oldFacility, newMetro, newFacility string, path *field.Path, what string) field.ErrorList {
	if oldMetro == newMetro && oldFacility == newFacility {
		return nil
	}
	if oldFacility != "" && newFacility == "" && newMetro != "" && (oldMetro == "" || oldMetro == newMetro) {
		return nil
	}
	msg := what + "; the only allowed change is migrating from facility to metro: remove facility and set metro to the facility's metro"
	var errs field.ErrorList
	if oldMetro != newMetro {
		errs = append(errs, field.Invalid(path.Child("metro"), newMetro, fmt.Sprintf("%s (was %q)", msg, oldMetro)))
	}
	if oldFacility != newFacility {
		errs = append(errs, field.Invalid(path.Child("facility"), newFacility, fmt.Sprintf("%s (was %q)", msg, oldFacility)))
	}
	return errs
}

// validateEndpoint rejects a malformed control-plane endpoint: a host that is neither an IP
// address nor a DNS name, a port outside 1-65535, or a port without a host. An empty endpoint is
// fine: the controller fills it with the reserved elastic IP.
func validateEndpoint(ep clusterv1.APIEndpoint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case ep.Host == "" && ep.Port != 0:
		errs = append(errs, field.Required(path.Child("host"),
			"a port needs a host: set host to the address of your own load balancer, or remove the port and let the controller reserve an elastic IP"))
	case ep.Host != "" && net.ParseIP(ep.Host) == nil:
		if msgs := validation.IsDNS1123Subdomain(strings.ToLower(ep.Host)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("host"), ep.Host,
				"must be an IP address or a DNS name without scheme or port (for example 203.0.113.10 or api.example.com): "+strings.Join(msgs, "; ")))
		}
	}
	if ep.Port < 0 || ep.Port > 65535 {
		errs = append(errs, field.Invalid(path.Child("port"), ep.Port, "must be between 1 and 65535 (6443 is the Kubernetes API default)"))
	}
	return errs
}

// validateTags rejects empty, duplicate and too long device tags.
func validateTags(tags []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(tags))
	for i, tag := range tags {
		p := path.Index(i)
		switch {
		case strings.TrimSpace(tag) == "":
			errs = append(errs, field.Invalid(p, tag, "tags must not be empty"))
		case len(tag) > infrav1.MaxTagLength:
			errs = append(errs, field.TooLong(p, "", infrav1.MaxTagLength))
		case seen[tag]:
			errs = append(errs, field.Duplicate(p, tag))
		case infrav1.IsReservedTag(tag):
			errs = append(errs, field.Invalid(p, tag, fmt.Sprintf("the prefixes %s are the provider's own: it finds a machine's device by them, so a tag using them could make this device pass for another machine's",
				strings.Join(infrav1.ReservedTagPrefixes, " and "))))
		case strings.Contains(tag, ","):
			errs = append(errs, field.Invalid(p, tag, "must not contain a comma: Packet splits tag filters on commas, so the device could not be found by it"))
		}
		seen[tag] = true
	}
	return errs
}

// validateHTTPURL rejects anything but an absolute http(s) URL with a host.
func validateHTTPURL(s string, path *field.Path) field.ErrorList {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return field.ErrorList{field.Invalid(path, s, "must be an absolute http:// or https:// URL of the iPXE script (for example https://boot.example.com/ipxe)")}
	}
	return nil
}
