// Command packetsim serves the Packet / Equinix Metal API simulator.
//
//	packetsim --listen 127.0.0.1:4000 --tokens sim-token --timing fast
//
// Point packngo at http://127.0.0.1:4000/metal/v1/ (the trailing slash
// matters). The load-balancer service is under /lbaas (its base URL:
// http://127.0.0.1:4000/lbaas) and its token exchange at
// http://127.0.0.1:4000/iam/api-keys/exchange. The control API is under
// /_sim/ and metrics under /metrics.
//
// With --boot, devices also boot their user-data (package bootemu): kubeadm init and join
// bring up emulated workload clusters on the control-plane endpoints.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/bootemu"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim/metalspec"
)

func main() {
	if err := run(); err != nil {
		log.Fatalf("packetsim: %v", err)
	}
}

// flags are the command line.
type flags struct {
	listen, tokens, seedFile, stateFile, timing, faultsFile, rateLimit, publicPool, runScripts string
	metalSpec                                                                                  string
	metalSpecStrict                                                                            bool
	perPage                                                                                    int
	randomSeed                                                                                 int64
	boot                                                                                       bool
	joinTimeout, lbaasTokenTTL                                                                 time.Duration
}

func parseFlags() *flags {
	f := &flags{}
	flag.StringVar(&f.listen, "listen", "127.0.0.1:4000", "address to listen on")
	flag.StringVar(&f.tokens, "tokens", packetsim.DefaultToken,
		"comma-separated API tokens; token=projectA|projectB limits a token to those projects")
	flag.StringVar(&f.seedFile, "seed", "", "seed YAML file, or \"empty\" for a new account without projects (default: the built-in seed, see test/infrastructure/packetsim/seed/default.yaml)")
	flag.StringVar(&f.stateFile, "state-file", "", "file the state is kept in across restarts (written atomically)")
	flag.StringVar(&f.timing, "timing", "fast", "timing profile: realistic, fast, sandbox (active in ~20s) or instant")
	flag.IntVar(&f.perPage, "per-page", 10, "default per_page of paginated lists")
	flag.StringVar(&f.faultsFile, "faults", "", "fault profile YAML/JSON file: {faults: [{kind: ..., ...}]}")
	flag.StringVar(&f.rateLimit, "rate-limit", "", "token bucket per API token as rate/s[:burst], e.g. 10:20 (default off)")
	flag.Int64Var(&f.randomSeed, "random-seed", 1, "seed of the RNG behind probabilistic faults")
	flag.StringVar(&f.publicPool, "public-ipv4-pool", "", "the prefix public IPv4 addresses come from (default: the seed's, 127.64.0.0/16)")
	flag.BoolVar(&f.boot, "boot", false, "boot active devices' user-data into emulated workload clusters (package bootemu)")
	flag.DurationVar(&f.joinTimeout, "boot-join-timeout", 5*time.Minute, "how long an emulated kubeadm join waits for its control plane")
	flag.StringVar(&f.runScripts, "boot-run-scripts", "", "comma-separated paths of scripts a device's user-data writes that the emulated host runs with bash before kubeadm (e.g. /wait-signal.sh of Cluster API's KCP remediation spec); others are never run")
	flag.DurationVar(&f.lbaasTokenTTL, "lbaas-token-ttl", time.Hour, "lifetime of the load-balancer service's access tokens (/iam/api-keys/exchange)")
	flag.StringVar(&f.metalSpec, "metal-spec", "auto", "the Metal API OpenAPI document every request and answer is checked against: auto (equinix-sdk-go's, from the Go module cache; needs the go command), off, or the path of its openapi3.yaml")
	flag.BoolVar(&f.metalSpecStrict, "metal-spec-strict", false, "exit with status 3 at stop if any answer was off the spec (GET /_sim/conformance lists them meanwhile)")
	flag.Parse()
	return f
}

func run() error {
	f := parseFlags()
	opts, err := simOptions(f)
	if err != nil {
		return err
	}
	sim, err := packetsim.New(opts)
	if err != nil {
		return err
	}
	if err := injectFaults(sim, f.faultsFile); err != nil {
		return err
	}

	srv := &http.Server{Addr: f.listen, Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("packetsim: serving http://%s/metal/v1/ (timing %s, per_page %d), the load-balancer service at http://%s/lbaas and its token exchange at http://%s/iam/api-keys/exchange",
		f.listen, f.timing, f.perPage, f.listen, f.listen)
	ctx, stopBoot := context.WithCancel(context.Background())
	defer stopBoot()
	if f.boot {
		if err := startBootEmulation(ctx, sim, f, opts); err != nil {
			return err
		}
	}

	if err := waitForStop(errc); err != nil {
		return err
	}
	stopBoot()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := sim.Close(); err != nil { // writes the state file
		return err
	}
	return conformanceAtStop(sim.Conformance(), f.metalSpecStrict)
}

// conformanceAtStop says what the spec check saw; strict, answers off the spec fail the process.
func conformanceAtStop(rep packetsim.ConformanceReport, strict bool) error {
	if !rep.Checked {
		return nil
	}
	log.Printf("packetsim: %s", rep.Summary())
	if err := rep.Err(); err != nil && strict {
		log.Printf("packetsim: %v", err)
		os.Exit(3)
	}
	return nil
}

// simOptions are the simulator's options from the command line.
func simOptions(f *flags) (packetsim.Options, error) {
	opts := packetsim.Options{PerPage: f.perPage, StateFile: f.stateFile, RandomSeed: f.randomSeed, Log: os.Stderr,
		Tokens: parseTokens(f.tokens), LBaaSTokenTTL: f.lbaasTokenTTL, SpecLog: os.Stderr}
	switch f.metalSpec {
	case "auto": // metalspec.Default
	case "off":
		opts.NoSpecCheck = true
	default:
		spec, err := metalspec.Load(f.metalSpec)
		if err != nil {
			return opts, err
		}
		opts.Spec = spec
	}
	t, err := packetsim.TimingProfile(f.timing)
	if err != nil {
		return opts, err
	}
	opts.Timing = &t
	switch f.seedFile {
	case "": // the built-in seed
	case "empty":
		opts.Seed = packetsim.EmptySeed()
	default:
		if opts.Seed, err = packetsim.LoadSeed(f.seedFile); err != nil {
			return opts, err
		}
	}
	if f.publicPool != "" {
		if opts.Seed == nil {
			opts.Seed = packetsim.DefaultSeed()
		}
		opts.Seed.IPPools.PublicIPv4 = f.publicPool
	}
	if f.rateLimit != "" {
		if _, err := fmt.Sscanf(strings.Replace(f.rateLimit, ":", " ", 1), "%g %d", &opts.RateLimit.PerSecond, &opts.RateLimit.Burst); err != nil &&
			opts.RateLimit.PerSecond == 0 {
			return opts, fmt.Errorf("--rate-limit %q: want rate[:burst]", f.rateLimit)
		}
	}
	return opts, nil
}

// injectFaults injects the faults of the profile file, if one is given.
func injectFaults(sim *packetsim.Server, file string) error {
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var profile packetsim.FaultProfile
	if err := yaml.Unmarshal(data, &profile); err != nil {
		return fmt.Errorf("--faults %s: %w", file, err)
	}
	for _, f := range profile.Faults {
		sim.InjectFault(f)
	}
	return nil
}

// startBootEmulation boots active devices' user-data until ctx ends.
func startBootEmulation(ctx context.Context, sim *packetsim.Server, f *flags, opts packetsim.Options) error {
	emu, err := bootemu.New(sim, bootemu.Options{MetalURL: "http://" + f.listen + "/metal/v1/",
		JoinTimeout: f.joinTimeout, RebootTime: opts.Timing.PowerOn, RunScripts: splitList(f.runScripts), Log: klog.NewKlogr().WithName("bootemu")})
	if err != nil {
		return err
	}
	go func() { _ = emu.Run(ctx) }()
	log.Printf("packetsim: boot emulation on: active devices boot their user-data")
	return nil
}

// waitForStop waits for SIGINT or SIGTERM (nil) or the server to fail (its error).
func waitForStop(errc <-chan error) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case sig := <-stop:
		log.Printf("packetsim: %s, shutting down", sig)
	}
	return nil
}

// parseTokens reads "a,b=p1|p2" into token → allowed projects (nil = all).
func parseTokens(spec string) map[string][]string {
	out := map[string][]string{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		token, projects, _ := strings.Cut(item, "=")
		if projects == "" {
			out[token] = nil
			continue
		}
		out[token] = strings.Split(projects, "|")
	}
	return out
}

// splitList splits a comma-separated flag value; empty means none.
func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}
