// Package controllers holds the provider's reconcilers. They are thin: each runs Cluster API's
// canonical preamble (owner, finalizer, patch helper, paused) and hands the work to a scope and
// the services in pkg/services.
package controllers

// Permissions every reconciler of the manager needs; each controller adds its own next to it.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
