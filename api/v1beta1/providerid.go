package v1beta1

import (
	"fmt"
	"strings"
)

// ProviderID returns the provider ID of a device: equinixmetal://<device UUID>.
func ProviderID(deviceID string) string { return ProviderIDPrefix + deviceID }

// ParseProviderID returns the device UUID in a provider ID. It accepts the current
// equinixmetal:// form and the packet:// form of the provider's first versions.
func ParseProviderID(providerID string) (string, error) {
	id, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		id, ok = strings.CutPrefix(providerID, "packet://")
	}
	if !ok {
		return "", fmt.Errorf("provider ID %q does not start with %s", providerID, ProviderIDPrefix)
	}
	if !IsUUID(id) {
		return "", fmt.Errorf("provider ID %q does not end in a device UUID", providerID)
	}
	return strings.ToLower(id), nil
}
