package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/janitor"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/version"
)

// runJanitorCommand is `manager janitor --project <id> [--delete]`: one sweep of the projects
// with PACKET_API_KEY against the management cluster of the kubeconfig, printed as a table. It
// returns the exit code: 0 when the sweep was complete, 1 otherwise.
func runJanitorCommand(args []string, stdout, stderr io.Writer) int {
	f, code := parseJanitorFlags(args, stderr)
	if f == nil {
		return code
	}
	ctrl.SetLogger(klog.Background())
	apiKey := os.Getenv("PACKET_API_KEY")
	if apiKey == "" {
		fmt.Fprintln(stderr, "janitor: PACKET_API_KEY is not set")
		return 2
	}
	if err := f.sweep(apiKey, stdout); err != nil {
		fmt.Fprintf(stderr, "janitor: %v\n", err)
		return 1
	}
	return 0
}

// janitorFlags are the janitor command's flags.
type janitorFlags struct {
	projects         []string
	del              bool
	grace            time.Duration
	apiURL, lbaasURL string
	tokenExchangeURL string
	timeout          time.Duration
}

// parseJanitorFlags returns the flags, or nil and the exit code when the command must stop
// (--help: 0, bad flags: 2).
func parseJanitorFlags(args []string, stderr io.Writer) (*janitorFlags, int) {
	fs := pflag.NewFlagSet("janitor", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	f := &janitorFlags{}
	fs.StringSliceVar(&f.projects, "project", nil, "Project ID to sweep (repeatable); required.")
	fs.BoolVar(&f.del, "delete", false, "Delete the orphans found; otherwise only list them.")
	fs.DurationVar(&f.grace, "grace-period", janitor.DefaultGracePeriod,
		"How old an object must be before it is reported or deleted.")
	fs.StringVar(&f.apiURL, "packet-api-url", envOr("PACKET_API_URL", packet.DefaultAPIURL), "Base URL of the Packet API (env PACKET_API_URL).")
	fs.StringVar(&f.lbaasURL, "lbaas-url", envOr("LBAAS_API_URL", packet.DefaultLBaaSURL), "Base URL of the Load Balancer API (env LBAAS_API_URL).")
	fs.StringVar(&f.tokenExchangeURL, "token-exchange-url", envOr("METAL_TOKEN_EXCHANGE_URL", packet.DefaultTokenExchangeURL),
		"URL that exchanges the API key for Load Balancer API tokens (env METAL_TOKEN_EXCHANGE_URL).")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "How long the sweep may take.")
	fs.SetOutput(stderr)
	fs.AddGoFlagSet(flag.CommandLine) // --kubeconfig and klog's flags
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: manager janitor --project <id> [--project <id>...] [--delete]\n\n"+
			"Lists the Packet objects carrying this provider's tags whose PacketCluster or PacketMachine is gone\n"+
			"from the management cluster (kubeconfig), older than the grace period; deletes them with --delete.\n"+
			"The Packet API key is read from PACKET_API_KEY.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if len(f.projects) == 0 {
		fmt.Fprintln(stderr, "janitor: --project is required")
		fs.Usage()
		return nil, 2
	}
	return f, 0
}

// sweep sweeps the projects once and prints the table; the error says why the sweep was not
// complete.
func (f *janitorFlags) sweep(apiKey string, stdout io.Writer) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	reader, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	pk, err := packet.New(packet.Options{APIURL: f.apiURL, APIKey: apiKey, LBaaSURL: f.lbaasURL, TokenExchangeURL: f.tokenExchangeURL,
		UserAgent: "cluster-api-provider-packet-janitor/" + version.Get()})
	if err != nil {
		return err
	}
	targets := make([]janitor.Target, 0, len(f.projects))
	for _, p := range f.projects {
		targets = append(targets, janitor.Target{ProjectID: p, Client: pk})
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	identity, err := scope.ManagementClusterIdentity(ctx, reader)
	if err != nil {
		return err
	}
	j := &janitor.Janitor{Reader: reader, GracePeriod: f.grace, Delete: f.del, ManagementCluster: identity}
	orphans, sweepErr := j.Sweep(ctx, targets)
	if err := janitor.WriteTable(stdout, orphans, time.Now()); err != nil {
		return err
	}
	return sweepErr
}
