// Command manager runs the Cluster API infrastructure provider for Packet (Equinix Metal).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/apiwarnings"
	"sigs.k8s.io/cluster-api/util/flags"
	"sigs.k8s.io/cluster-api/util/record"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/controllers"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/janitor"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/version"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/webhooks"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = clusterv1.AddToScheme(scheme)
	_ = infrav1.AddToScheme(scheme)
}

// options are the manager's command-line flags.
type options struct {
	leaderElect                 bool
	leaderElectionNamespace     string
	leaderElectionLeaseDuration time.Duration
	leaderElectionRenewDeadline time.Duration
	leaderElectionRetryPeriod   time.Duration
	watchNamespace              string
	watchFilterValue            string
	syncPeriod                  time.Duration
	restConfigQPS               float32
	restConfigBurst             int
	healthAddr                  string
	profilerAddress             string
	webhookPort                 int
	webhookCertDir              string
	packetAPIURL                string
	lbaasURL                    string
	tokenExchangeURL            string
	emlbLocations               map[string]string
	packetAPIQPS                float64
	packetAPIBurst              int
	bgpLocalASN                 int64
	defaultKeyProjects          []string
	legacyAdoptionNamespaces    []string
	clusterConcurrency          int
	machineConcurrency          int
	createConfirmWindow         time.Duration
	printVersion                bool
	janitorInterval             time.Duration
	janitorGracePeriod          time.Duration
	janitorDelete               bool
	janitorProjects             []string
	manager                     flags.ManagerOptions
	logs                        *logs.Options
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	logsv1.AddFlags(o.logs, fs)
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Enable leader election, so that only one manager replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election lease; defaults to the manager's own namespace.")
	fs.DurationVar(&o.leaderElectionLeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long non-leaders wait before forcing a takeover of leadership.")
	fs.DurationVar(&o.leaderElectionRenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader retries renewing leadership before giving up.")
	fs.DurationVar(&o.leaderElectionRetryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How long leader election clients wait between tries.")
	fs.StringVar(&o.watchNamespace, "namespace", "",
		"Namespace to watch for Cluster API objects; all namespaces when empty.")
	fs.StringVar(&o.watchFilterValue, "watch-filter", "",
		fmt.Sprintf("Only reconcile objects whose %s label has this value; all objects when empty.", clusterv1.WatchLabel))
	fs.DurationVar(&o.syncPeriod, "sync-period", 10*time.Minute,
		"Minimum interval at which every watched object is reconciled again.")
	// 50/100, not client-go's 20/30: a machine costs about seven writes, and at 20 a second a
	// thousand machines waited on this client, not on Packet (docs/performance.md).
	fs.Float32Var(&o.restConfigQPS, "kube-api-qps", 50,
		"Maximum queries per second to the management cluster's Kubernetes API.")
	fs.IntVar(&o.restConfigBurst, "kube-api-burst", 100,
		"Maximum burst of queries to the management cluster's Kubernetes API.")
	fs.StringVar(&o.healthAddr, "health-addr", ":9440",
		"Address the health and readiness probes bind to.")
	fs.StringVar(&o.profilerAddress, "profiler-address", "",
		"Address to expose the pprof profiler on (for example localhost:6060); off when empty.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the webhook server listens on.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/",
		"Directory holding the webhook server's tls.crt and tls.key.")
	fs.StringVar(&o.packetAPIURL, "packet-api-url", envOr("PACKET_API_URL", packet.DefaultAPIURL),
		"Base URL of the Packet API (env PACKET_API_URL); point it at packetsim for local work.")
	fs.StringVar(&o.lbaasURL, "lbaas-url", envOr("LBAAS_API_URL", packet.DefaultLBaaSURL),
		"Base URL of the Equinix Metal Load Balancer API (env LBAAS_API_URL), for vipManager EMLB.")
	fs.StringVar(&o.tokenExchangeURL, "token-exchange-url", envOr("METAL_TOKEN_EXCHANGE_URL", packet.DefaultTokenExchangeURL),
		"URL that exchanges a Packet API key for Load Balancer API tokens (env METAL_TOKEN_EXCHANGE_URL).")
	fs.StringToStringVar(&o.emlbLocations, "emlb-locations", nil,
		"Extra metro=locationID pairs of the Load Balancer API, for metros that gained load balancers after this release (built in: "+strings.Join(catalog.LoadBalancerMetros(), ", ")+").")
	fs.Float64Var(&o.packetAPIQPS, "packet-api-qps", 10,
		"Maximum Packet API requests per second for each API key. Under 5, lists of a project's devices are also kept longer than 2s (at 2, 5s), so they take no more than a tenth of it.")
	fs.IntVar(&o.packetAPIBurst, "packet-api-burst", 20,
		"Maximum burst of Packet API requests for each API key: the key's bucket at Packet; the manager keeps one request of it in hand.")
	fs.Int64Var(&o.bgpLocalASN, "bgp-local-asn", 65000,
		"ASN that KUBE_VIP clusters announce their elastic IP from, unless a PacketCluster sets spec.bgp.localASN.")
	fs.StringSliceVar(&o.defaultKeyProjects, "default-key-projects", nil,
		"Project IDs the manager's own API key (PACKET_API_KEY) may serve; PacketClusters in other projects need a credentialsRef. Empty: any project the key reaches, for every namespace (see docs/security.md).")
	fs.StringSliceVar(&o.legacyAdoptionNamespaces, "legacy-adoption-namespaces", nil,
		"Namespaces whose clusters may take over the previous Packet provider's devices and elastic IPs, which its tags name by cluster name only; \"*\": every namespace. Empty: none (see docs/security.md).")
	fs.IntVar(&o.clusterConcurrency, "packetcluster-concurrency", 10,
		"Number of PacketClusters to reconcile at the same time.")
	fs.IntVar(&o.machineConcurrency, "packetmachine-concurrency", 10,
		"Number of PacketMachines to reconcile at the same time.")
	fs.DurationVar(&o.createConfirmWindow, "device-create-confirm-window", 2*time.Minute,
		"How long a device create that got no answer (a timeout, a 5xx) may take to show in Packet's device lists before it is sent again. Shorter than Packet's lists may lag risks a duplicate device.")
	o.addJanitorFlags(fs)
	fs.BoolVar(&o.printVersion, "version", false, "Print the manager's version and exit.")
	flags.AddManagerOptions(fs, &o.manager)
}

// addJanitorFlags adds the orphan janitor's flags (docs/janitor.md).
func (o *options) addJanitorFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.janitorInterval, "janitor-interval", 0,
		"How often the orphan janitor sweeps for Packet objects whose PacketCluster or PacketMachine is gone (docs/janitor.md); 0 turns it off.")
	fs.DurationVar(&o.janitorGracePeriod, "janitor-grace-period", janitor.DefaultGracePeriod,
		"How old a Packet object must be before the janitor reports or deletes it, so creates in flight are never touched.")
	fs.BoolVar(&o.janitorDelete, "janitor-delete", false,
		"Let the janitor delete the orphans it finds; otherwise it only reports them (log lines and the capp_orphaned_resources metric).")
	fs.StringSliceVar(&o.janitorProjects, "janitor-projects", nil,
		"Projects the janitor sweeps with the manager's own API key, besides those of the PacketClusters; defaults to --default-key-projects.")
}

// validate rejects flag values the manager cannot work with. Durations the device service
// defaults when zero are checked here, so that a zero on the command line is an error rather
// than quietly the default.
func (o *options) validate() error {
	if o.createConfirmWindow <= 0 {
		return fmt.Errorf("--device-create-confirm-window must be positive, not %s", o.createConfirmWindow)
	}
	return nil
}

// leaderElectionID names the lease the manager's replicas share. Managers sharded with
// --watch-filter each own their share of the clusters, so each shard elects its own leader: with
// one lease for all, only one shard would ever reconcile. Label values may hold capitals and
// underscores, lease names may not.
func leaderElectionID(watchFilter string) string {
	const id = "controller-leader-election-capp"
	if watchFilter == "" {
		return id
	}
	return id + "-" + strings.ReplaceAll(strings.ToLower(watchFilter), "_", "-")
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "janitor" {
		os.Exit(runJanitorCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	opts := &options{logs: logs.NewOptions()}
	opts.addFlags(pflag.CommandLine)
	pflag.CommandLine.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if opts.printVersion {
		fmt.Println(version.Get())
		return
	}

	if err := logsv1.ValidateAndApply(opts.logs, nil); err != nil {
		fmt.Fprintf(os.Stderr, "invalid logging flags: %v\n", err)
		os.Exit(1)
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "invalid flags: %v\n", err)
		os.Exit(1)
	}
	ctrl.SetLogger(klog.Background())

	if err := run(opts); err != nil {
		setupLog.Error(err, "manager stopped")
		os.Exit(1)
	}
}

func run(opts *options) error {
	setupLog.Info("Starting cluster-api-provider-packet", "version", version.Get(), "packetAPIURL", opts.packetAPIURL, "lbaasURL", opts.lbaasURL)

	mgr, err := newManager(opts)
	if err != nil {
		return err
	}

	if err := setupWebhooks(mgr); err != nil {
		return err
	}

	ctx := ctrl.SetupSignalHandler()
	record.InitFromRecorder(mgr.GetEventRecorderFor("packet-controller")) //nolint:staticcheck // Cluster API's util/record takes the old events API
	if err := setupReconcilers(ctx, mgr, opts); err != nil {
		return err
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}

	return mgr.Start(ctx)
}

// configureClient sets up the manager's Kubernetes client: its request budget, its user agent
// and which of the kube-apiserver's warnings it logs. Like Cluster API's own managers it drops
// the warning that a finalizer name has no path: this provider's are the previous provider's
// names, kept so that its objects are still released, and the warning comes with every write
// that adds one — a log line per machine created, nearly the whole log of a fleet. Other
// warnings are logged.
func configureClient(cfg *rest.Config, opts *options, log logr.Logger) {
	cfg.QPS = opts.restConfigQPS
	cfg.Burst = opts.restConfigBurst
	cfg.UserAgent = "cluster-api-provider-packet/" + version.Get()
	cfg.WarningHandler = apiwarnings.DefaultHandler(log.WithName("API Server Warning"))
}

// newManager builds the controller manager from the flags: its Kubernetes client, leader
// election, cache, metrics, health probes and webhook server.
func newManager(opts *options) (ctrl.Manager, error) {
	tlsOptions, metricsOptions, err := flags.GetManagerOptions(opts.manager)
	if err != nil {
		return nil, fmt.Errorf("invalid flags: %w", err)
	}

	restConfig := ctrl.GetConfigOrDie()
	configureClient(restConfig, opts, klog.Background())

	var defaultNamespaces map[string]cache.Config
	if opts.watchNamespace != "" {
		defaultNamespaces = map[string]cache.Config{opts.watchNamespace: {}}
	}

	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                     scheme,
		LeaderElection:             opts.leaderElect,
		LeaderElectionID:           leaderElectionID(opts.watchFilterValue),
		LeaderElectionNamespace:    opts.leaderElectionNamespace,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaseDuration:              &opts.leaderElectionLeaseDuration,
		RenewDeadline:              &opts.leaderElectionRenewDeadline,
		RetryPeriod:                &opts.leaderElectionRetryPeriod,
		HealthProbeBindAddress:     opts.healthAddr,
		PprofBindAddress:           opts.profilerAddress,
		Metrics:                    *metricsOptions,
		Cache: cache.Options{
			DefaultNamespaces: defaultNamespaces,
			SyncPeriod:        &opts.syncPeriod,
			// Nothing reads managedFields; with ten thousand machines they were a large share of
			// the cached objects (docs/performance.md).
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Client: controllers.ClientOptions(),
		WebhookServer: webhook.NewServer(webhook.Options{
			Port:    opts.webhookPort,
			CertDir: opts.webhookCertDir,
			TLSOpts: tlsOptions,
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// setupReconcilers registers every reconciler with one Packet client factory, so objects that
// share an API key share its request budget.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager, opts *options) error {
	apiKey := os.Getenv("PACKET_API_KEY")
	if apiKey == "" {
		setupLog.Info("PACKET_API_KEY is not set: only PacketClusters with spec.credentialsRef can be reconciled")
	}
	snapshotMaxAge, factory := newPacketFactory(opts)
	identity, err := scope.ManagementClusterIdentity(ctx, mgr.GetAPIReader())
	if err != nil {
		return err
	}
	setupLog.Info("Managing Packet objects as this management cluster's", "tag", infrav1.ManagementClusterTag(identity))
	if err := (&controllers.PacketClusterReconciler{
		Client:                   mgr.GetClient(),
		APIReader:                mgr.GetAPIReader(),
		Packet:                   factory,
		DefaultAPIKey:            apiKey,
		DefaultKeyProjects:       opts.defaultKeyProjects,
		LegacyAdoptionNamespaces: opts.legacyAdoptionNamespaces,
		BGPLocalASN:              opts.bgpLocalASN,
		WatchFilterValue:         opts.watchFilterValue,
		ManagementCluster:        identity,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: opts.clusterConcurrency}); err != nil {
		return fmt.Errorf("setting up the PacketCluster controller: %w", err)
	}
	if err := (&controllers.PacketMachineReconciler{
		Client:                   mgr.GetClient(),
		APIReader:                mgr.GetAPIReader(),
		Packet:                   factory,
		DefaultAPIKey:            apiKey,
		DefaultKeyProjects:       opts.defaultKeyProjects,
		LegacyAdoptionNamespaces: opts.legacyAdoptionNamespaces,
		WatchFilterValue:         opts.watchFilterValue,
		SnapshotMaxAge:           snapshotMaxAge,
		CreateConfirmWindow:      opts.createConfirmWindow,
		ManagementCluster:        identity,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: opts.machineConcurrency}); err != nil {
		return fmt.Errorf("setting up the PacketMachine controller: %w", err)
	}
	if err := (&controllers.PacketMachineTemplateReconciler{
		Client:             mgr.GetClient(),
		Packet:             factory,
		DefaultAPIKey:      apiKey,
		DefaultKeyProjects: opts.defaultKeyProjects,
		WatchFilterValue:   opts.watchFilterValue,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: opts.clusterConcurrency}); err != nil {
		return fmt.Errorf("setting up the PacketMachineTemplate controller: %w", err)
	}
	if err := (&controllers.PacketRemediationReconciler{
		Client:                   mgr.GetClient(),
		APIReader:                mgr.GetAPIReader(),
		Packet:                   factory,
		DefaultAPIKey:            apiKey,
		DefaultKeyProjects:       opts.defaultKeyProjects,
		LegacyAdoptionNamespaces: opts.legacyAdoptionNamespaces,
		WatchFilterValue:         opts.watchFilterValue,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: opts.clusterConcurrency}); err != nil {
		return fmt.Errorf("setting up the PacketRemediation controller: %w", err)
	}
	return setupJanitor(mgr, opts, factory, apiKey, identity)
}

// newPacketFactory is the one Packet client factory of the manager, and the age its device
// lists may have. One age for the lists and for the looks they answer: a look aimed at a
// device's end lands as long after it as the list may be old.
func newPacketFactory(opts *options) (time.Duration, *packet.Factory) {
	catalog.SetLoadBalancerLocations(opts.emlbLocations)
	snapshotMaxAge := packet.SnapshotMaxAge(opts.packetAPIQPS)
	factory := packet.NewFactory(packet.Options{
		APIURL:               opts.packetAPIURL,
		LBaaSURL:             opts.lbaasURL,
		TokenExchangeURL:     opts.tokenExchangeURL,
		UserAgent:            "cluster-api-provider-packet/" + version.Get(),
		QPS:                  opts.packetAPIQPS,
		Burst:                opts.packetAPIBurst,
		DeviceSnapshotMaxAge: snapshotMaxAge,
	})
	return snapshotMaxAge, factory
}

// setupJanitor adds the orphan janitor to the manager when --janitor-interval is set. It runs
// only on the leader, and reads owners uncached so that a lagging cache never makes one look gone.
func setupJanitor(mgr ctrl.Manager, opts *options, factory *packet.Factory, apiKey, identity string) error {
	if opts.janitorInterval <= 0 {
		return nil
	}
	projects := opts.janitorProjects
	if len(projects) == 0 {
		projects = opts.defaultKeyProjects
	}
	creds := &credentials.Source{Reader: mgr.GetAPIReader(), Clients: factory,
		Default: credentials.Default{APIKey: apiKey, Projects: opts.defaultKeyProjects}}
	// An orphan is deleted a grace period after it was found, if it is still this management
	// cluster's then: a cluster moved away by clusterctl is tagged by the target meanwhile.
	j := &janitor.Janitor{Reader: mgr.GetAPIReader(), GracePeriod: opts.janitorGracePeriod, Delete: opts.janitorDelete,
		ManagementCluster: identity, ConfirmAfter: opts.janitorGracePeriod}
	targets := func(ctx context.Context) ([]janitor.Target, error) {
		return janitor.Targets(ctx, creds, projects)
	}
	if err := mgr.Add(j.Runnable(opts.janitorInterval, targets)); err != nil {
		return fmt.Errorf("adding the orphan janitor: %w", err)
	}
	setupLog.Info("Orphan janitor enabled", "interval", opts.janitorInterval, "gracePeriod", opts.janitorGracePeriod,
		"delete", opts.janitorDelete, "projects", projects)
	return nil
}

// setupWebhooks registers the defaulting and validating webhooks of the four kinds, and makes the
// manager healthy and ready only once the webhook server is serving. ENABLE_WEBHOOKS=false skips
// them, for `make run` outside the cluster where there is no serving certificate.
func setupWebhooks(mgr ctrl.Manager) error {
	if os.Getenv("ENABLE_WEBHOOKS") == "false" {
		setupLog.Info("Webhooks disabled (ENABLE_WEBHOOKS=false)")
		return nil
	}
	if err := webhooks.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("adding webhook ready check: %w", err)
	}
	if err := mgr.AddHealthzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("adding webhook health check: %w", err)
	}
	return nil
}
