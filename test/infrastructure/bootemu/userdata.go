package bootemu

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Role is what kubeadm is asked to do on a host.
type Role string

// The roles a bootstrap payload gives a host.
const (
	RoleInit             Role = "init"
	RoleControlPlaneJoin Role = "control-plane-join"
	RoleWorkerJoin       Role = "worker-join"
)

// Paths the kubeadm bootstrap provider writes.
const (
	kubeadmInitConfigPath = "/run/kubeadm/kubeadm.yaml"
	kubeadmJoinConfigPath = "/run/kubeadm/kubeadm-join-config.yaml"
	caCertPath            = "/etc/kubernetes/pki/ca.crt"
	caKeyPath             = "/etc/kubernetes/pki/ca.key"
	etcdCACertPath        = "/etc/kubernetes/pki/etcd/ca.crt"
	etcdCAKeyPath         = "/etc/kubernetes/pki/etcd/ca.key"
	defaultAPIServerPort  = "6443"
	defaultBindPort       = 6443
)

// Boot is what an emulated host takes from its user-data: what kubeadm would be asked to do, and
// with which identity and certificates.
type Boot struct {
	Role Role
	// NodeName is kubeadm's nodeRegistration.name, or the device's hostname.
	NodeName string
	// KubeletExtraArgs are nodeRegistration.kubeletExtraArgs (provider-id among them).
	KubeletExtraArgs map[string]string
	// Endpoint is the control plane's host:port: controlPlaneEndpoint for init, the discovery
	// endpoint for joins.
	Endpoint string
	// KubernetesVersion and ClusterConfiguration come from kubeadm init's configuration.
	KubernetesVersion    string
	ClusterConfiguration string
	// CA and EtcdCA are the key pairs the bootstrap data writes (init and control-plane join).
	CA, EtcdCA KeyPair
	// Token and CACertHashes are the join's bootstrap-token discovery.
	Token        string
	CACertHashes []string
	// BindPort is the port the host's API server listens on (control planes only): kubeadm's
	// localAPIEndpoint.bindPort of the InitConfiguration, or of the JoinConfiguration's
	// controlPlane, 6443 by default. A load balancer's origins must name it.
	BindPort int
	// KubeVIP is set when the host runs kube-vip announcing the endpoint over BGP: a static pod
	// of the kube-vip image lands in the kubelet's manifest folder, whatever writes it and under
	// whatever name (kubevip.go). CloudProvider is set when the host installs CPEM.
	KubeVIP, CloudProvider bool
	// Programs are the programs runcmd starts besides kubeadm, by name only (their arguments may
	// carry credentials): the emulation takes them as having succeeded, and says so.
	Programs []string
	// Console are lines the boot writes to the serial console about what it read.
	Console []string
	// Scripts are the commands before kubeadm that run a script the payload writes. The
	// emulation runs those it is told to (Options.RunScripts) and reads past the others.
	Scripts []Script
	// Secrets are what the host's `kubectl create secret generic` commands create in its
	// cluster once it is a control plane in it (cpem.go): CPEM's key, in the previous
	// provider's templates.
	Secrets []hostSecret
}

// KeyPair is a PEM certificate and key.
type KeyPair struct{ Cert, Key []byte }

// Identity is what cloud-init's instance data knows of the host, for Jinja templates.
type Identity struct {
	DeviceID, Hostname string
}

// BootError is a payload that a real host could not act on: what cloud-init or kubeadm would
// print, and so what the emulation writes to the console.
type BootError struct{ Reason string }

func (e *BootError) Error() string { return e.Reason }

func bootErrorf(format string, args ...any) error {
	return &BootError{Reason: fmt.Sprintf(format, args...)}
}

// cloudConfig is the part of cloud-config the emulation reads.
type cloudConfig struct {
	WriteFiles []struct {
		Path     string `json:"path"`
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
	} `json:"write_files"`
	RunCmd []any `json:"runcmd"`
}

// ParseUserData reads a device's user-data as cloud-init would (cloud-config, optionally a Jinja
// template, or Ignition) and returns what kubeadm is asked to do.
func ParseUserData(userData string, id Identity) (*Boot, error) {
	trimmed := strings.TrimLeft(userData, " \t\r\n")
	switch {
	case trimmed == "":
		return nil, bootErrorf("cloud-init: no user-data")
	case strings.HasPrefix(trimmed, "{"):
		return parseIgnition(trimmed, id)
	}
	data, err := renderJinja(trimmed, id)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(data, "#cloud-config") {
		first, _, _ := strings.Cut(data, "\n")
		return nil, bootErrorf("cloud-init: unhandled non-multipart user-data starting %q", first)
	}
	if err := unrenderedTemplate(data); err != nil {
		return nil, err
	}
	var cc cloudConfig
	if err := yaml.Unmarshal([]byte(data), &cc); err != nil {
		return nil, bootErrorf("cloud-init: invalid cloud-config: %v", err)
	}
	files := map[string]string{}
	for _, f := range cc.WriteFiles {
		content, err := decodeContent(f.Content, f.Encoding)
		if err != nil {
			return nil, bootErrorf("cloud-init: write_files %s: %v", f.Path, err)
		}
		files[f.Path] = content
	}
	var commands []string
	for _, c := range cc.RunCmd {
		switch v := c.(type) {
		case string:
			commands = append(commands, v)
		case []any: // the exec form: [kubeadm, join, --config, file]
			words := make([]string, len(v))
			for i, w := range v {
				words[i] = fmt.Sprint(w)
			}
			commands = append(commands, strings.Join(words, " "))
		}
	}
	return fromFiles(files, commands, id)
}

// fromFiles builds the Boot from the files the payload writes and the commands it runs.
func fromFiles(files map[string]string, commands []string, id Identity) (*Boot, error) {
	b := &Boot{Scripts: preKubeadmScripts(files, commands), Programs: programsOf(commands), Secrets: kubectlSecrets(commands)}
	all := strings.Join(commands, "\n")
	switch kubeVIPMode(files, commands) {
	case vipBGP:
		b.KubeVIP = true
		b.Console = append(b.Console, "kube-vip: a static pod announces the control-plane endpoint over BGP")
	case vipARP:
		b.Console = append(b.Console, "kube-vip: ARP mode: Equinix Metal's layer-3 network routes an elastic IP "+
			"only to the device it is assigned to or over BGP, so ARP announces nothing; use --bgp (bgp_enable)")
	case vipNone:
	}
	for _, content := range files {
		if strings.Contains(content, "cloud-provider-equinix-metal") {
			b.CloudProvider = true
		}
	}
	if strings.Contains(all, "cloud-provider-equinix-metal") {
		b.CloudProvider = true
	}
	m := kubeadmCommand.FindStringSubmatch(all)
	if m == nil {
		return nil, bootErrorf("cloud-init: runcmd runs neither kubeadm init nor kubeadm join")
	}
	switch config := m[2]; m[1] {
	case "init":
		b.Role = RoleInit
		if config == "" {
			config = kubeadmInitConfigPath
		}
		if err := b.readInit(files[config], config); err != nil {
			return nil, err
		}
	default:
		b.Role = RoleWorkerJoin
		if config == "" {
			config = kubeadmJoinConfigPath
		}
		if err := b.readJoin(files[config], config); err != nil {
			return nil, err
		}
	}
	if b.Role != RoleWorkerJoin {
		if b.BindPort == 0 {
			b.BindPort = defaultBindPort
		}
		b.CA = KeyPair{Cert: []byte(files[caCertPath]), Key: []byte(files[caKeyPath])}
		b.EtcdCA = KeyPair{Cert: []byte(files[etcdCACertPath]), Key: []byte(files[etcdCAKeyPath])}
		if len(b.CA.Cert) == 0 || len(b.CA.Key) == 0 || len(b.EtcdCA.Cert) == 0 || len(b.EtcdCA.Key) == 0 {
			return nil, bootErrorf("kubeadm: [certs] the cluster CA and etcd CA key pairs are not under /etc/kubernetes/pki")
		}
	}
	if b.NodeName == "" {
		b.NodeName = strings.ToLower(id.Hostname)
	}
	return b, nil
}

// kubeadmDoc is the part of kubeadm's v1beta3/v1beta4 configuration documents the emulation reads.
type kubeadmDoc struct {
	Kind                 string `json:"kind"`
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint"`
	KubernetesVersion    string `json:"kubernetesVersion"`
	NodeRegistration     struct {
		Name             string `json:"name"`
		KubeletExtraArgs any    `json:"kubeletExtraArgs"`
	} `json:"nodeRegistration"`
	Discovery struct {
		BootstrapToken *struct {
			APIServerEndpoint string   `json:"apiServerEndpoint"`
			Token             string   `json:"token"`
			CACertHashes      []string `json:"caCertHashes"`
		} `json:"bootstrapToken"`
	} `json:"discovery"`
	LocalAPIEndpoint localAPIEndpoint `json:"localAPIEndpoint"`
	ControlPlane     *struct {
		LocalAPIEndpoint localAPIEndpoint `json:"localAPIEndpoint"`
	} `json:"controlPlane"`
}

type localAPIEndpoint struct {
	BindPort int `json:"bindPort"`
}

// kubeadmCommand finds the kubeadm command a payload runs and the configuration file it reads.
var kubeadmCommand = regexp.MustCompile(`kubeadm (init|join)\b(?:[^\n]*?--config[ =](\S+))?`)

func (b *Boot) readInit(config, path string) error {
	docs, raw, err := kubeadmDocs(config, path)
	if err != nil {
		return err
	}
	for i, d := range docs {
		switch d.Kind {
		case "ClusterConfiguration":
			b.ClusterConfiguration = raw[i]
			b.KubernetesVersion = d.KubernetesVersion
			b.Endpoint = withDefaultPort(d.ControlPlaneEndpoint)
		case "InitConfiguration":
			b.NodeName = d.NodeRegistration.Name
			b.KubeletExtraArgs = kubeletArgs(d.NodeRegistration.KubeletExtraArgs)
			b.BindPort = d.LocalAPIEndpoint.BindPort
		}
	}
	if b.Endpoint == "" {
		return bootErrorf("kubeadm init: %s has no ClusterConfiguration with a controlPlaneEndpoint", path)
	}
	return nil
}

func (b *Boot) readJoin(config, path string) error {
	docs, _, err := kubeadmDocs(config, path)
	if err != nil {
		return err
	}
	for _, d := range docs {
		if d.Kind != "JoinConfiguration" {
			continue
		}
		b.NodeName = d.NodeRegistration.Name
		b.KubeletExtraArgs = kubeletArgs(d.NodeRegistration.KubeletExtraArgs)
		if d.ControlPlane != nil {
			b.Role = RoleControlPlaneJoin
			b.BindPort = d.ControlPlane.LocalAPIEndpoint.BindPort
		}
		if t := d.Discovery.BootstrapToken; t != nil {
			b.Endpoint, b.Token, b.CACertHashes = withDefaultPort(t.APIServerEndpoint), t.Token, t.CACertHashes
		}
	}
	if b.Endpoint == "" || b.Token == "" {
		return bootErrorf("kubeadm join: %s has no JoinConfiguration with bootstrap-token discovery", path)
	}
	return nil
}

// documentSeparator separates YAML documents.
var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// kubeadmDocs splits a kubeadm configuration file into its YAML documents.
func kubeadmDocs(config, path string) ([]kubeadmDoc, []string, error) {
	if strings.TrimSpace(config) == "" {
		return nil, nil, bootErrorf("kubeadm: open %s: no such file or directory", path)
	}
	var docs []kubeadmDoc
	var raw []string
	for _, part := range documentSeparator.Split(config, -1) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var d kubeadmDoc
		if err := yaml.Unmarshal([]byte(part), &d); err != nil {
			return nil, nil, bootErrorf("kubeadm: %s: %v", path, err)
		}
		docs = append(docs, d)
		raw = append(raw, strings.TrimSpace(part)+"\n")
	}
	return docs, raw, nil
}

// kubeletArgs reads kubeletExtraArgs in both of kubeadm's shapes: a list of name/value pairs
// (v1beta4) or a map (v1beta3).
func kubeletArgs(v any) map[string]string {
	out := map[string]string{}
	switch args := v.(type) {
	case map[string]any:
		for k, val := range args {
			out[k] = fmt.Sprint(val)
		}
	case []any:
		for _, a := range args {
			if m, ok := a.(map[string]any); ok {
				out[fmt.Sprint(m["name"])] = fmt.Sprint(m["value"])
			}
		}
	}
	return out
}

func withDefaultPort(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(endpoint); err == nil {
		return endpoint
	}
	return net.JoinHostPort(endpoint, defaultAPIServerPort)
}

func decodeContent(content, encoding string) (string, error) {
	switch strings.ToLower(encoding) {
	case "", "text/plain":
		return content, nil
	case "b64", "base64":
		out, err := base64.StdEncoding.DecodeString(content)
		return string(out), err
	case "gz+b64", "gzip+base64", "gz+base64", "gzip+b64":
		zipped, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return "", err
		}
		r, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			return "", err
		}
		out, err := io.ReadAll(r)
		return string(out), err
	default:
		return "", fmt.Errorf("unknown encoding %q", encoding)
	}
}

// jinjaExpression is one {{ ... }} expression.
var jinjaExpression = regexp.MustCompile(`\{\{-?\s*([^{}]*?)\s*-?\}\}`)

// renderJinja renders a "## template: jinja" payload the way cloud-init does, for the instance
// data a Packet host has; other payloads are returned as they are.
func renderJinja(data string, id Identity) (string, error) {
	header, rest, ok := strings.Cut(data, "\n")
	if !ok || !strings.HasPrefix(strings.TrimSpace(header), "## template:") {
		return data, nil
	}
	if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(header), "## template:")) != "jinja" {
		return "", bootErrorf("cloud-init: unknown template renderer in %q", header)
	}
	values := map[string]string{
		"v1.instance_id": id.DeviceID, "ds.meta_data.instance_id": id.DeviceID,
		"v1.local_hostname": id.Hostname, "ds.meta_data.local_hostname": id.Hostname,
		"ds.meta_data.hostname": id.Hostname,
	}
	var unknown string
	out := jinjaExpression.ReplaceAllStringFunc(rest, func(expr string) string {
		name := jinjaExpression.FindStringSubmatch(expr)[1]
		if v, ok := values[name]; ok {
			return v
		}
		if unknown == "" {
			unknown = name
		}
		return expr
	})
	if unknown != "" {
		return "", bootErrorf("cloud-init: jinja template: %q is not in the instance data (known: v1.instance_id, v1.local_hostname, ds.meta_data.*)", unknown)
	}
	return out, nil
}

// unrenderedTemplate finds a Go-template action left in a cloud-config payload: cloud-init would
// write it out literally and kubeadm would fail on it.
func unrenderedTemplate(data string) error {
	for i, line := range strings.Split(data, "\n") {
		if m := jinjaExpression.FindString(line); m != "" {
			return bootErrorf("cloud-init: user-data line %d holds an unrendered template expression %s", i+1, m)
		}
	}
	return nil
}
