package bootemu

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packethost/packngo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

func TestShellCommandsReadWordsAsTheShellDoes(t *testing.T) {
	for name, tc := range map[string]struct {
		script string
		want   [][]string
	}{
		"plain words":          {"echo a  b", [][]string{{"echo", "a", "b"}}},
		"single quotes":        {`echo 'a $X "b"'`, [][]string{{"echo", `a $X "b"`}}},
		"adjacent quotes join": {`X='a=''{"k": 1}'''` + "\necho \"$X\"", [][]string{{"echo", `a={"k": 1}`}}},
		"double quotes expand": {"export X=1 Y=two\necho \"${X}-$Y\" \\\"", [][]string{{"echo", "1-two", `"`}}},
		"defaults":             {"echo ${V:=v3} ${V} ${W:-w}", [][]string{{"echo", "v3", "v3", "w"}}},
		"control operators":    {"a || (sleep 1 && b); c | d # e", [][]string{{"a"}, {"sleep", "1"}, {"b"}, {"c"}, {"d"}}},
		"compound keywords":    {"if [ -f x ]; then\n  y\nfi", [][]string{{"[", "-f", "x", "]"}, {"y"}, {"fi"}}},
		"unknown is empty":     {"echo \"$(hostname)\" $NOPE end", [][]string{{"echo", "", "end"}}},
		"heredoc skipped":      {"cat <<EOF > f\nnot a command\nEOF\nz", [][]string{{"cat", "<<EOF", ">", "f"}, {"z"}}},
		"continued line":       {"kubectl create \\\n  secret", [][]string{{"kubectl", "create", "secret"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := shellCommands(tc.script); !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
				t.Errorf("shellCommands(%q) = %q, want %q", tc.script, got, tc.want)
			}
		})
	}
}

func TestThePreviousProvidersSecretCommandGivesCPEMItsKey(t *testing.T) {
	secrets := kubectlSecrets([]string{cpemSecret("the-key")})
	if len(secrets) != 1 {
		t.Fatalf("%d secrets from the previous provider's command, want 1 (the retry creates the same one): %v", len(secrets), secrets)
	}
	s := secrets[0]
	if s.Namespace != cpemSecretNamespace || s.Name != cpemSecretName {
		t.Errorf("secret %s/%s, want %s/%s", s.Namespace, s.Name, cpemSecretNamespace, cpemSecretName)
	}
	if got := s.Data[cpemSecretKey]; !strings.HasPrefix(got, `{"apiKey": "the-key","projectID": "`+packetsim.DefaultProjectID+`"`) {
		t.Errorf("%s = %q, want the JSON the template writes", cpemSecretKey, got)
	}
	if strings.Contains(s.String(), "the-key") {
		t.Errorf("a secret's String() shows its data: %s", s)
	}
	if got := kubectlSecrets([]string{"kubectl get secret generic x", "kubectl create configmap y --from-literal=a=b"}); len(got) != 0 {
		t.Errorf("commands that create no secret read as %v", got)
	}
}

// CPEM moves the elastic IP with the key it finds in the workload cluster, and only then.
func TestCPEMMovesTheElasticIPOnlyWithAKeyPacketAccepts(t *testing.T) {
	for name, tc := range map[string]struct {
		postKubeadm []string
		apiSecret   string // cloud-sa.json of a Secret written through the API (a ClusterResourceSet)
		moved       bool
		console     string
	}{
		"host's kubectl secret":      {postKubeadm: []string{cpemSecret(packetsim.DefaultToken)}, moved: true},
		"ClusterResourceSet":         {apiSecret: `{"apiKey": "` + packetsim.DefaultToken + `"}`, moved: true},
		"no secret":                  {console: "secret kube-system/metal-cloud-config not found"},
		"apiKey rendered empty":      {postKubeadm: []string{cpemSecret("")}, console: "cloud-sa.json has no apiKey"},
		"a key Packet does not know": {postKubeadm: []string{cpemSecret("not-a-key")}, console: "401"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			eip := e.reserveElasticIP()
			c := newCluster(t, "mu", eip)
			first := e.createDevice("mu-cp-0", c.initRunning(t, "v1.36.3", append(tc.postKubeadm, installCPEM)...))
			e.settle(boot)
			e.assign(first, eip)
			e.settle(time.Second)
			wc := c.client(t) // through the endpoint, as a ClusterResourceSet writes
			if tc.apiSecret != "" {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cpemSecretNamespace, Name: cpemSecretName},
					StringData: map[string]string{cpemSecretKey: tc.apiSecret}}
				if err := wc.Create(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			createToken(t, wc)
			second := e.createDevice("mu-cp-1", c.controlPlaneJoin(t, testToken))
			e.settle(boot)
			if _, err := e.metal.Devices.Delete(first, false); err != nil {
				t.Fatal(err)
			}
			e.settle(time.Minute)
			e.settle(time.Second)
			e.settle(time.Second)

			assignments, _, err := e.metal.DeviceIPs.List(second, &packngo.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			moved := slices.ContainsFunc(assignments, func(a packngo.IPAddressAssignment) bool { return a.Address == eip })
			if moved != tc.moved || answers(c.endpoint) != tc.moved {
				t.Fatalf("elastic IP moved %v, endpoint answers %v; want %v; console:\n%s", moved, answers(c.endpoint), tc.moved, e.console(second))
			}
			if !strings.Contains(e.console(second), tc.console) {
				t.Errorf("console of the live control plane does not say %q:\n%s", tc.console, e.console(second))
			}
			if strings.Contains(e.console(second), packetsim.DefaultToken) || strings.Contains(e.console(second), "not-a-key") {
				t.Errorf("a key reached the console:\n%s", e.console(second))
			}
		})
	}
}
