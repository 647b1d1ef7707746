package scope

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// CredentialsCache keeps the credentials read from each cluster's Secret for as long as the
// Secret is unchanged. Secrets are read from the API server, never cached whole (see
// controllers.ClientOptions), so resolving a credentialsRef would cost a request per reconcile,
// through the manager's Kubernetes rate limit, which a fleet of machines shares with its writes. The manager's metadata-only watch of Secrets tells a Secret's UID and
// resourceVersion without a request; equal ones mean the same contents.
//
// Only the machine controller uses it. The cluster controller holds the Secret with a finalizer
// (HoldCredentials) from the metadata it read, which must be the API server's current one.
type CredentialsCache struct {
	// Metadata reads Secrets' metadata from the manager's cache (its metadata-only informer).
	Metadata client.Reader

	mu      sync.Mutex
	secrets map[types.NamespacedName]Credentials
}

// Connect is scope.Connect, answered from the cache while the cluster's Secret is unchanged.
// A nil cache, or one without Metadata, reads the Secret every time.
func (cc *CredentialsCache) Connect(ctx context.Context, c client.Reader, clients ClientProvider, pc *infrav1.PacketCluster, def DefaultCredentials) (Credentials, packet.Client, error) {
	creds, err := cc.resolve(ctx, c, pc, def)
	if err != nil {
		return creds, nil, err
	}
	pk, err := clients.ClientFor(creds.Source, creds.APIKey)
	if err != nil {
		return creds, nil, &ErrCredentials{Err: err}
	}
	return creds, pk, nil
}

func (cc *CredentialsCache) resolve(ctx context.Context, c client.Reader, pc *infrav1.PacketCluster, def DefaultCredentials) (Credentials, error) {
	ref := pc.Spec.CredentialsRef
	if cc == nil || cc.Metadata == nil || ref == nil {
		return ResolveCredentials(ctx, c, pc, def)
	}
	key := types.NamespacedName{Namespace: pc.Namespace, Name: ref.Name}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := cc.Metadata.Get(ctx, key, meta); err == nil {
		cc.mu.Lock()
		cached, ok := cc.secrets[key]
		cc.mu.Unlock()
		if ok && cached.secret.UID == meta.UID && cached.secret.ResourceVersion == meta.ResourceVersion {
			return cached, nil
		}
	}
	creds, err := ResolveCredentials(ctx, c, pc, def)
	if err != nil {
		cc.forget(key)
		return creds, err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.secrets == nil {
		cc.secrets = map[types.NamespacedName]Credentials{}
	}
	cc.secrets[key] = creds
	return creds, nil
}

// Observe is told of every event of a Secret (the Secret watch calls it) and forgets the
// credentials read from one that is gone: a deleted cluster's Secret is never read again, so
// its entry would otherwise stay for the life of the process.
func (cc *CredentialsCache) Observe(ctx context.Context, secret client.Object) {
	if cc == nil || cc.Metadata == nil {
		return
	}
	key := client.ObjectKeyFromObject(secret)
	cc.mu.Lock()
	_, known := cc.secrets[key]
	cc.mu.Unlock()
	if !known {
		return
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := cc.Metadata.Get(ctx, key, meta); apierrors.IsNotFound(err) {
		cc.forget(key)
	}
}

func (cc *CredentialsCache) forget(key types.NamespacedName) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.secrets, key)
}
