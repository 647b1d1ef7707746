package device

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxHostnameLength is Packet's limit for a hostname label (RFC 1123).
const maxHostnameLength = 63

// Hostname turns a PacketMachine name into a hostname Packet accepts: one RFC 1123 label of at
// most 63 lower-case letters, digits and dashes. Kubernetes names may contain dots and be
// up to 253 characters long; a name that has to be shortened keeps its start and gets a hash of
// the whole name, so two long names never collide.
func Hostname(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	host := strings.Trim(b.String(), "-")
	if len(host) > maxHostnameLength {
		sum := sha256.Sum256([]byte(name))
		suffix := "-" + hex.EncodeToString(sum[:4])
		host = strings.TrimRight(host[:maxHostnameLength-len(suffix)], "-") + suffix
	}
	if host == "" {
		host = "machine"
	}
	return host
}
