package controllers

import "slices"

// adoptsLegacy reports whether clusters of namespace may take over the previous Packet
// provider's devices and elastic IPs. Its tags name a cluster but no namespace, so a cluster of
// that name in any namespace would match them: the operator names the namespaces its migrated
// clusters live in (--legacy-adoption-namespaces), or "*" where all namespaces are one tenant.
func adoptsLegacy(namespaces []string, namespace string) bool {
	return slices.Contains(namespaces, "*") || slices.Contains(namespaces, namespace)
}
