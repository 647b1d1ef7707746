package scope

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ManagementClusterIdentity is this management cluster's identity: the UID of its kube-system
// namespace, which every Kubernetes cluster has from its first start and never recreates, and
// which `clusterctl move` does not carry to another cluster. The devices and IP reservations the
// controllers manage carry it (infrav1.ManagementClusterTag).
func ManagementClusterIdentity(ctx context.Context, reader client.Reader) (string, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := reader.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the kube-system namespace, whose UID identifies this management cluster: %w", err)
	}
	return string(ns.UID), nil
}
