// Command sandbox runs a local Cluster API management plane for this provider on loopback:
// etcd, kube-apiserver, the Packet API simulator, the Cluster API core, kubeadm bootstrap and
// kubeadm control-plane managers and this provider's manager, installed with
// `clusterctl init --infrastructure packet` from local repositories. `make sandbox` builds
// everything it needs and runs `sandbox up`.
//
//	sandbox up      start and supervise until Ctrl-C (the default)
//	sandbox down    stop a sandbox started from the same state folder
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		// One clear line (or a few, with a log excerpt), never a stack trace.
		fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg := sandbox.DefaultConfig(root)
	fs, kubectl := flags(cmd, &cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	switch cmd {
	case "up":
		return up(cfg, *kubectl)
	case "down":
		return down(cfg.StateDir)
	}
	return fmt.Errorf("unknown command %q (want up or down)", cmd)
}

// flags binds the command line to cfg; kubectl is the binary the printed next commands use.
func flags(cmd string, cfg *sandbox.Config) (fs *flag.FlagSet, kubectl *string) {
	fs = flag.NewFlagSet("sandbox "+cmd, flag.ContinueOnError)
	fs.StringVar(&cfg.StateDir, "state-dir", cfg.StateDir, "folder for the sandbox's state and logs (reused across restarts)")
	fs.IntVar(&cfg.PortBase, "port-base", cfg.PortBase, "first of the loopback ports the sandbox uses (kube-apiserver is port-base+43)")
	fs.StringVar(&cfg.SimTiming, "timing", cfg.SimTiming, "simulator timing profile: sandbox (devices active in ~20s), fast, realistic or instant")
	fs.StringVar(&cfg.SimFaults, "faults", "", "simulator fault profile file (see cmd/packetsim)")
	fs.StringVar(&cfg.SimPublicIPv4, "public-ipv4-pool", "",
		"loopback prefix of the simulator's elastic IPs (default 127.64.0.0/16); sandboxes running at once need different ones")
	fs.StringVar(&cfg.Etcd, "etcd", cfg.Etcd, "etcd binary")
	fs.StringVar(&cfg.KubeAPIServer, "kube-apiserver", cfg.KubeAPIServer, "kube-apiserver binary")
	fs.StringVar(&cfg.Packetsim, "packetsim", cfg.Packetsim, "Packet API simulator binary")
	fs.StringVar(&cfg.Manager, "manager", cfg.Manager, "this provider's manager binary")
	fs.StringVar(&cfg.CoreManager, "capi-core-manager", cfg.CoreManager, "Cluster API core manager binary")
	fs.StringVar(&cfg.BootstrapManager, "capi-bootstrap-manager", cfg.BootstrapManager, "kubeadm bootstrap manager binary")
	fs.StringVar(&cfg.ControlPlaneMgr, "capi-control-plane-manager", cfg.ControlPlaneMgr, "kubeadm control-plane manager binary")
	fs.StringVar(&cfg.Clusterctl, "clusterctl", cfg.Clusterctl, "clusterctl binary")
	fs.StringVar(&cfg.CAPIRepository, "capi-repository", cfg.CAPIRepository, "local clusterctl repository with Cluster API's components")
	fs.StringVar(&cfg.CAPIVersion, "capi-version", cfg.CAPIVersion, "Cluster API version in that repository")
	fs.StringVar(&cfg.ProviderComponents, "provider-components", cfg.ProviderComponents,
		"this provider's infrastructure-components.yaml in a clusterctl repository (make clusterctl-repo)")
	fs.StringVar(&cfg.CertManagerCRDs, "cert-manager-crds", cfg.CertManagerCRDs, "folder with cert-manager's CRDs")
	fs.BoolVar(&cfg.ExternalManager, "external-manager", false,
		"do not start this provider's manager; write <state-dir>/bin/capp-controller-manager, which starts it as the sandbox would (the Tilt loop runs it)")
	kubectl = fs.String("kubectl", "", "kubectl binary shown in the next commands (default: kubectl from PATH)")
	return fs, kubectl
}

// down stops the sandbox running from stateDir, if any, and says what it stopped.
func down(stateDir string) error {
	stopped, err := sandbox.Down(stateDir)
	if err != nil {
		return err
	}
	if len(stopped) == 0 {
		fmt.Println("No sandbox is running from", stateDir)
		return nil
	}
	fmt.Println("Stopped:", strings.Join(stopped, ", "))
	return nil
}

func up(cfg sandbox.Config, kubectl string) error {
	cfg.Log = func(format string, args ...any) { fmt.Printf("• "+format+"\n", args...) }
	sb, err := sandbox.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("• Starting the sandbox in %s\n", cfg.StateDir)
	if err := sb.Start(ctx); err != nil {
		if ctx.Err() != nil {
			fmt.Println("• Interrupted; everything started has been stopped.")
			return nil
		}
		return err
	}
	env, err := writeEnv(sb, kubectl)
	if err != nil {
		sb.Stop()
		return err
	}
	printReady(sb, env)
	werr := sb.Wait(ctx)
	fmt.Println("• Stopping the sandbox...")
	sb.Stop()
	if werr != nil {
		return werr
	}
	fmt.Println("• Stopped; state kept in", cfg.StateDir, "for the next `make sandbox`.")
	return nil
}

// writeEnv writes <state>/env, which puts a clusterctl that uses the sandbox's configuration and
// a kubectl on PATH and exports KUBECONFIG.
func writeEnv(sb *sandbox.Sandbox, kubectl string) (string, error) {
	cfg := sb.Config()
	binDir := filepath.Join(cfg.StateDir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	wrapper := fmt.Sprintf("#!/bin/sh\n# clusterctl with the sandbox's configuration (local repositories, simulator variables).\n"+
		"export CLUSTERCTL_DISABLE_VERSIONCHECK=true\nexec %q --config %q \"$@\"\n", cfg.Clusterctl, sb.ClusterctlConfig)
	if err := os.WriteFile(filepath.Join(binDir, "clusterctl"), []byte(wrapper), 0o755); err != nil {
		return "", err
	}
	if kubectl == "" {
		kubectl, _ = exec.LookPath("kubectl")
	}
	_ = os.Remove(filepath.Join(binDir, "kubectl"))
	if kubectl != "" {
		if abs, err := filepath.Abs(kubectl); err == nil {
			if err := os.Symlink(abs, filepath.Join(binDir, "kubectl")); err != nil {
				return "", err
			}
		}
	}
	envFile := filepath.Join(cfg.StateDir, "env")
	content := fmt.Sprintf("# source this file: clusterctl and kubectl for the sandbox\nexport KUBECONFIG=%q\nexport PATH=%q:\"$PATH\"\n",
		sb.Kubeconfig, binDir)
	return envFile, os.WriteFile(envFile, []byte(content), 0o644)
}

func printReady(sb *sandbox.Sandbox, envFile string) {
	cfg := sb.Config()
	rel := func(p string) string {
		if r, err := filepath.Rel(cfg.RepoRoot, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	fmt.Printf("\nSandbox ready in %.1fs. Running (loopback only):\n\n", sb.StartupTime.Seconds())
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, c := range sb.Components {
		if c.Launcher != "" {
			fmt.Fprintf(tw, "  %s\tnot started\t%s\tstart it with %s\n", c.Name, c.Endpoint, rel(c.Launcher))
			continue
		}
		fmt.Fprintf(tw, "  %s\tpid %d\t%s\t%s\n", c.Name, c.Pid(), c.Endpoint, rel(c.LogFile))
	}
	_ = tw.Flush()
	fmt.Printf(`
Installed with: clusterctl init --infrastructure packet   (log: %s)
Packet API simulator: %s/metal/v1/  token %s, project %s
Kubeconfig: %s

Next, in another shell (from the repository root):

  source %s
  clusterctl generate cluster demo --from templates/cluster-template.yaml --control-plane-machine-count 1 --worker-machine-count 2 | kubectl apply -f -
  clusterctl describe cluster demo
  kubectl get cluster,packetcluster,machines,packetmachines
  curl -s -H 'X-Auth-Token: %s' %s/metal/v1/projects/%s/devices | head -c 600
  kubectl delete cluster demo

Ctrl-C (or make sandbox-down) stops everything; the state stays in %s for the next start.
`, rel(filepath.Join(cfg.StateDir, "logs", "clusterctl-init.log")), sb.SimURL, sandbox.SimToken, sandbox.SimProjectID,
		rel(sb.Kubeconfig), rel(envFile), sandbox.SimToken, sb.SimURL, sandbox.SimProjectID, rel(cfg.StateDir))
	if _, err := os.Lstat(filepath.Join(cfg.StateDir, "bin", "kubectl")); err != nil {
		fmt.Println("(No kubectl was found: `make kubectl` builds one, then `make sandbox` links it into the env.)")
	}
}
