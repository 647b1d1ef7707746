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
	"sigs.k8s.io/cluster-api-provider-packet/pkg/version"
)

// runJanitorCommand is `manager janitor --project <id> [--delete]`: one sweep of the projects
// with PACKET_API_KEY against the management cluster of the kubeconfig, printed as a table. It
// returns the exit code: 0 when the sweep was complete, 1 otherwise.
func runJanitorCommand(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("janitor", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	var (
		projects         []string
		del              bool
		grace            time.Duration
		apiURL, lbaasURL string
		tokenExchangeURL string
		timeout          time.Duration
	)
	fs.StringSliceVar(&projects, "project", nil, "Project ID to sweep (repeatable); required.")
	fs.BoolVar(&del, "delete", false, "Delete the orphans found; otherwise only list them.")
	fs.DurationVar(&grace, "grace-period", janitor.DefaultGracePeriod,
		"How old an object must be before it is reported or deleted.")
	fs.StringVar(&apiURL, "packet-api-url", envOr("PACKET_API_URL", packet.DefaultAPIURL), "Base URL of the Packet API (env PACKET_API_URL).")
	fs.StringVar(&lbaasURL, "lbaas-url", envOr("LBAAS_API_URL", packet.DefaultLBaaSURL), "Base URL of the Load Balancer API (env LBAAS_API_URL).")
	fs.StringVar(&tokenExchangeURL, "token-exchange-url", envOr("METAL_TOKEN_EXCHANGE_URL", packet.DefaultTokenExchangeURL),
		"URL that exchanges the API key for Load Balancer API tokens (env METAL_TOKEN_EXCHANGE_URL).")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "How long the sweep may take.")
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
			return 0
		}
		return 2
	}
	if len(projects) == 0 {
		fmt.Fprintln(stderr, "janitor: --project is required")
		fs.Usage()
		return 2
	}
	ctrl.SetLogger(klog.Background())
	apiKey := os.Getenv("PACKET_API_KEY")
	if apiKey == "" {
		fmt.Fprintln(stderr, "janitor: PACKET_API_KEY is not set")
		return 2
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(stderr, "janitor: %v\n", err)
		return 1
	}
	reader, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(stderr, "janitor: %v\n", err)
		return 1
	}
	pk, err := packet.New(packet.Options{APIURL: apiURL, APIKey: apiKey, LBaaSURL: lbaasURL, TokenExchangeURL: tokenExchangeURL,
		UserAgent: "cluster-api-provider-packet-janitor/" + version.Get()})
	if err != nil {
		fmt.Fprintf(stderr, "janitor: %v\n", err)
		return 1
	}
	targets := make([]janitor.Target, 0, len(projects))
	for _, p := range projects {
		targets = append(targets, janitor.Target{ProjectID: p, Client: pk})
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	j := &janitor.Janitor{Reader: reader, GracePeriod: grace, Delete: del}
	orphans, sweepErr := j.Sweep(ctx, targets)
	if err := janitor.WriteTable(stdout, orphans, time.Now()); err != nil {
		fmt.Fprintf(stderr, "janitor: %v\n", err)
		return 1
	}
	if sweepErr != nil {
		fmt.Fprintf(stderr, "janitor: %v\n", sweepErr)
		return 1
	}
	return 0
}
