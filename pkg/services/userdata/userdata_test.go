package userdata

import (
	"bytes"
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

// FuzzRender checks that no bootstrap data makes Render panic, and that data without a template
// action, and any Ignition, come back byte for byte.
func FuzzRender(f *testing.F) {
	f.Add([]byte("#cloud-config\nruncmd: [echo hi]\n"), "cloud-config")
	f.Add([]byte("#cloud-config\nversion: {{ .kubernetesVersion }}\nendpoint: {{ .controlPlaneEndpoint }}\n"), "cloud-config")
	f.Add([]byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"contents":{"source":"data:,{{x}}"}}]}}`), "ignition")
	f.Add([]byte("## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.hostname }}\n"), "cloud-config")
	f.Add([]byte("{{ if .apiKey }}{{ .apiKey }}{{ else }}none{{ end }}{{ range $i := .nope }}{{ end }}"), "")
	f.Add([]byte("{{"), "cloud-config")
	f.Fuzz(func(t *testing.T, data []byte, format string) {
		out, err := Render(data, format, Values{KubernetesVersion: "v1.36.3", ControlPlaneEndpoint: "198.51.100.7:6443"})
		if (format == FormatIgnition || !bytes.Contains(data, []byte("{{"))) && (err != nil || out != string(data)) {
			t.Fatalf("data without template actions changed: %q -> %q, %v", data, out, err)
		}
	})
}
