// Package credentials reads a PacketCluster's Packet credentials — the Secret its
// spec.credentialsRef names, else the manager's own key where it serves the cluster's project —
// gives the Packet client for them, and holds the Secret with a finalizer while the cluster
// needs its key to release what it made at Packet. Every reconciler connects through a Source.
package credentials

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Keys of a credentials Secret named by PacketCluster.spec.credentialsRef.
const (
	APIKeySecretKey      = "apiKey"
	BGPPasswordSecretKey = "bgpPassword"
)

// Keys are the Packet credentials a cluster uses.
type Keys struct {
	// Source names where the key came from ("<namespace>/<secret>" or "" for the manager's).
	Source string
	APIKey string
	// BGPPassword is the MD5 password for the project's BGP, empty when not set.
	BGPPassword string

	// secret is the metadata of the credentials Secret as read, for Hold.
	secret *metav1.PartialObjectMetadata
}

// Exposable reports whether the credentials come from a Secret whose owner allows its key in
// user-data (infrav1.ExposeInUserDataAnnotation).
func (c Keys) Exposable() bool {
	return c.secret != nil && c.secret.Annotations[infrav1.ExposeInUserDataAnnotation] == "true"
}

// ClientProvider gives the Packet client for a set of credentials; *packet.Factory is one.
type ClientProvider interface {
	ClientFor(source, apiKey string) (packet.Client, error)
}

// Error wraps errors reading a cluster's credentials Secret; apistatus.Record reports it as
// CredentialsInvalid.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Default are the manager's own: its API key, for PacketClusters without a
// credentialsRef, and the projects it may serve with it.
type Default struct {
	APIKey string
	// Projects are the project IDs the key may serve. Empty means any project, the previous
	// provider's behaviour: then every namespace that may create a PacketCluster can have the
	// manager act in any project the key reaches.
	Projects []string
}

// serves reports whether the default key may act in projectID.
func (d Default) serves(projectID string) bool {
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
