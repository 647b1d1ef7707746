package bootemu

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/packethost/packngo"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/secret"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// testPool is the simulator's public IPv4 pool in these tests: loopback addresses that no
// sandbox uses (the sandbox hands out 127.64.0.0/16), so a test endpoint never collides with one.
const testPool = "127.70.0.0/16"

// env is a simulator on a virtual clock behind a real HTTP listener, the emulation of its
// devices, and a packngo client: what a provider and a workload cluster see.
type env struct {
	t     testing.TB
	ctx   context.Context
	sim   *packetsim.Server
	metal *packngo.Client
	emu   *Emulator
	// url is the simulator's, and lbToken an access token of its load-balancer service (see
	// lbaas_test.go).
	url, lbToken string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, Options{})
}

// newEnvWith is newEnv with the emulation's options of opts that newEnv leaves unset.
func newEnvWith(t testing.TB, opts Options) *env {
	t.Helper()
	seed := packetsim.DefaultSeed()
	seed.IPPools.PublicIPv4 = testPool
	timing := packetsim.TimingFast
	sim, err := packetsim.New(packetsim.Options{Clock: packetsim.NewVirtualClock(time.Time{}), Timing: &timing, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	metal, err := packngo.NewClientWithBaseURL("bootemu-test", packetsim.DefaultToken, &http.Client{Timeout: 10 * time.Second}, srv.URL+"/metal/v1/")
	if err != nil {
		t.Fatal(err)
	}
	opts.MetalURL = srv.URL + "/metal/v1/"
	opts.JoinTimeout, opts.RebootTime = time.Minute, 5*time.Second
	opts.Log = testr.NewWithInterface(t, testr.Options{})
	emu, err := New(sim, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := emu.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		emu.Close()
		cancel()
		srv.Close()
		_ = sim.Close()
		packetsim.CheckConformance(t, sim)
	})
	return &env{t: t, ctx: ctx, sim: sim, metal: metal, emu: emu, url: srv.URL}
}

// settle moves the simulator's clock on and lets the emulation look at every device.
func (e *env) settle(d time.Duration) {
	e.sim.Advance(d)
	e.emu.Step(e.ctx)
}

func (e *env) reserveElasticIP() string {
	e.t.Helper()
	r, _, err := e.metal.ProjectIPs.Request(packetsim.DefaultProjectID, &packngo.IPReservationRequest{
		Type: packngo.PublicIPv4, Quantity: 1, Metro: ptrTo("sv"), Tags: []string{"test"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Address
}

func (e *env) assign(deviceID, address string) {
	e.t.Helper()
	if _, _, err := e.metal.DeviceIPs.Assign(deviceID, &packngo.AddressStruct{Address: address + "/32"}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) createDevice(hostname, userData string) string {
	e.t.Helper()
	d, _, err := e.metal.Devices.Create(&packngo.DeviceCreateRequest{Hostname: hostname, Plan: "c3.small.x86", Metro: "sv",
		OS: "ubuntu_24_04", ProjectID: packetsim.DefaultProjectID, UserData: userData})
	if err != nil {
		e.t.Fatal(err)
	}
	return d.ID
}

func (e *env) deviceEvents(id string) string {
	d, _ := e.sim.Device(id)
	var out []string
	for _, ev := range d.Events {
		out = append(out, ev.Type+": "+ev.Body)
	}
	return strings.Join(out, "\n")
}

func (e *env) console(id string) string { return strings.Join(e.sim.Console(id), "\n") }

// answers reports whether the endpoint accepts TLS connections.
func answers(endpoint string) bool {
	conn, err := net.DialTimeout("tcp", endpoint, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// cluster is the bootstrap material of one workload cluster, as Cluster API's kubeadm bootstrap
// provider generates it.
type cluster struct {
	name, endpoint string
	certs          secret.Certificates
	// bindPort, when set, is the control planes' localAPIEndpoint.bindPort.
	bindPort int
}

func newCluster(t testing.TB, name, eip string) *cluster {
	t.Helper()
	c := secret.NewCertificatesForInitialControlPlane(&bootstrapv1.ClusterConfiguration{})
	if err := c.Generate(); err != nil {
		t.Fatal(err)
	}
	return &cluster{name: name, endpoint: net.JoinHostPort(eip, "6443"), certs: c}
}

func (c *cluster) caHash() string {
	ca, _ := certs.DecodeCertPEM(c.certs.GetByPurpose(secret.ClusterCA).KeyPair.Cert)
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// installCPEM is what the templates but emlb run after kubeadm init.
const installCPEM = "kubectl --kubeconfig /etc/kubernetes/admin.conf apply -f https://github.com/equinix/cloud-provider-equinix-metal/releases/download/v3.8.1/deployment.yaml"

// cpemSecret is how the previous provider's templates give CPEM its key after kubeadm init, as
// clusterctl and the provider render it.
func cpemSecret(apiKey string) string {
	return `export KUBECONFIG=/etc/kubernetes/admin.conf
export SECRET_DATA='cloud-sa.json=''{"apiKey": "` + apiKey + `","projectID": "` + packetsim.DefaultProjectID + `", "eipTag": "cluster-api-provider-packet:cluster-id:test", "eipHealthCheckUseHostIP": true}'''
kubectl create secret generic -n kube-system metal-cloud-config --from-literal="${SECRET_DATA}" || (sleep 1 && kubectl create secret generic -n kube-system metal-cloud-config --from-literal="${SECRET_DATA}")`
}

// init is the user-data of the first control plane, Jinja header and all, giving CPEM the
// simulator's key and installing it.
func (c *cluster) init(t testing.TB, version string) string {
	t.Helper()
	return c.initRunning(t, version, cpemSecret(packetsim.DefaultToken), installCPEM)
}

// initRunning is init with other commands after kubeadm init.
func (c *cluster) initRunning(t testing.TB, version string, postKubeadm ...string) string {
	t.Helper()
	return c.initWith(t, version, cloudinit.BaseUserData{PostKubeadmCommands: postKubeadm})
}

// initWith is init with the files and commands of base (a KubeadmConfigSpec's).
func (c *cluster) initWith(t testing.TB, version string, base cloudinit.BaseUserData) string {
	t.Helper()
	out, err := cloudinit.NewInitControlPlane(&cloudinit.ControlPlaneInput{
		BaseUserData: base,
		Certificates: c.certs,
		ClusterConfiguration: fmt.Sprintf("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: %s\ncontrolPlaneEndpoint: %s\nkubernetesVersion: %s\n",
			c.name, c.endpoint, version),
		InitConfiguration: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n" + c.localAPIEndpoint("") +
			"nodeRegistration:\n  kubeletExtraArgs:\n  - name: provider-id\n    value: equinixmetal://{{ v1.instance_id }}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (c *cluster) joinConfiguration(token, caHash string, controlPlane bool) string {
	cp := ""
	if controlPlane {
		cp = "controlPlane:\n" + c.localAPIEndpoint("  ")
	}
	return fmt.Sprintf("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n%sdiscovery:\n  bootstrapToken:\n    apiServerEndpoint: %s\n    token: %s\n    caCertHashes:\n    - %s\nnodeRegistration:\n  name: '{{ ds.meta_data.local_hostname }}'\n  kubeletExtraArgs:\n    provider-id: equinixmetal://{{ ds.meta_data.instance_id }}\n",
		cp, c.endpoint, token, caHash)
}

// localAPIEndpoint is kubeadm's localAPIEndpoint, indented, with the cluster's bindPort if set.
func (c *cluster) localAPIEndpoint(indent string) string {
	if c.bindPort == 0 {
		return indent + "localAPIEndpoint: {}\n"
	}
	return fmt.Sprintf("%slocalAPIEndpoint:\n%s  bindPort: %d\n", indent, indent, c.bindPort)
}

// worker is a worker's join user-data (kubeletExtraArgs in v1beta3's map shape on purpose).
func (c *cluster) worker(t testing.TB, token, caHash string) string {
	t.Helper()
	out, err := cloudinit.NewNode(&cloudinit.NodeInput{JoinConfiguration: c.joinConfiguration(token, caHash, false)})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (c *cluster) controlPlaneJoin(t testing.TB, token string) string {
	t.Helper()
	joinCerts := secret.NewControlPlaneJoinCerts(&bootstrapv1.ClusterConfiguration{})
	for _, jc := range joinCerts {
		jc.KeyPair = c.certs.GetByPurpose(jc.Purpose).KeyPair
	}
	out, err := cloudinit.NewJoinControlPlane(&cloudinit.ControlPlaneJoinInput{Certificates: joinCerts, BootstrapToken: token,
		JoinConfiguration: c.joinConfiguration(token, c.caHash(), true)})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// client reaches the workload cluster as Cluster API does: through its kubeconfig, with an
// admin certificate signed by the cluster CA, verifying the serving certificate against the CA.
func (c *cluster) client(t testing.TB) client.Client {
	t.Helper()
	kp := c.certs.GetByPurpose(secret.ClusterCA).KeyPair
	ca, _ := certs.DecodeCertPEM(kp.Cert)
	key, _ := certs.DecodePrivateKeyPEM(kp.Key)
	cfg, err := kubeconfig.New(c.name, "https://"+c.endpoint, ca, key.(*rsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	rest.Timeout = 5 * time.Second
	cl, err := client.New(rest, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func ptrTo[T any](v T) *T { return &v }
