package e2e

import (
	"context"
	"os"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// StartSandbox starts the management plane an e2e suite runs on, fresh in stateDir: ports from
// portBase, the simulator with fast timing (E2E_SIM_TIMING overrides) and its elastic IPs from
// publicIPv4 (workload clusters answer on them, so sandboxes running at once, a `make sandbox`
// or the other suite, need different ones), and quicker requeues than the manager's defaults,
// which keep the suites short and change no behaviour. Every component logs into stateDir. The
// caller stops it. Each tweak may change the configuration before the start.
func StartSandbox(ctx context.Context, root, stateDir string, portBase int, publicIPv4 string, logf func(string, ...any),
	tweaks ...func(*sandbox.Config),
) (*sandbox.Sandbox, error) {
	cfg := sandbox.DefaultConfig(root)
	cfg.StateDir = stateDir
	// A fresh management plane every run: no state from an earlier run leaks into this one.
	if err := os.RemoveAll(cfg.StateDir); err != nil {
		return nil, err
	}
	cfg.PortBase = portBase
	cfg.SimTiming = sandbox.EnvOr("E2E_SIM_TIMING", "fast")
	cfg.SimPublicIPv4 = publicIPv4
	if v := os.Getenv("SANDBOX_PROVIDER_COMPONENTS"); v != "" {
		cfg.ProviderComponents = v
	}
	cfg.ExtraManagerArgs = ManagerArgs()
	cfg.Log = logf
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	sb, err := sandbox.New(cfg)
	if err != nil {
		return nil, err
	}
	return sb, sb.Start(ctx)
}

// ManagerArgs are the flags the e2e suites give this provider's manager besides the sandbox's.
// The simulator lists a device the moment it creates it, so the wait after a create that got no
// answer (2m against Packet, whose lists may lag) can be short here. At 2m the faults spec, whose
// injected 503s refuse about one create in ten, gives each refusal two minutes of its five: a
// machine refused twice in a row would need over four before provisioning.
func ManagerArgs() []string {
	return []string{"--sync-period=1m", "--device-create-confirm-window=20s"}
}

// SimClientFor is a client of the sandbox's simulator, in its seeded project.
func SimClientFor(sb *sandbox.Sandbox) *SimClient {
	return &SimClient{BaseURL: sb.SimURL, Token: sandbox.SimToken, ProjectID: sandbox.SimProjectID}
}
