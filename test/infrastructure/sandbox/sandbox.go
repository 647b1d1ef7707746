package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim/metalspec"
)

// supervisorName is the pid file name of the process that runs the sandbox.
const supervisorName = "sandbox"

// SimToken and SimProjectID are the simulator's default API token and seeded project.
const (
	SimToken     = packetsim.DefaultToken
	SimProjectID = "00000000-0000-4000-8000-000000000001"
)

// Component is one running child process.
type Component struct {
	// Name is the process (and log file) name, e.g. "capi-controller-manager".
	Name string
	// Provider is the clusterctl provider label whose webhooks this manager serves
	// ("cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-packet").
	Provider string
	// Namespace is where clusterctl installs that provider.
	Namespace string
	// Endpoint is what it serves (a URL), for people.
	Endpoint string
	// LogFile is the child's stdout and stderr.
	LogFile string
	// Launcher, for a component the sandbox does not start itself (Config.ExternalManager), is
	// the script that starts it with the sandbox's arguments and environment.
	Launcher string

	binary                                  string
	args, env                               []string
	commonArgs, commonEnv                   []string // what any manager in its place gets: ports, certificates, the simulator
	webhookPort, healthPort, diagnosticPort int
	ready                                   func(context.Context) error
	proc                                    *process
}

// Pid is the child's process id (0 when not running).
func (c *Component) Pid() int {
	if c.proc == nil || c.proc.exited() {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// Sandbox is a running (or startable) management plane.
type Sandbox struct {
	cfg   Config
	ports Ports
	pki   *pki
	procs []*process
	// infrastructure is how many of Components (etcd, kube-apiserver, kube-controller-manager,
	// and packetsim unless it is external) come before the managers.
	infrastructure int

	// Components lists every child, in start order.
	Components []*Component
	// Kubeconfig is the admin kubeconfig file of the sandbox's kube-apiserver.
	Kubeconfig string
	// RESTConfig and Client talk to that kube-apiserver as admin.
	RESTConfig *rest.Config
	Client     client.Client
	// SimURL is the simulator's base URL (http://127.0.0.1:<port>); the Packet API is under
	// /metal/v1/ and the control API under /_sim/.
	SimURL string
	// ClusterctlConfig is the clusterctl configuration file pointing at the local repositories,
	// with the variables for clusters on the simulator.
	ClusterctlConfig string
	// ClusterctlEnv is the environment clusterctl runs with (HOME and XDG dirs in the state
	// folder, no version check).
	ClusterctlEnv []string
	// StartupTime is how long Start took.
	StartupTime time.Duration
}

// New validates cfg and prepares a sandbox; Start starts it.
func New(cfg Config) (*Sandbox, error) {
	if cfg.PortBase == 0 {
		cfg.PortBase = DefaultPortBase
	}
	if cfg.SimTiming == "" {
		cfg.SimTiming = "sandbox"
	}
	if cfg.Log == nil {
		cfg.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	var err error
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, ports: cfg.ports()}
	s.Kubeconfig = filepath.Join(cfg.StateDir, "kubeconfig")
	s.SimURL = fmt.Sprintf("http://127.0.0.1:%d", s.ports.Packetsim)
	if cfg.ExternalSimulator != "" {
		s.SimURL = strings.TrimSuffix(cfg.ExternalSimulator, "/")
	}
	s.ClusterctlConfig = filepath.Join(cfg.StateDir, "clusterctl", "clusterctl.yaml")
	home := filepath.Join(cfg.StateDir, "home")
	s.ClusterctlEnv = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true", "KUBECONFIG=" + s.Kubeconfig}
	s.plan()
	return s, nil
}

// Config returns the configuration the sandbox runs with.
func (s *Sandbox) Config() Config { return s.cfg }

// Ports returns the loopback ports of the infrastructure processes.
func (s *Sandbox) Ports() Ports { return s.ports }

// plan lays out every child: binary, arguments, ports and readiness check.
func (s *Sandbox) plan() {
	st := s.cfg.StateDir
	s.Components = s.infrastructureComponents()
	s.infrastructure = len(s.Components)
	for i, m := range s.managerSpecs() {
		s.Components = append(s.Components, s.managerComponent(i, m))
	}
	for _, c := range s.Components {
		c.LogFile = filepath.Join(st, "logs", c.Name+".log")
	}
	if s.cfg.ExternalManager {
		c := s.Component(managerName)
		c.Launcher = filepath.Join(st, "bin", managerName)
		c.LogFile = ""
	}
}

// infrastructureComponents are the children the managers run on: etcd, kube-apiserver,
// kube-controller-manager and (unless an external one is used) the simulator.
func (s *Sandbox) infrastructureComponents() []*Component {
	st, p := s.cfg.StateDir, s.ports
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", p.Etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", p.EtcdPeer)
	pkiDir := filepath.Join(st, "pki")
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", p.APIServer)
	kcmURL := fmt.Sprintf("https://127.0.0.1:%d", p.ControllerManager)
	components := []*Component{{
		Name: "etcd", Endpoint: etcdURL, binary: s.cfg.Etcd,
		args: []string{"--name=sandbox", "--data-dir=" + filepath.Join(st, "etcd"),
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=sandbox=" + peerURL, "--unsafe-no-fsync=true", "--log-level=warn"},
		ready: func(ctx context.Context) error { return httpOK(ctx, etcdURL+"/health") },
	}, {
		Name: "kube-apiserver", Endpoint: apiURL, binary: s.cfg.KubeAPIServer,
		args: []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.APIServer), "--etcd-servers=" + etcdURL,
			"--tls-cert-file=" + filepath.Join(pkiDir, "issued", "kube-apiserver", "tls.crt"),
			"--tls-private-key-file=" + filepath.Join(pkiDir, "issued", "kube-apiserver", "tls.key"),
			"--client-ca-file=" + filepath.Join(pkiDir, "ca.crt"),
			"--service-account-issuer=" + apiURL + "/",
			"--service-account-key-file=" + filepath.Join(pkiDir, "sa.pub"),
			"--service-account-signing-key-file=" + filepath.Join(pkiDir, "sa.key"),
			"--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC", "--allow-privileged=true",
			"--disable-admission-plugins=ServiceAccount", "--enable-priority-and-fairness=false"},
		ready: s.apiserverReady,
	}, {
		// Every management cluster runs one. Without it a deleted namespace stays Terminating and
		// owner references collect nothing, so deletion could not be shown here. Only the two
		// controllers a management plane of CRDs needs; the admin identity stands in for the
		// per-controller service accounts a real control plane would give them.
		Name: "kube-controller-manager", Endpoint: kcmURL, binary: s.cfg.KubeControllerManager,
		args: []string{"--kubeconfig=" + s.Kubeconfig, "--controllers=namespace,garbagecollector",
			"--leader-elect=false", "--use-service-account-credentials=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.ControllerManager),
			"--tls-cert-file=" + filepath.Join(pkiDir, "issued", "kube-controller-manager", "tls.crt"),
			"--tls-private-key-file=" + filepath.Join(pkiDir, "issued", "kube-controller-manager", "tls.key")},
		ready: func(ctx context.Context) error { return s.httpsOK(ctx, kcmURL+"/healthz") },
	}}
	if s.cfg.ExternalSimulator == "" {
		components = append(components, &Component{
			Name: "packetsim", Endpoint: s.SimURL + "/metal/v1/", binary: s.cfg.Packetsim,
			args: s.simArgs(),
			ready: func(ctx context.Context) error {
				return httpOK(ctx, s.SimURL+"/_sim/clock")
			},
		})
	}
	return components
}

// managerSpec is what differs between the four controller managers.
type managerSpec struct {
	name, provider, namespace, bin string
	args, env                      []string
	// extraEnv is added to env for this manager only, not for one started in its place.
	extraEnv []string
}

// managerSpecs are Cluster API's three managers and this provider's, in start order.
func (s *Sandbox) managerSpecs() []managerSpec {
	gates := func(on ...string) []string {
		return []string{"--feature-gates=" + strings.Join(append(on, s.cfg.CAPIFeatureGates...), ",")}
	}
	return []managerSpec{
		{"capi-controller-manager", "cluster-api", "capi-system", s.cfg.CoreManager,
			gates("ClusterTopology=true"), nil, nil},
		// Ignition bootstrap data (the flatcar flavour) is behind a feature gate of both kubeadm
		// managers; clusterctl users turn it on with EXP_KUBEADM_BOOTSTRAP_FORMAT_IGNITION=true.
		{"capi-kubeadm-bootstrap-controller-manager", "bootstrap-kubeadm", "capi-kubeadm-bootstrap-system",
			s.cfg.BootstrapManager, []string{"--feature-gates=KubeadmBootstrapFormatIgnition=true"}, nil, nil},
		{"capi-kubeadm-control-plane-controller-manager", "control-plane-kubeadm", "capi-kubeadm-control-plane-system",
			s.cfg.ControlPlaneMgr, gates("ClusterTopology=true", "KubeadmBootstrapFormatIgnition=true"), nil, nil},
		{managerName, "infrastructure-packet", "cluster-api-provider-packet-system", s.cfg.Manager,
			s.cfg.ExtraManagerArgs, []string{"PACKET_API_URL=" + s.SimURL + "/metal/v1/", "PACKET_API_KEY=" + SimToken,
				"LBAAS_API_URL=" + s.SimURL + "/lbaas/", "METAL_TOKEN_EXCHANGE_URL=" + s.SimURL + "/iam/api-keys/exchange"},
			s.cfg.ExtraManagerEnv},
	}
}

// managerComponent is the i-th manager: its three ports follow each other from PortBase+10, and
// it is ready when its health endpoint answers and its webhook server serves TLS.
func (s *Sandbox) managerComponent(i int, m managerSpec) *Component {
	base := s.cfg.PortBase
	c := &Component{Name: m.name, Provider: m.provider, Namespace: m.namespace, binary: m.bin,
		webhookPort: base + 10 + 3*i, healthPort: base + 11 + 3*i, diagnosticPort: base + 12 + 3*i}
	certDir := filepath.Join(s.cfg.StateDir, "pki", "issued", m.name)
	c.Endpoint = fmt.Sprintf("webhooks https://127.0.0.1:%d, health http://127.0.0.1:%d", c.webhookPort, c.healthPort)
	c.commonArgs = []string{"--leader-elect=false",
		"--webhook-port=" + strconv.Itoa(c.webhookPort), "--webhook-cert-dir=" + certDir,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", c.healthPort),
		fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", c.diagnosticPort), "--insecure-diagnostics=true"}
	c.args = append(slices.Clone(c.commonArgs), m.args...)
	kubeEnv := []string{"KUBECONFIG=" + s.Kubeconfig}
	c.commonEnv = append(append([]string{"POD_NAMESPACE=" + m.namespace, "POD_NAME=" + m.name + "-sandbox"}, kubeEnv...), m.env...)
	c.env = append(slices.Clone(c.commonEnv), m.extraEnv...)
	healthURL := fmt.Sprintf("http://127.0.0.1:%d/readyz", c.healthPort)
	webhookAddr := fmt.Sprintf("127.0.0.1:%d", c.webhookPort)
	c.ready = func(ctx context.Context) error {
		if err := httpOK(ctx, healthURL); err != nil {
			return err
		}
		return tlsDial(ctx, webhookAddr, s.pki)
	}
	return c
}

// managerName is this provider's manager among Components.
const managerName = "capp-controller-manager"

func (s *Sandbox) simArgs() []string {
	args := []string{fmt.Sprintf("--listen=127.0.0.1:%d", s.ports.Packetsim), "--timing=" + s.cfg.SimTiming,
		"--state-file=" + filepath.Join(s.cfg.StateDir, "packetsim", "state.json"), "--boot", "--metal-spec-strict"}
	// The sandbox finds the spec (it runs inside the module, the simulator's folder need not).
	if spec, err := metalspec.Locate(); err == nil {
		args = append(args, "--metal-spec="+spec)
	}
	if s.cfg.SimPublicIPv4 != "" {
		args = append(args, "--public-ipv4-pool="+s.cfg.SimPublicIPv4)
	}
	if len(s.cfg.SimBootScripts) > 0 {
		args = append(args, "--boot-run-scripts="+strings.Join(s.cfg.SimBootScripts, ","))
	}
	if s.cfg.SimFaults != "" {
		args = append(args, "--faults="+s.cfg.SimFaults)
	}
	return args
}

// Component returns the named child (nil if there is none).
func (s *Sandbox) Component(name string) *Component {
	for _, c := range s.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Start brings everything up and returns once every component is ready. On error, whatever was
// started is stopped again.
func (s *Sandbox) Start(ctx context.Context) (err error) {
	begin := time.Now()
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := s.preflight(); err != nil {
		return err
	}
	if err := s.prepareFiles(); err != nil {
		return err
	}
	// Infrastructure first: etcd, kube-apiserver, kube-controller-manager, the simulator.
	for _, c := range s.Components[:s.infrastructure] {
		if err := s.startComponent(ctx, c); err != nil {
			return err
		}
	}
	if err := s.install(ctx); err != nil {
		return err
	}
	// Then the managers, in parallel: each only needs the CRDs installed above.
	for _, c := range s.Components[s.infrastructure:] {
		if c.Launcher != "" {
			if err := writeLauncher(c, s.cfg.StateDir); err != nil {
				return err
			}
			continue
		}
		if err := s.launch(c); err != nil {
			return err
		}
	}
	for _, c := range s.Components[s.infrastructure:] {
		if c.Launcher != "" {
			continue
		}
		if err := s.waitReady(ctx, c, 3*time.Minute); err != nil {
			return err
		}
	}
	s.StartupTime = time.Since(begin)
	return nil
}

// preflight fails with one line if another sandbox runs from the same folder or a port is taken.
func (s *Sandbox) preflight() error {
	pidFile := filepath.Join(s.cfg.StateDir, "pids", supervisorName+".pid")
	if pid := livePid(pidFile); pid != 0 && pid != os.Getpid() {
		return fmt.Errorf("a sandbox is already running from %s (pid %d): stop it with `make sandbox-down`", s.cfg.StateDir, pid)
	}
	for _, c := range s.Components {
		if pid := livePid(filepath.Join(s.cfg.StateDir, "pids", c.Name+".pid")); pid != 0 {
			return fmt.Errorf("%s from an earlier sandbox is still running (pid %d): stop it with `make sandbox-down`", c.Name, pid)
		}
	}
	p := s.ports
	checks := []struct {
		addr, what string
	}{
		{fmt.Sprintf("127.0.0.1:%d", p.Etcd), "etcd"}, {fmt.Sprintf("127.0.0.1:%d", p.EtcdPeer), "etcd peer"},
		{fmt.Sprintf("127.0.0.1:%d", p.APIServer), "kube-apiserver"},
		{fmt.Sprintf("127.0.0.1:%d", p.ControllerManager), "kube-controller-manager"},
	}
	if s.cfg.ExternalSimulator == "" {
		checks = append(checks, struct{ addr, what string }{fmt.Sprintf("127.0.0.1:%d", p.Packetsim), "packetsim"})
	}
	for _, c := range s.Components[s.infrastructure:] {
		// The managers' webhook servers have no bind-address flag and listen on every interface.
		checks = append(checks,
			struct{ addr, what string }{fmt.Sprintf(":%d", c.webhookPort), c.Name + " webhooks"},
			struct{ addr, what string }{fmt.Sprintf("127.0.0.1:%d", c.healthPort), c.Name + " health"},
			struct{ addr, what string }{fmt.Sprintf("127.0.0.1:%d", c.diagnosticPort), c.Name + " diagnostics"})
	}
	for _, c := range checks {
		if err := checkPort(c.addr, c.what); err != nil {
			return err
		}
	}
	return nil
}

// prepareFiles writes the pki, the kubeconfig and the supervisor's pid file.
func (s *Sandbox) prepareFiles() error {
	st := s.cfg.StateDir
	for _, d := range []string{"pids", "logs", "packetsim", "clusterctl", "home"} {
		if err := os.MkdirAll(filepath.Join(st, d), 0o755); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := writePidFile(filepath.Join(st, "pids", supervisorName+".pid"), os.Getpid(), exe); err != nil {
		return err
	}
	pkiDir := filepath.Join(st, "pki")
	if s.pki, err = loadOrCreatePKI(pkiDir); err != nil {
		return fmt.Errorf("creating the sandbox CA: %w", err)
	}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
		if err := s.pki.serving(filepath.Join(pkiDir, "issued", name), name); err != nil {
			return err
		}
	}
	if err := s.pki.client(filepath.Join(pkiDir, "issued", "admin"), "sandbox-admin", "system:masters"); err != nil {
		return err
	}
	if err := s.pki.serviceAccountKey(); err != nil {
		return err
	}
	for _, c := range s.Components[s.infrastructure:] {
		if err := s.pki.serving(filepath.Join(pkiDir, "issued", c.Name), c.Name); err != nil {
			return err
		}
	}
	return s.writeKubeconfig()
}

func (s *Sandbox) writeKubeconfig() error {
	admin := filepath.Join(s.cfg.StateDir, "pki", "issued", "admin")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = &clientcmdapi.Cluster{
		Server:                   fmt.Sprintf("https://127.0.0.1:%d", s.ports.APIServer),
		CertificateAuthorityData: s.pki.caPEM,
	}
	crt, err := os.ReadFile(filepath.Join(admin, "tls.crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(admin, "tls.key"))
	if err != nil {
		return err
	}
	cfg.AuthInfos["sandbox-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "sandbox-admin"}
	cfg.CurrentContext = "sandbox"
	if err := clientcmd.WriteToFile(*cfg, s.Kubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 100, 200
	s.RESTConfig = rc
	s.Client, err = client.New(rc, client.Options{Scheme: Scheme()})
	return err
}

func (s *Sandbox) launch(c *Component) error {
	p, err := s.startProcess(c.Name, c.binary, c.args, c.env)
	if err != nil {
		return err
	}
	c.proc = p
	return nil
}

func (s *Sandbox) startComponent(ctx context.Context, c *Component) error {
	if err := s.launch(c); err != nil {
		return err
	}
	return s.waitReady(ctx, c, 90*time.Second)
}

// waitReady polls c's readiness check; it fails at once, with the end of the log, if c exits.
func (s *Sandbox) waitReady(ctx context.Context, c *Component, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if c.proc.exited() {
			return false, s.exitError(c)
		}
		last = probeReady(ctx, c)
		return last == nil, nil
	})
	if wait.Interrupted(err) && !errors.Is(context.Cause(ctx), context.Canceled) {
		return fmt.Errorf("%s did not become ready within %s (%w); see %s", c.Name, timeout, last, c.LogFile)
	}
	return err
}

// probeReady runs c's readiness check once, giving it at most two seconds.
func probeReady(ctx context.Context, c *Component) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.ready(ctx)
}

func (s *Sandbox) exitError(c *Component) error {
	msg := fmt.Sprintf("%s exited (%v); last lines of %s:", c.Name, c.proc.err, c.LogFile)
	for _, l := range Tail(c.LogFile, 15) {
		msg += "\n    " + l
	}
	return errors.New(msg)
}

// Wait blocks until ctx is done (nil) or a child exits (an error naming it and showing its log).
func (s *Sandbox) Wait(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(context.Context) (bool, error) {
		return false, s.firstExit()
	})
	if wait.Interrupted(err) {
		return nil
	}
	return err
}

// firstExit is the exit error of the first child found to have exited, or nil.
func (s *Sandbox) firstExit() error {
	for _, c := range s.Components {
		if c.proc != nil && c.proc.exited() {
			return s.exitError(c)
		}
	}
	return nil
}

// Stop stops every child, managers first, and removes the pid files.
func (s *Sandbox) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop(15 * time.Second)
	}
	s.procs = nil
	pidFile := filepath.Join(s.cfg.StateDir, "pids", supervisorName+".pid")
	if livePid(pidFile) == os.Getpid() {
		_ = os.Remove(pidFile)
	}
}

func (s *Sandbox) apiserverReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(s.RESTConfig)
	if err != nil {
		return err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(body)))
	}
	return nil
}

// httpsOK is httpOK for a server whose certificate the sandbox CA signed.
func (s *Sandbox) httpsOK(ctx context.Context, url string) error {
	return getOK(ctx, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pki.certPool(), MinVersion: tls.VersionTLS12}}}, url)
}

func httpOK(ctx context.Context, url string) error { return getOK(ctx, http.DefaultClient, url) }

func getOK(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// Alive reports whether pid is a running process (for checks that nothing is left behind).
func Alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }
