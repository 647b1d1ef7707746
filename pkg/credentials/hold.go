package credentials

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// Holding the credentials Secret. A PacketCluster's machines delete their devices, and the
// cluster releases its elastic IP, with the key in its credentialsRef Secret. When a namespace is
// deleted, Kubernetes deletes that Secret at once, with everything else, while the devices are
// still there: without the key nothing could delete them, and the namespace would stay
// Terminating with billed servers behind it. So each PacketCluster puts a finalizer of its own
// on its Secret, and takes it off only when it has released everything. One finalizer per
// PacketCluster, named after it, so that clusters sharing a Secret never wait on each other
// and no count has to be kept.

// finalizerPrefix starts the finalizer a PacketCluster holds its Secret with.
const finalizerPrefix = "credentials.packetcluster.infrastructure.cluster.x-k8s.io/"

// Finalizer is the finalizer the PacketCluster named name puts on its credentials
// Secret. A finalizer's name part has at most 63 characters, so longer names are shortened
// with a hash.
func Finalizer(name string) string {
	if len(name) <= 63 {
		return finalizerPrefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return finalizerPrefix + name[:46] + "-" + hex.EncodeToString(sum[:8])
}

// Hold puts the PacketCluster's finalizer on its credentials Secret, if it has a
// credentialsRef and the Secret lacks it. creds come from Source.Resolve, which read the
// Secret just now. It does not label the Secret for `clusterctl move`: a moved Secret is deleted
// from the source, and other workloads may share it; its owner adds clusterctl's move label
// (docs/clusterctl.md).
//
// The Secret held is recorded in the PacketCluster's HeldAnnotation: credentialsRef may
// change until the cluster has its endpoint, and the Secret held before is let go then, or its
// namespace would never finish deleting.
func Hold(ctx context.Context, c client.Client, pc *infrav1.PacketCluster, creds Keys) error {
	if pc.Spec.CredentialsRef == nil || creds.secret == nil {
		return nil
	}
	if before := pc.Annotations[HeldAnnotation]; before != "" && before != pc.Spec.CredentialsRef.Name {
		if err := release(ctx, c, c, pc, before); err != nil {
			return fmt.Errorf("letting go of credentials Secret %s, no longer the cluster's: %w", before, err)
		}
	}
	if pc.Annotations == nil {
		pc.Annotations = map[string]string{}
	}
	pc.Annotations[HeldAnnotation] = pc.Spec.CredentialsRef.Name
	secret := creds.secret
	if slices.Contains(secret.Finalizers, Finalizer(pc.Name)) {
		return nil
	}
	base := secret.DeepCopy()
	secret.Finalizers = append(slices.Clone(secret.Finalizers), Finalizer(pc.Name))
	return patchSecretMetadata(ctx, c, base, secret)
}

// Held reports whether the PacketCluster's credentials Secret carries its hold. The
// hold is put on before anything is made at Packet with the Secret's key, so a cluster whose
// Secret is missing or not held never made anything with it (a typo in credentialsRef). A
// cluster on the manager's key, or one that held another Secret before, is taken as held: that
// key may have made something.
func Held(ctx context.Context, reader client.Reader, pc *infrav1.PacketCluster) (bool, error) {
	if pc.Spec.CredentialsRef == nil {
		return true, nil
	}
	if before := pc.Annotations[HeldAnnotation]; before != "" && before != pc.Spec.CredentialsRef.Name {
		return true, nil // another Secret's key was used
	}
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := reader.Get(ctx, client.ObjectKey{Namespace: pc.Namespace, Name: pc.Spec.CredentialsRef.Name}, secret)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.Contains(secret.Finalizers, Finalizer(pc.Name)), nil
}

// Release takes the PacketCluster's finalizer off its credentials Secret, once the
// cluster has released everything it made.
// The Secret held before a change of credentialsRef, if any, is let go too.
func Release(ctx context.Context, c client.Client, reader client.Reader, pc *infrav1.PacketCluster) error {
	if before := pc.Annotations[HeldAnnotation]; before != "" && (pc.Spec.CredentialsRef == nil || before != pc.Spec.CredentialsRef.Name) {
		if err := release(ctx, c, reader, pc, before); err != nil {
			return err
		}
	}
	if pc.Spec.CredentialsRef == nil {
		return nil
	}
	return release(ctx, c, reader, pc, pc.Spec.CredentialsRef.Name)
}

// HeldAnnotation names, on a PacketCluster, the Secret it holds (Hold).
const HeldAnnotation = "packetcluster.infrastructure.cluster.x-k8s.io/credentials-held"

// release takes the PacketCluster's finalizer off the named Secret of its namespace.
func release(ctx context.Context, c client.Client, reader client.Reader, pc *infrav1.PacketCluster, name string) error {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := reader.Get(ctx, client.ObjectKey{Namespace: pc.Namespace, Name: name}, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	held := Finalizer(pc.Name)
	if !slices.Contains(secret.Finalizers, held) {
		return nil
	}
	base := secret.DeepCopy()
	secret.Finalizers = slices.DeleteFunc(slices.Clone(secret.Finalizers), func(f string) bool { return f == held })
	return patchSecretMetadata(ctx, c, base, secret)
}

// patchSecretMetadata writes the changes from base to secret, failing with a conflict if the
// Secret changed since it was read, so that another writer's finalizer is never dropped.
func patchSecretMetadata(ctx context.Context, c client.Client, base, secret *metav1.PartialObjectMetadata) error {
	err := c.Patch(ctx, secret, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
