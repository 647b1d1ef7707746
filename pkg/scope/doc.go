// Package scope holds what one reconcile of a Packet object works with: the Kubernetes objects,
// a patch helper, and the Packet client for the cluster's credentials. Services read and set
// state through a scope; Close summarises the conditions into Ready and patches once.
// Scopes hold no Packet logic.
package scope
