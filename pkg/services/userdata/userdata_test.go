package userdata

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
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
	in := "#cloud-config\nversion: {{ .kubernetesVersion }}\nendpoint: {{ .controlPlaneEndpoint }}\nkey: {{ .apiKey }}\nunknown: []\njinja: {{ `{{ v1.instance_id }}` }}\n"
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
	for _, in := range []string{"{{ .kubernetesVersion", "{{ template \"x\" }}", "{{ .kubernetesVersion.Foo }}"} {
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

func TestJinjaPassesThroughAndMistakesAreNamed(t *testing.T) {
	v := Values{KubernetesVersion: "v1.36.3", ControlPlaneEndpoint: "198.51.100.7"}
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		{name: "kubeadm bootstrap output with cloud-init Jinja",
			in:   "## template: jinja\n#cloud-config\nwrite_files:\n- path: /run/kubeadm/kubeadm.yaml\n  content: |\n    nodeRegistration:\n      name: '{{ ds.meta_data.local_hostname }}'\n      kubeletExtraArgs:\n        provider-id: equinixmetal://{{ v1.instance_id }}\n",
			want: "## template: jinja\n#cloud-config\nwrite_files:\n- path: /run/kubeadm/kubeadm.yaml\n  content: |\n    nodeRegistration:\n      name: '{{ ds.meta_data.local_hostname }}'\n      kubeletExtraArgs:\n        provider-id: equinixmetal://{{ v1.instance_id }}\n"},
		{name: "Jinja blocks", in: "{% if v1.region %}{{ v1.region }}{% endif %}", want: "{% if v1.region %}{{ v1.region }}{% endif %}"},
		{name: "the previous provider's escaped Jinja and keys",
			in:   "## template: jinja\nversion={{ .kubernetesVersion }} id={{ `{{ v1.instance_id }}` }} eip={{ .controlPlaneEndpoint }}",
			want: "## template: jinja\nversion=v1.36.3 id={{ v1.instance_id }} eip=198.51.100.7"},
		{name: "a control word", in: "{{ if .apiKey }}key{{ else }}none{{ end }}", want: "none"},
		{name: "keys mixed with raw Jinja", in: "v={{ .kubernetesVersion }} id={{ ds.meta_data.instance_id }}",
			wantErr: "mixes template keys (.kubernetesVersion, .controlPlaneEndpoint, .apiKey) with cloud-init Jinja {{ ds.meta_data.instance_id }}"},
		{name: "an unknown key", in: "#cloud-config\nhost: {{ .controlPlaneHost }}\n",
			wantErr: "names the template key {{ .controlPlaneHost }}, which does not exist"},
		{name: "an unknown key in a block", in: "{{ range .nodes }}x{{ end }}", wantErr: "{{ .nodes }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render([]byte(tc.in), FormatCloudConfig, v)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Render = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Render = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestKubeadmBootstrapOutputPassesByteForByte renders what Cluster API's kubeadm bootstrap
// provider writes for a node whose kubeadm configuration uses cloud-init's instance data.
func TestKubeadmBootstrapOutputPassesByteForByte(t *testing.T) {
	out, err := cloudinit.NewNode(&cloudinit.NodeInput{JoinConfiguration: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  name: '{{ ds.meta_data.local_hostname }}'\n  kubeletExtraArgs:\n  - name: provider-id\n    value: equinixmetal://{{ v1.instance_id }}\n"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(out, FormatCloudConfig, Values{KubernetesVersion: "v1.36.3"})
	if err != nil || got != string(out) {
		t.Fatalf("Render changed the kubeadm bootstrap provider's output (%v):\n%s", err, got)
	}
}

func TestNamesSaysWhichKeysATemplateReads(t *testing.T) {
	for name, tc := range map[string]struct {
		data, format string
		want         bool
	}{
		"an action":               {"#cloud-config\nkey: {{ .apiKey }}\n", FormatCloudConfig, true},
		"inside a conditional":    {"{{ if .apiKey }}x{{ end }}", FormatCloudConfig, true},
		"another key":             {"#cloud-config\nv: {{ .kubernetesVersion }}\n", FormatCloudConfig, false},
		"only in escaped Jinja":   {"x: {{ `{{ .apiKey }}` }}", FormatCloudConfig, false},
		"ignition is never read":  {`{"source":"data:,{{ .apiKey }}"}`, FormatIgnition, false},
		"no template at all":      {"#cloud-config\n", FormatCloudConfig, false},
		"not a template (broken)": {"{{ .apiKey ", FormatCloudConfig, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Names([]byte(tc.data), tc.format, "apiKey"); got != tc.want {
				t.Errorf("Names(%q) = %v, want %v", tc.data, got, tc.want)
			}
		})
	}
}
