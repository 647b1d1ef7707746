package scope

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Keys of a credentials Secret named by PacketCluster.spec.credentialsRef.
const (
	APIKeySecretKey      = "apiKey"
	BGPPasswordSecretKey = "bgpPassword"
)

// Credentials are the Packet credentials a cluster uses.
type Credentials struct {
	// Source names where the key came from ("<namespace>/<secret>" or "" for the manager's).
	Source string
	APIKey string
	// BGPPassword is the MD5 password for the project's BGP, empty when not set.
	BGPPassword string

	// secret is the metadata of the credentials Secret as read, for HoldCredentials.
	secret *metav1.PartialObjectMetadata
}

// Exposable reports whether the credentials come from a Secret whose owner allows its key in
// user-data (infrav1.ExposeInUserDataAnnotation).
func (c Credentials) Exposable() bool {
	return c.secret != nil && c.secret.Annotations[infrav1.ExposeInUserDataAnnotation] == "true"
}

// ClientProvider gives the Packet client for a set of credentials; *packet.Factory is one.
type ClientProvider interface {
	ClientFor(source, apiKey string) (packet.Client, error)
}

// ErrCredentials wraps errors reading a cluster's credentials Secret.
type ErrCredentials struct{ Err error }

func (e *ErrCredentials) Error() string { return e.Err.Error() }
func (e *ErrCredentials) Unwrap() error { return e.Err }

// DefaultCredentials are the manager's own: its API key, for PacketClusters without a
// credentialsRef, and the projects it may serve with it.
type DefaultCredentials struct {
	APIKey string
	// Projects are the project IDs the key may serve. Empty means any project, the previous
	// provider's behaviour: then every namespace that may create a PacketCluster can have the
	// manager act in any project the key reaches.
	Projects []string
}

// serves reports whether the default key may act in projectID.
func (d DefaultCredentials) serves(projectID string) bool {
	if len(d.Projects) == 0 {
		return true
	}
	for _, p := range d.Projects {
		if strings.EqualFold(p, projectID) {
			return true
		}
	}
	return false
}

// ResolveCredentials returns the credentials of the PacketCluster: the Secret named by
// spec.credentialsRef in its namespace, else the manager's default key, if it serves the
// cluster's project.
func ResolveCredentials(ctx context.Context, c client.Reader, pc *infrav1.PacketCluster, def DefaultCredentials) (Credentials, error) {
	ref := pc.Spec.CredentialsRef
	if ref == nil {
		switch {
		case def.APIKey == "":
			return Credentials{}, &ErrCredentials{fmt.Errorf("no Packet API key: the manager has none (PACKET_API_KEY) and spec.credentialsRef is not set")}
		case !def.serves(pc.Spec.ProjectID):
			return Credentials{}, &ErrCredentials{fmt.Errorf(
				"the manager's own API key does not serve project %s (--default-key-projects); set spec.credentialsRef to a Secret with a key for it", pc.Spec.ProjectID)}
		}
		return Credentials{APIKey: def.APIKey}, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: pc.Namespace, Name: ref.Name}
	if err := c.Get(ctx, key, secret); err != nil {
		return Credentials{}, &ErrCredentials{fmt.Errorf("reading credentials Secret %s: %w", key, err)}
	}
	apiKey := string(secret.Data[APIKeySecretKey])
	if apiKey == "" {
		return Credentials{}, &ErrCredentials{fmt.Errorf("credentials Secret %s has no %q key", key, APIKeySecretKey)}
	}
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: *secret.ObjectMeta.DeepCopy()}
	return Credentials{Source: key.String(), APIKey: apiKey, BGPPassword: string(secret.Data[BGPPasswordSecretKey]), secret: meta}, nil
}

// Connect resolves the PacketCluster's credentials and returns the Packet client for them. Its
// errors are *ErrCredentials, which apistatus.Record reports as CredentialsInvalid.
func Connect(ctx context.Context, c client.Reader, clients ClientProvider, pc *infrav1.PacketCluster, def DefaultCredentials) (Credentials, packet.Client, error) {
	return (*CredentialsCache)(nil).Connect(ctx, c, clients, pc, def)
}
