package credentials

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Source is where a reconciler gets a PacketCluster's credentials and its Packet client from.
//
// With Metadata set it keeps the credentials read from each cluster's Secret for as long as the
// Secret is unchanged. Secrets are read from the API server, never cached whole (see
// controllers.ClientOptions), so resolving a credentialsRef would cost a request per reconcile,
// through the manager's Kubernetes rate limit, which a fleet of machines shares with its writes.
// The manager's metadata-only watch of Secrets tells a Secret's UID and resourceVersion without a
// request; equal ones mean the same contents. The machine controller sets it; the cluster
// controller does not, because it holds the Secret with a finalizer (Hold) from the metadata it
// read, which must be the API server's current one.
type Source struct {
	// Reader reads whole Secrets, from the API server.
	Reader client.Reader
	// Clients gives the Packet client for a key; nil for a Source that only resolves.
	Clients ClientProvider
	// Default is the manager's own key and the projects it serves.
	Default Default
	// Metadata reads Secrets' metadata from the manager's cache (its metadata-only informer).
	Metadata client.Reader

	mu      sync.Mutex
	secrets map[types.NamespacedName]Keys
}

// Connect resolves the PacketCluster's credentials and returns the Packet client for them. Its
// errors are *Error.
func (s *Source) Connect(ctx context.Context, pc *infrav1.PacketCluster) (Keys, packet.Client, error) {
	keys, err := s.Resolve(ctx, pc)
	if err != nil {
		return keys, nil, err
	}
	pk, err := s.Clients.ClientFor(keys.Source, keys.APIKey)
	if err != nil {
		return keys, nil, &Error{Err: err}
	}
	return keys, pk, nil
}

// Resolve returns the credentials of the PacketCluster: the Secret named by spec.credentialsRef
// in its namespace, else the manager's default key, if it serves the cluster's project.
func (s *Source) Resolve(ctx context.Context, pc *infrav1.PacketCluster) (Keys, error) {
	ref := pc.Spec.CredentialsRef
	if s.Metadata == nil || ref == nil {
		return s.read(ctx, pc)
	}
	key := types.NamespacedName{Namespace: pc.Namespace, Name: ref.Name}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := s.Metadata.Get(ctx, key, meta); err == nil {
		s.mu.Lock()
		cached, ok := s.secrets[key]
		s.mu.Unlock()
		if ok && cached.secret.UID == meta.UID && cached.secret.ResourceVersion == meta.ResourceVersion {
			return cached, nil
		}
	}
	keys, err := s.read(ctx, pc)
	if err != nil {
		s.forget(key)
		return keys, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = map[types.NamespacedName]Keys{}
	}
	s.secrets[key] = keys
	return keys, nil
}

// read resolves the credentials from the API server.
func (s *Source) read(ctx context.Context, pc *infrav1.PacketCluster) (Keys, error) {
	ref := pc.Spec.CredentialsRef
	if ref == nil {
		switch {
		case s.Default.APIKey == "":
			return Keys{}, &Error{fmt.Errorf("no Packet API key: the manager has none (PACKET_API_KEY) and spec.credentialsRef is not set")}
		case !s.Default.serves(pc.Spec.ProjectID):
			return Keys{}, &Error{fmt.Errorf(
				"the manager's own API key does not serve project %s (--default-key-projects); set spec.credentialsRef to a Secret with a key for it", pc.Spec.ProjectID)}
		}
		return Keys{APIKey: s.Default.APIKey}, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: pc.Namespace, Name: ref.Name}
	if err := s.Reader.Get(ctx, key, secret); err != nil {
		return Keys{}, &Error{fmt.Errorf("reading credentials Secret %s: %w", key, err)}
	}
	apiKey := string(secret.Data[APIKeySecretKey])
	if apiKey == "" {
		return Keys{}, &Error{fmt.Errorf("credentials Secret %s has no %q key", key, APIKeySecretKey)}
	}
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: *secret.ObjectMeta.DeepCopy()}
	return Keys{Source: key.String(), APIKey: apiKey, BGPPassword: string(secret.Data[BGPPasswordSecretKey]), secret: meta}, nil
}

// Observe is told of every event of a Secret (the Secret watch calls it) and forgets the
// credentials read from one that is gone: a deleted cluster's Secret is never read again, so
// its entry would otherwise stay for the life of the process.
func (s *Source) Observe(ctx context.Context, secret client.Object) {
	if s.Metadata == nil {
		return
	}
	key := client.ObjectKeyFromObject(secret)
	s.mu.Lock()
	_, known := s.secrets[key]
	s.mu.Unlock()
	if !known {
		return
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := s.Metadata.Get(ctx, key, meta); apierrors.IsNotFound(err) {
		s.forget(key)
	}
}

func (s *Source) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secrets, key)
}
