package bootemu

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/ignition"
)

var testIdentity = Identity{DeviceID: "0f0e0d0c-0000-4000-8000-000000000001", Hostname: "node-a"}

func TestCloudConfigFromTheKubeadmBootstrapProvider(t *testing.T) {
	c := newCluster(t, "epsilon", "127.70.1.1")
	b, err := ParseUserData(c.init(t, "v1.36.3"), testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if b.Role != RoleInit || b.Endpoint != c.endpoint || b.KubernetesVersion != "v1.36.3" || b.NodeName != "node-a" {
		t.Errorf("init = role %s endpoint %s version %s node %s", b.Role, b.Endpoint, b.KubernetesVersion, b.NodeName)
	}
	if got := b.KubeletExtraArgs["provider-id"]; got != "equinixmetal://"+testIdentity.DeviceID {
		t.Errorf("provider-id = %q: the Jinja instance id was not rendered", got)
	}
	if !b.CloudProvider || b.KubeVIP {
		t.Errorf("CloudProvider %v KubeVIP %v, want CPEM without kube-vip", b.CloudProvider, b.KubeVIP)
	}

	w, err := ParseUserData(c.worker(t, testToken, c.caHash()), testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if w.Role != RoleWorkerJoin || w.Token != testToken || w.CACertHashes[0] != c.caHash() || w.NodeName != "node-a" {
		t.Errorf("worker = role %s token %s hashes %v node %s", w.Role, w.Token, w.CACertHashes, w.NodeName)
	}
	j, err := ParseUserData(c.controlPlaneJoin(t, testToken), testIdentity)
	if err != nil || j.Role != RoleControlPlaneJoin || len(j.CA.Key) == 0 {
		t.Fatalf("control-plane join = %+v, %v; want the role and the CA key pair", j, err)
	}
}

// The emlb flavour's bootstrap data: no CPEM install after kubeadm init, no kube-vip, kubelets
// with provider-id and without cloud-provider.
func TestEMLBFlavourRunsNoKubeVIPAndNoCloudProvider(t *testing.T) {
	c := newCluster(t, "eta", "127.70.1.4")
	for name, data := range map[string]string{
		"init":               c.initRunning(t, "v1.36.3", "/usr/local/bin/capp-control-plane-endpoint.sh after-kubeadm"),
		"control-plane join": c.controlPlaneJoin(t, testToken),
		"worker":             c.worker(t, testToken, c.caHash()),
	} {
		b, err := ParseUserData(data, testIdentity)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b.KubeVIP || b.CloudProvider {
			t.Errorf("%s: KubeVIP %v CloudProvider %v, want neither", name, b.KubeVIP, b.CloudProvider)
		}
		if got := b.KubeletExtraArgs["provider-id"]; got != "equinixmetal://"+testIdentity.DeviceID {
			t.Errorf("%s: provider-id = %q, want the kubelet's from the instance id", name, got)
		}
	}
}

func TestIgnitionFromTheKubeadmBootstrapProvider(t *testing.T) {
	c := newCluster(t, "zeta", "127.70.1.2")
	join := strings.ReplaceAll(c.joinConfiguration(testToken, c.caHash(), false), "'{{ ds.meta_data.local_hostname }}'", "${COREOS_PACKET_HOSTNAME}")
	join = strings.ReplaceAll(join, "equinixmetal://{{ ds.meta_data.instance_id }}", "equinixmetal://fixed")
	out, _, err := ignition.NewNode(&ignition.NodeInput{NodeInput: &cloudinit.NodeInput{JoinConfiguration: join},
		Ignition: &bootstrapv1.IgnitionSpec{}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseUserData(string(out), testIdentity)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b.Role != RoleWorkerJoin || b.Endpoint != c.endpoint || b.NodeName != "node-a" || b.KubeletExtraArgs["provider-id"] != "equinixmetal://fixed" {
		t.Errorf("ignition worker = role %s endpoint %s node %s args %v", b.Role, b.Endpoint, b.NodeName, b.KubeletExtraArgs)
	}
}

func TestBindPortFromTheKubeadmConfiguration(t *testing.T) {
	c := newCluster(t, "eta", "127.70.1.4")
	for _, tc := range []struct {
		bindPort, want int
	}{{0, 6443}, {7443, 7443}} {
		c.bindPort = tc.bindPort
		for role, userData := range map[Role]string{RoleInit: c.init(t, "v1.36.3"), RoleControlPlaneJoin: c.controlPlaneJoin(t, testToken)} {
			b, err := ParseUserData(userData, testIdentity)
			if err != nil {
				t.Fatal(err)
			}
			if b.Role != role || b.BindPort != tc.want {
				t.Errorf("bindPort %d: %s has BindPort %d, want %d", tc.bindPort, b.Role, b.BindPort, tc.want)
			}
		}
	}
	w, err := ParseUserData(c.worker(t, testToken, c.caHash()), testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if w.BindPort != 0 {
		t.Errorf("a worker has BindPort %d, want none: it runs no API server", w.BindPort)
	}
}

func TestWriteFilesEncodings(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write([]byte("kind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: 127.70.1.3\n    token: abcdef.0123456789abcdef\n"))
	_ = zw.Close()
	data := "#cloud-config\nwrite_files:\n- path: /run/kubeadm/kubeadm-join-config.yaml\n  encoding: gzip+base64\n  content: " +
		base64.StdEncoding.EncodeToString(zipped.Bytes()) + "\nruncmd:\n- [kubeadm, join, --config, /run/kubeadm/kubeadm-join-config.yaml]\n"
	b, err := ParseUserData(data, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if b.Endpoint != "127.70.1.3:6443" || b.Token != "abcdef.0123456789abcdef" {
		t.Errorf("join from a gzip+base64 file and a list-form command: endpoint %q token %q (the port defaults to 6443)", b.Endpoint, b.Token)
	}
}

func TestBootErrorsAreTyped(t *testing.T) {
	for _, in := range []string{"", "{not json", `{"ignition":{"version":"1.0"}}`, "## template: mustache\n#cloud-config\n", "#cloud-config\nruncmd: [kubeadm join]\n"} {
		_, err := ParseUserData(in, testIdentity)
		var be *BootError
		if !errors.As(err, &be) {
			t.Errorf("ParseUserData(%q) = %v, want a BootError", in, err)
		}
	}
}

// FuzzParseUserData: no user-data makes the emulation panic.
func FuzzParseUserData(f *testing.F) {
	f.Add("#cloud-config\nruncmd: [kubeadm init]\n")
	f.Add("## template: jinja\n#cloud-config\nwrite_files:\n- path: /x\n  content: '{{ v1.instance_id }}'\n  encoding: b64\n")
	f.Add(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/kubeadm.sh","contents":{"source":"data:;base64,!!"}}]}}`)
	f.Fuzz(func(t *testing.T, data string) {
		_, _ = ParseUserData(data, testIdentity)
	})
}
