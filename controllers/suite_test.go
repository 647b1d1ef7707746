package controllers

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// The controller suite: the real kube-apiserver and etcd (envtest), the Packet API simulator on a
// virtual clock over real HTTP, and a manager running the reconcilers against both. Cluster API's
// own controllers do not run; tests set what they would (owner references, labels, bootstrap
// data, Cluster status).

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *helpers.TestEnvironment
	k8sClient client.Client
	sim       *packetsim.Server
	simClock  *packetsim.VirtualClock
	simServer *httptest.Server
	factory   *packet.Factory

	// suiteReconcilers are added to the manager; each controller's test file registers its own.
	suiteReconcilers []func(context.Context, ctrl.Manager) error
)

const (
	simProject = packetsim.DefaultProjectID
	// eventually is how long asynchronous expectations wait.
	eventually = 20 * time.Second
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers on envtest and the Packet API simulator")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, err = helpers.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	k8sClient = testEnv.Client

	simClock = packetsim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sim, err = packetsim.New(packetsim.Options{Clock: simClock})
	Expect(err).NotTo(HaveOccurred())
	simServer = httptest.NewServer(sim.Handler())
	// The device snapshot is scaled down with the poll interval (testPollMin, 100 ms against
	// 10 s in production), so that, as in production, it is always fresher than the last look.
	factory = packet.NewFactory(packet.Options{APIURL: simServer.URL + "/metal/v1/", QPS: 1000, Burst: 1000,
		LBaaSURL: simServer.URL + "/lbaas/", TokenExchangeURL: simServer.URL + "/iam/api-keys/exchange",
		UserAgent: "capp-test", Timeout: 5 * time.Second, DeviceSnapshotMaxAge: testPollMin / 2})

	mgr, err := ctrl.NewManager(testEnv.Config, ctrl.Options{
		Scheme:  testEnv.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Client:  ClientOptions(),
	})
	Expect(err).NotTo(HaveOccurred())
	record.InitFromRecorder(mgr.GetEventRecorderFor("packet-controller")) //nolint:staticcheck // Cluster API's util/record takes the old events API
	for _, setup := range suiteReconcilers {
		Expect(setup(ctx, mgr)).To(Succeed())
	}
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if simServer != nil {
		simServer.Close()
	}
	if sim != nil {
		packetsim.CheckConformance(GinkgoT(), sim)
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// testOptions runs a few reconciles at once, as the manager does (it runs ten). With one worker,
// a test's machines that poll a provisioning device (the virtual clock stands still, so they poll
// at testPollMin) took turns ahead of a new machine, whose first reconcile ranks lower (see
// followPriority), and on a loaded machine it waited past the test's patience.
var testOptions = controller.Options{MaxConcurrentReconciles: 4, SkipNameValidation: ptr.To(true)}

// newNamespace creates a namespace for one test.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "capp-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// createCluster creates a Cluster and its PacketCluster the way Cluster API would link them:
// Cluster.spec.infrastructureRef and an owner reference on the PacketCluster.
func createCluster(ns, name string, spec infrav1.PacketClusterSpec) (*clusterv1.Cluster, *infrav1.PacketCluster) {
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: name}},
	}
	Expect(k8sClient.Create(ctx, cluster)).To(Succeed())
	if spec.ProjectID == "" {
		spec.ProjectID = simProject
	}
	pc := &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
				Name: cluster.Name, UID: cluster.UID}}},
		Spec: spec,
	}
	Expect(k8sClient.Create(ctx, pc)).To(Succeed())
	return cluster, pc
}

// getPacketCluster reads the current PacketCluster.
func getPacketCluster(ns, name string) *infrav1.PacketCluster {
	pc := &infrav1.PacketCluster{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pc)).To(Succeed())
	return pc
}

// apiCalls counts the simulator's recorded requests of one route, e.g. "POST /projects/{id}/ips".
func apiCalls(route string) int { return sim.Counters()[route] }

func apierrorsIsNotFound(err error) bool { return apierrors.IsNotFound(err) }
