// Command scale measures the provider at scale and under chaos, against a real kube-apiserver,
// the Packet API simulator over loopback HTTP, and the provider's manager as its own process.
//
//	go run ./test/scale bench --machines 10,100,1000 --provisioning 60s --rate 10
//	go run ./test/scale soak  --machines 50 --chaos 5m
//	go run ./test/scale shards --machines 2000 --shards 2
//
// bench prints a table (wall times, Packet API calls and reconciles per machine, the delay from
// device active to machine provisioned, 429s, manager peak RSS and CPU). soak exits non-zero on
// any violation, and so does shards (one manager per --watch-filter shard; a machine reconciled
// by two, or a call for another shard's machine). Both need KUBEBUILDER_ASSETS and a manager binary (`make build`); the Makefile
// targets bench-scale, soak and soak-ci set them up.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

func main() {
	if len(os.Args) < 2 || !slices.Contains([]string{"bench", "soak", "secrets", "shards", "shutdown"}, os.Args[1]) {
		fmt.Fprintln(os.Stderr, "usage: scale bench|soak|secrets|shards|shutdown [flags]; see -h")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	machines := fs.String("machines", map[string]string{"bench": "10,100,1000", "soak": "50", "secrets": "3", "shards": "2000", "shutdown": "20"}[mode],
		"machine counts (comma-separated for bench; for shards, split evenly between them)")
	provisioning := fs.Duration("provisioning", 60*time.Second, "device provisioning time on the simulator")
	rate := fs.Float64("rate", 10, "simulator rate limit, requests per second per API token")
	chaos := fs.Duration("chaos", 5*time.Minute, "soak: how long faults and manager kills go on")
	managerBin := fs.String("manager", "bin/manager", "the provider's manager binary")
	managerFlags := fs.String("manager-flags", "", "extra flags for every manager, space-separated (e.g. -v=5)")
	workDir := fs.String("work-dir", "", "where logs and the kubeconfig go (default: a new temp folder)")
	secrets := fs.Int("secrets", 5000, "secrets: how many unrelated Secrets to create")
	secretSize := fs.Int("secret-size", 100<<10, "secrets: the size of each, in bytes")
	replicas := fs.Int("replicas", 1, "soak: manager replicas; above one they run with leader election and the leader is the one killed")
	controllerManager := fs.String("kube-controller-manager", "", "soak: a kube-controller-manager binary; with it, a second cluster's namespace is deleted mid-chaos")
	shards := fs.Int("shards", 2, "shards: how many managers share the clusters")
	clusters := fs.Int("clusters", 1, "bench: clusters the machines are split between, each in a Packet project of its own with its own API key (so its own request budget), all on one manager")
	_ = fs.Parse(os.Args[2:])
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	opts := harnessOptions{provisioning: *provisioning, ratePerSec: *rate, apiKey: randomToken(), managerBin: *managerBin,
		workDir: *workDir, managerFlags: strings.Fields(*managerFlags)}
	if mode == "soak" {
		opts.controllerManager, opts.replicas = *controllerManager, *replicas
	}
	if mode == "bench" && *clusters > 1 {
		opts.projects = newProjects("fleet", *clusters)
	}
	if mode == "shards" {
		// controller-runtime logs each reconcile at -v=5: how the run tells who reconciled what.
		opts.shards, opts.managerFlags = newShards(*shards), append([]string{"-v=5"}, opts.managerFlags...)
	}
	err := run(ctx, mode, *machines, *chaos, opts, secretsFlags{count: *secrets, size: *secretSize})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode, machines string, chaos time.Duration, opts harnessOptions, secretsOpts secretsFlags) error {
	workDir, err := prepareWorkDir(opts.workDir, mode)
	if err != nil {
		return err
	}
	env, err := helpers.Start(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("kube-apiserver %s, %s; logs in %s\n", env.ServerVersion, env.EtcdVersion, workDir)

	counts, err := parseCounts(machines)
	if err != nil {
		return err
	}
	opts.workDir = workDir
	switch mode {
	case "secrets":
		return runSecretsMode(ctx, env, opts, counts[0], secretsOpts)
	case "soak":
		return runSoakMode(ctx, env, opts, counts[0], chaos)
	case "shards":
		return runShardsMode(ctx, env, opts, counts[0])
	case "shutdown":
		return runShutdownMode(ctx, env, opts, counts[0])
	}
	return runBenchMode(ctx, env, opts, counts)
}

// prepareWorkDir creates workDir, or a new temporary folder for mode when it is empty.
func prepareWorkDir(workDir, mode string) (string, error) {
	if workDir == "" {
		var err error
		if workDir, err = os.MkdirTemp("", "capp-"+mode+"-"); err != nil {
			return "", err
		}
	}
	return workDir, os.MkdirAll(workDir, 0o755)
}

// parseCounts reads the comma-separated machine counts of -machines.
func parseCounts(machines string) ([]int, error) {
	var counts []int
	for _, s := range strings.Split(machines, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad machine count %q", s)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

func runSecretsMode(ctx context.Context, env *helpers.TestEnvironment, opts harnessOptions, n int, secretsOpts secretsFlags) error {
	h, err := newHarness(ctx, env, opts)
	if err != nil {
		return err
	}
	defer h.close()
	res, err := runSecrets(ctx, h, n, secretsOpts.count, secretsOpts.size)
	if err != nil {
		return err
	}
	res.print(os.Stdout, opts.managerBin)
	return nil
}

func runShutdownMode(ctx context.Context, env *helpers.TestEnvironment, opts harnessOptions, n int) error {
	h, err := newHarness(ctx, env, opts)
	if err != nil {
		return err
	}
	defer h.close()
	res, err := runShutdown(ctx, h, n, 25*time.Second)
	if err != nil {
		return err
	}
	res.print(os.Stdout, opts.managerBin)
	return nil
}

func runSoakMode(ctx context.Context, env *helpers.TestEnvironment, opts harnessOptions, n int, chaos time.Duration) error {
	h, err := newHarness(ctx, env, opts)
	if err != nil {
		return err
	}
	defer h.close()
	res, err := runSoak(ctx, h, n, chaos)
	if err != nil {
		return err
	}
	res.print(os.Stdout, n, chaos)
	if len(res.violations)+len(res.leaks)+res.duplicates > 0 {
		return fmt.Errorf("soak failed (manager logs in %s)", opts.workDir)
	}
	fmt.Println("soak passed")
	return nil
}

func runShardsMode(ctx context.Context, env *helpers.TestEnvironment, opts harnessOptions, n int) error {
	h, err := newHarness(ctx, env, opts)
	if err != nil {
		return err
	}
	defer h.close()
	res, err := runShards(ctx, h, n/len(opts.shards))
	if err != nil {
		return err
	}
	res.print(os.Stdout)
	if len(res.violations) > 0 {
		return fmt.Errorf("shards failed (manager logs in %s)", opts.workDir)
	}
	fmt.Println("shards passed")
	return nil
}

// runBenchMode runs the benchmark once per machine count, each in its own subfolder of the
// work folder, printing each run's row as it ends and the whole table at the end.
func runBenchMode(ctx context.Context, env *helpers.TestEnvironment, opts harnessOptions, counts []int) error {
	workDir := opts.workDir
	var results []*benchResult
	for _, n := range counts {
		opts.workDir = fmt.Sprintf("%s/n%d", workDir, n)
		if err := os.MkdirAll(opts.workDir, 0o755); err != nil {
			return err
		}
		h, err := newHarness(ctx, env, opts)
		if err != nil {
			return err
		}
		fmt.Printf("N=%d ...\n", n)
		res, err := runBench(ctx, h, n)
		h.close()
		if err != nil {
			return fmt.Errorf("run with %d machines: %w (logs in %s)", n, err, opts.workDir)
		}
		results = append(results, res)
		printTable(os.Stdout, opts.provisioning, opts.ratePerSec, results[len(results)-1:])
	}
	fmt.Println("\nAll runs:")
	printTable(os.Stdout, opts.provisioning, opts.ratePerSec, results)
	return nil
}

// secretsFlags are the secrets mode's flags.
type secretsFlags struct{ count, size int }

// randomToken is the API key of a run: random, so a leak check can search the logs for it.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "capp-scale-" + hex.EncodeToString(b)
}
