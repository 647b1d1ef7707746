// Package controllers holds the provider's reconcilers. They are thin: each runs Cluster API's
// canonical preamble in this order — get the object, find its owner, ensure the finalizer, set
// the Paused condition (and stop while paused), then build a scope that writes the object once
// on the way out (Cluster API's patch helper for a PacketCluster, the scope's own writer for a
// PacketMachine) — and hands the work to the services in pkg/services, one per Packet resource.
// docs/architecture.md follows each reconcile down to the Packet call.
package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Permissions every reconciler of the manager needs; each controller adds its own next to it.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// The kube-system namespace's UID identifies the management cluster (scope.ManagementClusterIdentity).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get,resourceNames=kube-system
// The secure metrics endpoint reviews each scraper's token and its access to /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// ClientOptions are the options of the manager's client. Secrets are read from the API server,
// never from a cache: a cache would hold every Secret of the management cluster (API keys,
// bootstrap data, thousands of them) in the manager's memory. The controllers watch Secrets'
// metadata only, to react when one they read changes.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}
