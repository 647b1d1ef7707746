package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// harness is one measured environment: a real kube-apiserver and etcd (envtest), the Packet API
// simulator over loopback HTTP, and the provider's manager as a separate process, so that its
// memory and CPU are its own.
type harness struct {
	opts       harnessOptions
	env        *helpers.TestEnvironment
	sim        *packetsim.Server
	simServer  *httptest.Server
	apiKey     string
	workDir    string
	kubeconfig string

	managerBin string
	// managers are the running manager processes: one, or opts.replicas with leader election.
	managers    []*managerProc
	managerLogs []string
	// controllerManager runs kube-controller-manager, when the options name one.
	controllerManager *exec.Cmd
	// usage is the resource usage of every manager process that has exited.
	cpu     time.Duration
	peakRSS int64
}

type harnessOptions struct {
	provisioning time.Duration
	ratePerSec   float64
	apiKey       string
	managerBin   string
	workDir      string
	// controllerManager, when set, is a kube-controller-manager binary run with its namespace
	// and garbage-collector controllers, so that a namespace can be deleted.
	controllerManager string
	// replicas above one run that many managers with leader election (default flags).
	replicas int
	// managerFlags are passed to every manager after the harness's own (e.g. -v=5).
	managerFlags []string
	// shards, when set, replace the one manager: one manager per shard, started with
	// --watch-filter=<shard> and leader election, whose own API key Packet accepts only in the
	// shard's project (see shards.go).
	shards []shard
	// projects, when set, are Packet projects with a key of their own each, for one manager's
	// clusters (bench --clusters).
	projects []shard
}

func newHarness(ctx context.Context, env *helpers.TestEnvironment, o harnessOptions) (*harness, error) {
	seed := packetsim.DefaultSeed()
	for i := range seed.Plans {
		for metro := range seed.Plans[i].Capacity {
			seed.Plans[i].Capacity[metro] = 100000 // capacity is not what is measured
		}
	}
	tokens := map[string][]string{o.apiKey: nil}
	for _, sh := range slices.Concat(o.shards, o.projects) {
		seed.Projects = append(seed.Projects, packetsim.SeedProject{ID: sh.projectID, Name: sh.name})
		tokens[sh.apiKey] = []string{sh.projectID}
	}
	timing := packetsim.TimingFast
	timing.Queued, timing.Provisioning, timing.Deprovisioning = 5*time.Second, o.provisioning-5*time.Second, benchDeprovisioning
	sim, err := packetsim.New(packetsim.Options{
		Seed:                seed,
		Tokens:              tokens,
		Timing:              &timing,
		RateLimit:           packetsim.RateLimit{PerSecond: o.ratePerSec, Burst: int(o.ratePerSec)},
		RandomSeed:          1,
		MaxRecordedRequests: 1 << 20,
	})
	if err != nil {
		return nil, err
	}
	h := &harness{opts: o, env: env, sim: sim, simServer: httptest.NewServer(sim.Handler()), apiKey: o.apiKey,
		workDir: o.workDir, managerBin: o.managerBin}
	h.kubeconfig = filepath.Join(o.workDir, "kubeconfig")
	if err := os.WriteFile(h.kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, err
	}
	if o.controllerManager != "" {
		if err := h.startControllerManager(ctx, o.controllerManager); err != nil {
			return nil, err
		}
	}
	for _, sh := range o.shards {
		if err := h.startManagerAs(ctx, sh.apiKey, "--watch-filter="+sh.name, "--leader-elect", "--leader-election-namespace=default"); err != nil {
			return nil, err
		}
	}
	if len(o.shards) > 0 {
		return h, nil
	}
	for range max(o.replicas, 1) {
		if err := h.startManager(ctx); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// startControllerManager runs kube-controller-manager's namespace and garbage-collector
// controllers against the envtest kube-apiserver (which has none), with no serving port.
func (h *harness) startControllerManager(ctx context.Context, bin string) error {
	logFile, err := os.Create(filepath.Join(h.workDir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+h.kubeconfig, "--controllers=namespace,garbagecollector",
		"--leader-elect=false", "--use-service-account-credentials=false", "--secure-port=0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	h.controllerManager = cmd
	go func() { _ = cmd.Wait(); _ = logFile.Close() }()
	return nil
}

// startManager starts one more manager process against the simulator.
func (h *harness) startManager(ctx context.Context) error {
	var leaderElection []string
	if h.opts.replicas > 1 {
		leaderElection = []string{"--leader-elect", "--leader-election-namespace=default"}
	}
	return h.startManagerAs(ctx, h.apiKey, leaderElection...)
}

// startManagerAs starts a manager process whose own Packet API key is apiKey, with extra flags
// before the run's --manager-flags.
func (h *harness) startManagerAs(ctx context.Context, apiKey string, extra ...string) error {
	metricsPort, err := freePort()
	if err != nil {
		return err
	}
	healthPort, err := freePort()
	if err != nil {
		return err
	}
	m := &managerProc{metricsAddr: "127.0.0.1:" + strconv.Itoa(metricsPort), exited: make(chan struct{})}
	logPath := filepath.Join(h.workDir, fmt.Sprintf("manager-%d.log", len(h.managerLogs)))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + h.kubeconfig,
		"--diagnostics-address=" + m.metricsAddr, "--insecure-diagnostics",
		"--health-addr=127.0.0.1:" + strconv.Itoa(healthPort),
		// The manager keeps to the key's limit, as an operator sets it: a budget above the
		// simulator's rate would be spent on 429s.
		"--packet-api-qps=" + strconv.FormatFloat(h.opts.ratePerSec, 'f', -1, 64),
		"--packet-api-burst=" + strconv.Itoa(max(1, int(h.opts.ratePerSec))),
		"--packetmachine-concurrency=20",
	}
	args = append(append(args, extra...), h.opts.managerFlags...)
	m.cmd = exec.CommandContext(ctx, h.managerBin, args...)
	m.cmd.Env = append(os.Environ(),
		"PACKET_API_URL="+h.simServer.URL+"/metal/v1/",
		"LBAAS_API_URL="+h.simServer.URL+"/lbaas/",
		"METAL_TOKEN_EXCHANGE_URL="+h.simServer.URL+"/iam/api-keys/exchange",
		"PACKET_API_KEY="+apiKey,
		"ENABLE_WEBHOOKS=false",
	)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", h.managerBin, err)
	}
	h.managers, h.managerLogs = append(h.managers, m), append(h.managerLogs, logPath)
	go func() { _ = m.cmd.Wait(); _ = logFile.Close(); close(m.exited) }()
	return waitHTTP(ctx, "http://127.0.0.1:"+strconv.Itoa(healthPort)+"/readyz", time.Minute)
}

// stopManager ends every manager with sig (SIGTERM to stop, SIGKILL to crash them) and records
// the resource usage of the processes.
func (h *harness) stopManager(sig syscall.Signal) {
	for _, m := range slices.Clone(h.managers) {
		h.stop(m, sig)
	}
}

// stop ends one manager with sig and records its resource usage.
func (h *harness) stop(m *managerProc, sig syscall.Signal) {
	cpu, rss := m.stop(sig)
	h.cpu += cpu
	h.peakRSS = max(h.peakRSS, rss)
	h.managers = slices.DeleteFunc(h.managers, func(other *managerProc) bool { return other == m })
}

// metricsAddr is where the first running manager serves its metrics.
func (h *harness) metricsAddr() string {
	if len(h.managers) == 0 {
		return ""
	}
	return h.managers[0].metricsAddr
}

func (h *harness) close() {
	h.stopManager(syscall.SIGTERM)
	if h.controllerManager != nil && h.controllerManager.Process != nil {
		_ = h.controllerManager.Process.Signal(syscall.SIGTERM)
	}
	h.simServer.Close()
	_ = h.sim.Close()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP waits until url answers 200 OK.
func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return getOK(ctx, url), nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return errors.New(url + " did not become ready")
	}
	return err
}

// getOK reports whether a GET of url answers 200 OK.
func getOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// benchDeprovisioning is how long the simulator takes to delete a device in the bench.
const benchDeprovisioning = 10 * time.Second

// provisionFloor is the least time n machines take to be provisioned: their creates through
// the Packet request budget, then one provisioning time.
func (h *harness) provisionFloor(n int) time.Duration {
	return budgetTime(n, h.opts.ratePerSec) + h.opts.provisioning
}

// deleteFloor is the least time n machines take to be deleted: a delete per machine through
// the budget, then one deprovisioning time (a list shows them gone).
func (h *harness) deleteFloor(n int) time.Duration {
	return budgetTime(n, h.opts.ratePerSec) + benchDeprovisioning
}

// budgetTime is how long calls requests take at rate requests a second.
func budgetTime(calls int, rate float64) time.Duration {
	return time.Duration(float64(calls) / rate * float64(time.Second))
}
