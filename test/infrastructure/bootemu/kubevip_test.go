package bootemu

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestKubeVIPIsReadFromWhatLandsOnTheHost(t *testing.T) {
	pod := func(image string, env ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: vip}\nspec:\n  containers:\n  - name: vip\n    image: " + image + "\n    env:\n")
		for i := 0; i+1 < len(env); i += 2 {
			b.WriteString("    - {name: " + env[i] + ", value: \"" + env[i+1] + "\"}\n")
		}
		return b.String()
	}
	bgp := pod("ghcr.io/kube-vip/kube-vip:v0.8.1", "vip_arp", "false", "bgp_enable", "true")
	arp := pod("registry.example/mirror/kube-vip@sha256:abc", "vip_arp", "true")
	for name, tc := range map[string]struct {
		files    map[string]string
		commands []string
		want     vipMode
	}{
		"a BGP static pod under any name": {files: map[string]string{"/etc/kubernetes/manifests/vip.yaml": bgp}, want: vipBGP},
		"an ARP static pod from a mirror": {files: map[string]string{"/etc/kubernetes/manifests/a.yaml": arp}, want: vipARP},
		"the manifest outside the kubelet's folder": {
			files: map[string]string{"/etc/kube-vip/kube-vip.yaml": bgp}, want: vipNone},
		"a static pod of another image": {files: map[string]string{
			"/etc/kubernetes/manifests/kube-vip.yaml": pod("ghcr.io/example/not-kube-vip:v1", "bgp_enable", "true")}, want: vipNone},
		"the image's manifest command with --bgp": {commands: []string{
			"ctr run --rm --net-host ghcr.io/kube-vip/kube-vip:v0.8.1 vip /kube-vip manifest pod \\\n  --vip 1.2.3.4 \\\n  --bgp \\\n  --bgpRouterID $(jq -r .ip m.json 2>/dev/null) > /etc/kubernetes/manifests/cp.yaml"},
			want: vipBGP},
		"the image's manifest command with --arp": {commands: []string{
			"docker run ghcr.io/kube-vip/kube-vip:v0.8.1 manifest pod --arp --vip 1.2.3.4 >/etc/kubernetes/manifests/x.yaml"}, want: vipARP},
		"the manifest command printing to the console": {commands: []string{
			"ctr run ghcr.io/kube-vip/kube-vip:v0.8.1 vip /kube-vip manifest pod --bgp"}, want: vipNone},
		"a script's here-document to a variable's path": {files: map[string]string{"/usr/local/bin/vip.sh": "#!/bin/sh\n" +
			"OUT=/etc/kubernetes/manifests/announcer.yaml\ncat > \"${OUT}\" <<'EOF'\n" + bgp + "EOF\n"}, want: vipBGP},
		"a here-document elsewhere": {commands: []string{"cat > /tmp/vip.yaml <<EOF\n" + bgp + "EOF"}, want: vipNone},
	} {
		if got := kubeVIPMode(tc.files, tc.commands); got != tc.want {
			t.Errorf("%s: mode %q, want %q", name, got, tc.want)
		}
	}
}

// Every flavour that runs kube-vip, ours and the previous provider's v0.9.0 ones (whose hosts
// generate the manifest with the image's own command), is read as kube-vip over BGP; no other is.
func TestKubeVIPFlavoursOfBothProviders(t *testing.T) {
	dirs := map[string]string{"ours": filepath.Join("..", "..", "..", "templates")}
	if d, err := previousProviderTemplates(); err != nil {
		t.Fatalf("the previous provider's v0.9.0 module: %v", err)
	} else {
		dirs["v0.9.0"] = d
	}
	for who, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "cluster-template*.yaml"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: no templates in %s (%v)", who, dir, err)
		}
		for _, p := range paths {
			files, commands, ok := controlPlanePayload(t, p)
			if !ok {
				continue // a ClusterClass-based flavour: its payload lives in the class
			}
			want := vipNone
			if strings.Contains(filepath.Base(p), "kube-vip") {
				want = vipBGP
			}
			if got := kubeVIPMode(files, commands); got != want {
				t.Errorf("%s %s: mode %q, want %q", who, filepath.Base(p), got, want)
			}
		}
	}
}

func previousProviderTemplates() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/cluster-api-provider-packet@v0.9.0").Output()
	if err != nil {
		return "", err
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	return filepath.Join(mod.Dir, "templates"), nil
}

// controlPlanePayload is what a template's KubeadmControlPlane writes and runs on its hosts.
func controlPlanePayload(t *testing.T, path string) (map[string]string, []string, bool) {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // a template of this test's choosing
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var kcp struct {
			Kind string `json:"kind"`
			Spec struct {
				KubeadmConfigSpec struct {
					Files []struct {
						Path    string `json:"path"`
						Content string `json:"content"`
					} `json:"files"`
					PreKubeadmCommands  []string `json:"preKubeadmCommands"`
					PostKubeadmCommands []string `json:"postKubeadmCommands"`
				} `json:"kubeadmConfigSpec"`
			} `json:"spec"`
		}
		if yaml.Unmarshal([]byte(doc), &kcp) != nil || kcp.Kind != "KubeadmControlPlane" {
			continue
		}
		s := kcp.Spec.KubeadmConfigSpec
		files := map[string]string{}
		for _, f := range s.Files {
			files[f.Path] = f.Content
		}
		return files, append(s.PreKubeadmCommands, s.PostKubeadmCommands...), true
	}
	return nil, nil, false
}
