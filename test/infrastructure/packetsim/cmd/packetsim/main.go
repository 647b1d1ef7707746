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
)

func main() {
	if err := run(); err != nil {
		log.Fatalf("packetsim: %v", err)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:4000", "address to listen on")
	tokens := flag.String("tokens", packetsim.DefaultToken,
		"comma-separated API tokens; token=projectA|projectB limits a token to those projects")
	seedFile := flag.String("seed", "", "seed YAML file, or \"empty\" for a new account without projects (default: the built-in seed, see test/infrastructure/packetsim/seed/default.yaml)")
	stateFile := flag.String("state-file", "", "file the state is kept in across restarts (written atomically)")
	timing := flag.String("timing", "fast", "timing profile: realistic, fast, sandbox (active in ~20s) or instant")
	perPage := flag.Int("per-page", 10, "default per_page of paginated lists")
	faultsFile := flag.String("faults", "", "fault profile YAML/JSON file: {faults: [{kind: ..., ...}]}")
	rateLimit := flag.String("rate-limit", "", "token bucket per API token as rate/s[:burst], e.g. 10:20 (default off)")
	randomSeed := flag.Int64("random-seed", 1, "seed of the RNG behind probabilistic faults")
	publicPool := flag.String("public-ipv4-pool", "", "the prefix public IPv4 addresses come from (default: the seed's, 127.64.0.0/16)")
	boot := flag.Bool("boot", false, "boot active devices' user-data into emulated workload clusters (package bootemu)")
	joinTimeout := flag.Duration("boot-join-timeout", 5*time.Minute, "how long an emulated kubeadm join waits for its control plane")
	runScripts := flag.String("boot-run-scripts", "", "comma-separated paths of scripts a device's user-data writes that the emulated host runs with bash before kubeadm (e.g. /wait-signal.sh of Cluster API's KCP remediation spec); others are never run")
	lbaasTokenTTL := flag.Duration("lbaas-token-ttl", time.Hour, "lifetime of the load-balancer service's access tokens (/iam/api-keys/exchange)")
	flag.Parse()

	opts := packetsim.Options{PerPage: *perPage, StateFile: *stateFile, RandomSeed: *randomSeed, Log: os.Stderr,
		Tokens: parseTokens(*tokens), LBaaSTokenTTL: *lbaasTokenTTL}
	t, err := packetsim.TimingProfile(*timing)
	if err != nil {
		return err
	}
	opts.Timing = &t
	switch *seedFile {
	case "": // the built-in seed
	case "empty":
		opts.Seed = packetsim.EmptySeed()
	default:
		if opts.Seed, err = packetsim.LoadSeed(*seedFile); err != nil {
			return err
		}
	}
	if *publicPool != "" {
		if opts.Seed == nil {
			opts.Seed = packetsim.DefaultSeed()
		}
		opts.Seed.IPPools.PublicIPv4 = *publicPool
	}
	if *rateLimit != "" {
		if _, err := fmt.Sscanf(strings.Replace(*rateLimit, ":", " ", 1), "%g %d", &opts.RateLimit.PerSecond, &opts.RateLimit.Burst); err != nil &&
			opts.RateLimit.PerSecond == 0 {
			return fmt.Errorf("--rate-limit %q: want rate[:burst]", *rateLimit)
		}
	}
	sim, err := packetsim.New(opts)
	if err != nil {
		return err
	}
	if *faultsFile != "" {
		data, err := os.ReadFile(*faultsFile)
		if err != nil {
			return err
		}
		var profile packetsim.FaultProfile
		if err := yaml.Unmarshal(data, &profile); err != nil {
			return fmt.Errorf("--faults %s: %w", *faultsFile, err)
		}
		for _, f := range profile.Faults {
			sim.InjectFault(f)
		}
	}

	srv := &http.Server{Addr: *listen, Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("packetsim: serving http://%s/metal/v1/ (timing %s, per_page %d), the load-balancer service at http://%s/lbaas and its token exchange at http://%s/iam/api-keys/exchange",
		*listen, *timing, *perPage, *listen, *listen)
	ctx, stopBoot := context.WithCancel(context.Background())
	defer stopBoot()
	if *boot {
		emu, err := bootemu.New(sim, bootemu.Options{MetalURL: "http://" + *listen + "/metal/v1/", Token: firstToken(opts.Tokens),
			JoinTimeout: *joinTimeout, RebootTime: t.PowerOn, RunScripts: splitList(*runScripts), Log: klog.NewKlogr().WithName("bootemu")})
		if err != nil {
			return err
		}
		go func() { _ = emu.Run(ctx) }()
		log.Printf("packetsim: boot emulation on: active devices boot their user-data")
	}

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
	stopBoot()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return sim.Close() // writes the state file
}

// firstToken is a token the emulated CPEM can use: the first, in order, of those not limited to
// some projects.
func firstToken(tokens map[string][]string) string {
	best := ""
	for t, projects := range tokens {
		if projects == nil && (best == "" || t < best) {
			best = t
		}
	}
	return best
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
