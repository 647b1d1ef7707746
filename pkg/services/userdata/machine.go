package userdata

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/cluster-api/util/record"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// Error says why a Machine's user-data cannot be built; Reason is a DeviceReady reason
// (WaitingForBootstrapData, APIKeyNotExposable, BootstrapDataInvalid). Its message never quotes
// the bootstrap data beyond the expression at fault.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ForMachine renders the Machine's current bootstrap data into the user-data its device boots,
// as the device is created with (and reinstalled with, by remediation).
func ForMachine(ctx context.Context, sc *scope.MachineScope) (string, error) {
	data, format, err := sc.BootstrapData(ctx)
	if err != nil {
		return "", &Error{Reason: infrav1.WaitingForBootstrapDataReason, Err: err}
	}
	values := Values{
		KubernetesVersion:    sc.Machine.Spec.Version,
		ControlPlaneEndpoint: sc.PacketCluster.Spec.ControlPlaneEndpoint.Host,
	}
	// The previous provider gave control planes the API key; now only clusters that ask for it,
	// and only their own key: the manager's serves every namespace, and user-data is readable
	// from the device's metadata service.
	if sc.PacketCluster.Spec.ExposeAPIKeyInUserData && sc.IsControlPlane() {
		if sc.Credentials.Source == "" {
			return "", &Error{Reason: infrav1.APIKeyNotExposableReason, Err: errors.New(
				"spec.exposeAPIKeyInUserData of the PacketCluster: only the key of the cluster's own spec.credentialsRef Secret is put in user-data, never the manager's; set credentialsRef, or turn exposeAPIKeyInUserData off")}
		}
		if !sc.Credentials.Exposable() {
			return "", &Error{Reason: infrav1.APIKeyNotExposableReason, Err: fmt.Errorf(
				"spec.exposeAPIKeyInUserData of the PacketCluster: the credentials Secret %s does not allow its key in user-data; its owner annotates it %s: \"true\" to allow it, or turn exposeAPIKeyInUserData off",
				sc.Credentials.Source, infrav1.ExposeInUserDataAnnotation)}
		}
		values.APIKey = sc.Credentials.APIKey
	}
	if values.APIKey == "" && Names(data, format, "apiKey") {
		record.Warnf(sc.PacketMachine, infrav1.APIKeyNotInUserDataReason, "%s", apiKeyWithheld(sc))
	}
	userData, err := Render(data, format, values)
	if err != nil {
		return "", &Error{Reason: infrav1.BootstrapDataInvalidReason, Err: err}
	}
	return userData, nil
}

// apiKeyWithheld says why {{ .apiKey }} renders empty for this machine, and what gives a host
// (CPEM, in the previous provider's templates) a key instead.
func apiKeyWithheld(sc *scope.MachineScope) string {
	const crs = "or give CPEM its key by a ClusterResourceSet, as this provider's templates do"
	if !sc.IsControlPlane() {
		return "bootstrap data names {{ .apiKey }}, which renders empty: only control planes get a key in user-data; " + crs
	}
	return fmt.Sprintf("bootstrap data names {{ .apiKey }}, which renders empty: the manager's key is never put in user-data. "+
		"Set spec.credentialsRef (a Secret with this cluster's own key, annotated %s: \"true\") and spec.exposeAPIKeyInUserData on PacketCluster %s, %s",
		infrav1.ExposeInUserDataAnnotation, sc.PacketCluster.Name, crs)
}
