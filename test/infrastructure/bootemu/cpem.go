package bootemu

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/packethost/packngo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// CPEM (cloud-provider-equinix-metal) reads its Packet API key from the workload cluster, as the
// real one does: the `cloud-sa.json` of the Secret kube-system/metal-cloud-config, however that
// Secret got there (a ClusterResourceSet through the API server, or the host's own
// `kubectl create secret generic` after kubeadm init, as the previous provider's templates do).
// No Secret, or one without a key, and CPEM moves nothing; a key Packet refuses, likewise.

const (
	cpemSecretNamespace = "kube-system"
	cpemSecretName      = "metal-cloud-config"
	cpemSecretKey       = "cloud-sa.json"
)

// hostSecret is a Secret a host's commands create in its cluster.
type hostSecret struct {
	Namespace, Name string
	Data            map[string]string
}

// String never shows the data: it holds keys.
func (s hostSecret) String() string { return fmt.Sprintf("secret %s/%s", s.Namespace, s.Name) }

// kubectlSecrets are the Secrets that `kubectl create secret generic … --from-literal=k=v`
// commands of a payload create, with the shell's quoting and variables applied. The first
// command for a name is the one that creates it: a later one (a retry after `||`) finds it
// there and fails.
func kubectlSecrets(commands []string) []hostSecret {
	var out []hostSecret
	for _, words := range shellCommands(strings.Join(commands, "\n")) {
		if path.Base(words[0]) != "kubectl" {
			continue
		}
		s, ok := secretCreate(words[1:])
		if ok && !slices.ContainsFunc(out, func(o hostSecret) bool { return o.Namespace == s.Namespace && o.Name == s.Name }) {
			out = append(out, s)
		}
	}
	return out
}

// secretCreate reads the arguments of a kubectl command that creates a generic Secret.
func secretCreate(args []string) (hostSecret, bool) {
	s := hostSecret{Namespace: "default", Data: map[string]string{}}
	var positional []string
	for i := 0; i < len(args); i++ {
		flag, value, inline := strings.Cut(args[i], "=")
		if !strings.HasPrefix(flag, "-") {
			positional = append(positional, args[i])
			continue
		}
		if !inline && kubectlValueFlags[flag] && i+1 < len(args) {
			i++
			value = args[i]
		}
		switch flag {
		case "--from-literal":
			if k, v, ok := strings.Cut(value, "="); ok {
				s.Data[k] = v
			}
		case "-n", "--namespace":
			s.Namespace = value
		}
	}
	if len(positional) < 4 || positional[0] != "create" || positional[1] != "secret" || positional[2] != "generic" {
		return hostSecret{}, false
	}
	s.Name = positional[3]
	return s, true
}

// kubectlValueFlags take a value, inline (--flag=v) or as the next word.
var kubectlValueFlags = map[string]bool{"-n": true, "--namespace": true, "--from-literal": true, "--from-file": true,
	"--from-env-file": true, "--kubeconfig": true, "--context": true, "--type": true, "-o": true, "--output": true}

// createHostSecrets is the host's kubectl creating its Secrets once the control plane answers
// locally; `kubectl create` of one that exists fails and changes nothing.
func (e *Emulator) createHostSecrets(ctx context.Context, h *host, wc inmemoryruntime.Client) error {
	for _, s := range h.boot.Secrets {
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}, Data: map[string][]byte{}}
		for k, v := range s.Data {
			obj.Data[k] = []byte(v)
		}
		if err := createIfMissing(ctx, wc, obj); err != nil {
			return err
		}
		e.console(h, "kubectl: %s created", s)
	}
	return nil
}

// cpemClient is the Packet API client CPEM builds from its Secret, or why it has none.
func (e *Emulator) cpemClient(ctx context.Context, c *workloadCluster) (*packngo.Client, error) {
	if e.opts.MetalURL == "" {
		return nil, fmt.Errorf("no Packet API to call")
	}
	wc := e.mgr.GetResourceGroup(c.endpoint).GetClient()
	s := &corev1.Secret{}
	if err := wc.Get(ctx, client.ObjectKey{Namespace: cpemSecretNamespace, Name: cpemSecretName}, s); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s/%s not found", cpemSecretNamespace, cpemSecretName)
	} else if err != nil {
		return nil, fmt.Errorf("reading secret %s/%s: %w", cpemSecretNamespace, cpemSecretName, err)
	}
	raw := s.Data[cpemSecretKey]
	if raw == nil { // a Secret written with stringData through the API keeps it there here
		raw = []byte(s.StringData[cpemSecretKey])
	}
	var config struct {
		APIKey string `json:"apiKey"`
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %s is not JSON: %w", cpemSecretNamespace, cpemSecretName, cpemSecretKey, err)
	}
	if config.APIKey == "" {
		return nil, fmt.Errorf("secret %s/%s: %s has no apiKey", cpemSecretNamespace, cpemSecretName, cpemSecretKey)
	}
	return packngo.NewClientWithBaseURL("cloud-provider-equinix-metal", config.APIKey, nil, e.opts.MetalURL)
}
