//go:build tools

// Package tools pins the previous Packet provider's last release, v0.9.0, whose manager the
// migration e2e spec runs unmodified on the sandbox to hand its clusters over to this provider.
package tools

import _ "sigs.k8s.io/cluster-api-provider-packet"
