package main

import "testing"

func machine(instanceStatus, reason string, annotations map[string]any) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"annotations": annotations, "resourceVersion": "1"},
		"status": map[string]any{"instanceStatus": instanceStatus, "conditions": []any{
			map[string]any{"type": "Ready", "reason": "x", "status": "False"},
			map[string]any{"type": "DeviceReady", "reason": reason, "status": "False"},
		}},
	}
}

func TestWriteKindNamesMetadataFieldsOrTheStatusTransition(t *testing.T) {
	queued := machine("queued", "DeviceProvisioning", map[string]any{"a": "1"})
	for _, tc := range []struct {
		name          string
		before, after map[string]any
		want          string
	}{
		{"metadata", queued, machine("queued", "DeviceProvisioning", map[string]any{"a": "2"}),
			"metadata.annotations"},
		{"a first look that finds the device provisioning", queued, machine("provisioning", "DeviceProvisioning", map[string]any{"a": "1"}),
			`status: instanceStatus "queued" → "provisioning", DeviceReady unchanged (DeviceProvisioning)`},
		{"active", queued, machine("active", "DeviceActive", map[string]any{"a": "1"}),
			`status: instanceStatus "queued" → "active", DeviceReady "DeviceProvisioning" → "DeviceActive"`},
	} {
		if got := writeKind(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: writeKind = %s, want %s", tc.name, got, tc.want)
		}
	}
}
