// Package userdata turns a Machine's bootstrap data into the user-data of a Packet device.
//
// The previous Packet provider ran every bootstrap payload through Go's text/template with a few
// keys. Templates written for it keep working here, but only payloads that contain a template
// action are templated: anything else — and Ignition, always — reaches Packet byte for byte, so
// bootstrap data that legitimately contains "{{" (Jinja, Ignition) is not broken.
package userdata

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

// Bootstrap data formats, as the bootstrap Secret's "format" key names them.
const (
	FormatCloudConfig = "cloud-config"
	FormatIgnition    = "ignition"
)

// Values are the template keys the previous provider offered. They are exposed under the same
// names: {{ .kubernetesVersion }}, {{ .controlPlaneEndpoint }}, {{ .apiKey }}.
type Values struct {
	KubernetesVersion    string
	ControlPlaneEndpoint string
	// APIKey is only set when the PacketCluster opts in (spec.exposeAPIKeyInUserData).
	APIKey string
}

// Render returns the user-data for bootstrap data in format. A template error is returned with
// the template's own message, which names the line and action but never echoes the data.
func Render(data []byte, format string, v Values) (string, error) {
	if format == FormatIgnition || !bytes.Contains(data, []byte("{{")) {
		return string(data), nil
	}
	tmpl, err := template.New("bootstrap data").Option("missingkey=zero").Parse(string(data))
	if err != nil {
		return "", fmt.Errorf("bootstrap data is not a valid template: %w", err)
	}
	// A map of strings keeps CAPP's behaviour of rendering unknown keys as empty strings.
	keys := map[string]string{
		"kubernetesVersion":    v.KubernetesVersion,
		"controlPlaneEndpoint": v.ControlPlaneEndpoint,
		"apiKey":               v.APIKey,
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, keys); err != nil {
		return "", fmt.Errorf("rendering bootstrap data template: %w", err)
	}
	return out.String(), nil
}
