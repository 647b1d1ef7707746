package userdata

import (
	"strings"
	"testing"
)

func TestDataWithoutActionsPassesThroughByteForByte(t *testing.T) {
	in := "#cloud-config\nwrite_files:\n- content: \"{ a } } {\"\n  path: /x\n\x00\xff trailing  \n"
	got, err := Render([]byte(in), FormatCloudConfig, Values{KubernetesVersion: "v1.33.0"})
	if err != nil || got != in {
		t.Fatalf("Render = %q, %v; want the input unchanged", got, err)
	}
}

func TestIgnitionIsNeverTemplated(t *testing.T) {
	in := `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"contents":{"source":"data:,{{ .apiKey }}"}}]}}`
	got, err := Render([]byte(in), FormatIgnition, Values{APIKey: "secret"})
	if err != nil || got != in {
		t.Fatalf("Render = %q, %v; want the ignition unchanged", got, err)
	}
}

func TestTemplateKeysRender(t *testing.T) {
	in := "#cloud-config\nversion: {{ .kubernetesVersion }}\nendpoint: {{ .controlPlaneEndpoint }}\nkey: {{ .apiKey }}\nunknown: [{{ .nope }}]\njinja: {{ `{{ v1.instance_id }}` }}\n"
	got, err := Render([]byte(in), FormatCloudConfig, Values{KubernetesVersion: "v1.33.0", ControlPlaneEndpoint: "198.51.100.7"})
	if err != nil {
		t.Fatal(err)
	}
	want := "#cloud-config\nversion: v1.33.0\nendpoint: 198.51.100.7\nkey: \nunknown: []\njinja: {{ v1.instance_id }}\n"
	if got != want {
		t.Fatalf("Render = %q, want %q", got, want)
	}
}

func TestTemplateErrorsAreReturnedNotPanics(t *testing.T) {
	for _, in := range []string{"{{ v1.instance_id }}", "{{ .kubernetesVersion", "{{ template \"x\" }}", "{{ .kubernetesVersion.Foo }}"} {
		_, err := Render([]byte("#cloud-config\n"+in), FormatCloudConfig, Values{KubernetesVersion: "v1"})
		if err == nil {
			t.Errorf("Render(%q) succeeded, want an error", in)
			continue
		}
		if !strings.Contains(err.Error(), "bootstrap data") {
			t.Errorf("error %q does not say it is about the bootstrap data", err)
		}
	}
}
