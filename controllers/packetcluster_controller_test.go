package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/elasticip"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// legacyNamespace is the one namespace whose clusters the suite lets adopt the previous
// provider's objects (--legacy-adoption-namespaces).
const legacyNamespace = "migrated-from-the-previous-provider"

func init() {
	suiteReconcilers = append(suiteReconcilers, func(c context.Context, mgr ctrl.Manager) error {
		identity, err := scope.ManagementClusterIdentity(c, mgr.GetAPIReader())
		if err != nil {
			return err
		}
		return (&PacketClusterReconciler{
			ManagementCluster:        identity,
			LegacyAdoptionNamespaces: []string{legacyNamespace},
			Client:                   mgr.GetClient(),
			APIReader:                mgr.GetAPIReader(),
			Packet:                   factory,
			DefaultAPIKey:            packetsim.DefaultToken,
			PendingIPRetry:           200 * time.Millisecond,
			// Virtual time, like the machines' confirm window: tests advance the clock past it.
			IPConfirmWindow: testConfirmWindow,
			Now:             simClock.Now,
		}).SetupWithManager(c, mgr, testOptions)
	})
}

// endpointReservations returns the simulator's reservations tagged for a cluster's endpoint.
func endpointReservations(ns, name string) []packetsim.IPReservation {
	var out []packetsim.IPReservation
	for _, ip := range sim.IPReservations(simProject) {
		for _, t := range ip.Tags {
			if t == infrav1.ControlPlaneEndpointTag(ns, name) || t == infrav1.LegacyClusterTag(name) {
				out = append(out, ip)
				break
			}
		}
	}
	return out
}

func provisioned(ns, name string) func(g Gomega) {
	return func(g Gomega) {
		pc := &infrav1.PacketCluster{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pc)).To(Succeed())
		g.Expect(pc.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}
}

func conditionOf(ns, name, conditionType string) func() *metav1.Condition {
	return func() *metav1.Condition {
		pc := &infrav1.PacketCluster{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pc); err != nil {
			return nil
		}
		return conditions.Get(pc, conditionType)
	}
}

func haveReason(reason string) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Reason", reason))
}

var _ = Describe("PacketCluster reconciler", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("reserves one elastic IP, publishes it as the endpoint and reports provisioned", func() {
		ns := newNamespace()
		createCluster(ns, "c1", infrav1.PacketClusterSpec{Metro: "sv"})
		Eventually(provisioned(ns, "c1"), eventually).Should(Succeed())

		pc := getPacketCluster(ns, "c1")
		ips := endpointReservations(ns, "c1")
		Expect(ips).To(HaveLen(1))
		Expect(pc.Spec.ControlPlaneEndpoint).To(Equal(clusterv1.APIEndpoint{Host: ips[0].Network, Port: 6443}))
		Expect(ips[0].Tags).To(ContainElement(infrav1.ClusterTag(ns, "c1")))
		Expect(conditions.IsTrue(pc, infrav1.ControlPlaneEndpointReadyCondition)).To(BeTrue())
		Expect(conditions.IsTrue(pc, clusterv1.ReadyCondition)).To(BeTrue())
		Expect(pc.Status.FailureDomains).NotTo(BeEmpty())
		for _, fd := range pc.Status.FailureDomains {
			Expect(fd.Attributes).To(HaveKeyWithValue("metro", "sv"), "a facility of the metro (sv15, sv16, sjc1)")
			Expect(fd.ControlPlane).To(Equal(ptr.To(true)))
		}
		Expect(pc.Finalizers).To(ContainElement(infrav1.PacketClusterFinalizer))

		By("reconciling again without any new Packet call")
		reserves, lists := apiCalls("POST /projects/{id}/ips"), apiCalls("GET /projects/{id}/ips")
		poke := client.MergeFrom(pc.DeepCopy())
		pc.Annotations = map[string]string{"test/poke": "1"}
		Expect(k8sClient.Patch(ctx, pc, poke)).To(Succeed())
		Consistently(func() []int {
			return []int{apiCalls("POST /projects/{id}/ips"), apiCalls("GET /projects/{id}/ips")}
		}, time.Second).Should(Equal([]int{reserves, lists}))
		Expect(endpointReservations(ns, "c1")).To(HaveLen(1))

		events := &corev1.EventList{}
		Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		reserved := 0
		for _, e := range events.Items {
			if e.Reason == "ElasticIPReserved" {
				reserved += int(max(e.Count, 1))
			}
		}
		Expect(reserved).To(Equal(1), "one event for one reservation")
	})

	It("gives same-named clusters in two namespaces two different IPs", func() {
		nsA, nsB := newNamespace(), newNamespace()
		createCluster(nsA, "twin", infrav1.PacketClusterSpec{Metro: "da"})
		createCluster(nsB, "twin", infrav1.PacketClusterSpec{Metro: "da"})
		Eventually(provisioned(nsA, "twin"), eventually).Should(Succeed())
		Eventually(provisioned(nsB, "twin"), eventually).Should(Succeed())
		a, b := getPacketCluster(nsA, "twin"), getPacketCluster(nsB, "twin")
		Expect(a.Spec.ControlPlaneEndpoint.Host).NotTo(Equal(b.Spec.ControlPlaneEndpoint.Host))
		Expect(endpointReservations(nsA, "twin")).To(HaveLen(1))
		Expect(endpointReservations(nsB, "twin")).To(HaveLen(1))
	})

	It("honours a user-supplied endpoint without reserving anything", func() {
		ns := newNamespace()
		reserves := apiCalls("POST /projects/{id}/ips")
		createCluster(ns, "byo", infrav1.PacketClusterSpec{Metro: "sv",
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "lb.example.com"}})
		Eventually(provisioned(ns, "byo"), eventually).Should(Succeed())
		pc := getPacketCluster(ns, "byo")
		Expect(pc.Spec.ControlPlaneEndpoint).To(Equal(clusterv1.APIEndpoint{Host: "lb.example.com", Port: 6443}))
		Expect(conditions.GetReason(pc, infrav1.ControlPlaneEndpointReadyCondition)).To(Equal(infrav1.UserSuppliedEndpointReason))
		Expect(apiCalls("POST /projects/{id}/ips")).To(Equal(reserves))
		Expect(endpointReservations(ns, "byo")).To(BeEmpty())
	})

	It("waits for a pending reservation, then proceeds", func() {
		ns := newNamespace()
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultEIPPending, Tag: infrav1.ControlPlaneEndpointTag(ns, "slow"),
			Duration: 10 * time.Minute, State: "created"})
		createCluster(ns, "slow", infrav1.PacketClusterSpec{Metro: "sv"})
		Eventually(conditionOf(ns, "slow", infrav1.ControlPlaneEndpointReadyCondition), eventually).
			Should(haveReason(infrav1.WaitingForIPReservationReason))
		Consistently(provisioned(ns, "slow"), time.Second).ShouldNot(Succeed())
		Expect(getPacketCluster(ns, "slow").Spec.ControlPlaneEndpoint.Host).To(BeEmpty())

		sim.Advance(11 * time.Minute)
		Eventually(provisioned(ns, "slow"), eventually).Should(Succeed())
		Expect(endpointReservations(ns, "slow")).To(HaveLen(1))
		Expect(getPacketCluster(ns, "slow").Spec.ControlPlaneEndpoint.Host).To(Equal(endpointReservations(ns, "slow")[0].Network))
	})

	It("reports an exceeded IP quota with Packet's message and recovers when it is raised", func() {
		ns := newNamespace()
		// Other specs' addresses may be released already: hold one, so that a quota of one is full.
		c, err := factory.ClientFor("quota-test", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		held, err := c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: simProject, Metro: "sv", Tags: []string{"quota-test"}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(c.ReleaseIP(ctx, held.ID)).To(Succeed()) })
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: simProject, IPv4Quota: 1})
		DeferCleanup(func() {
			sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: simProject, IPv4Quota: 1 << 20})
		})
		createCluster(ns, "full", infrav1.PacketClusterSpec{Metro: "sv"})
		Eventually(conditionOf(ns, "full", infrav1.ControlPlaneEndpointReadyCondition), eventually).
			Should(And(haveReason(infrav1.QuotaExceededReason), HaveField("Message", ContainSubstring("quota"))))
		Expect(conditions.IsFalse(getPacketCluster(ns, "full"), clusterv1.ReadyCondition)).To(BeTrue())
		Expect(endpointReservations(ns, "full")).To(BeEmpty())
		Expect(eventReasons(getPacketCluster(ns, "full"))()).To(ContainElement(infrav1.QuotaExceededReason))

		By("the quota raised, the next look (here: the object touched; else after five minutes) reserves it")
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultProjectQuota, ProjectID: simProject, IPv4Quota: 1 << 20})
		pc := getPacketCluster(ns, "full")
		base := pc.DeepCopy()
		pc.Annotations = map[string]string{"example.com/touched": "yes"}
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(base))).To(Succeed())
		Eventually(provisioned(ns, "full"), eventually).Should(Succeed())
		Expect(endpointReservations(ns, "full")).To(HaveLen(1))
	})

	It("reports invalid credentials from the cluster's Secret and makes no further calls for them", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns},
			Data: map[string][]byte{"apiKey": []byte("not-a-valid-token")}})).To(Succeed())
		createCluster(ns, "badkey", infrav1.PacketClusterSpec{Metro: "sv", CredentialsRef: &infrav1.SecretReference{Name: "creds"}})
		Eventually(conditionOf(ns, "badkey", infrav1.PacketAPIAvailableCondition), eventually).
			Should(And(haveReason(infrav1.CredentialsInvalidReason), HaveField("Message", ContainSubstring("Invalid authentication token"))))

		createCluster(ns, "nosecret", infrav1.PacketClusterSpec{Metro: "sv", CredentialsRef: &infrav1.SecretReference{Name: "missing"}})
		Eventually(conditionOf(ns, "nosecret", infrav1.PacketAPIAvailableCondition), eventually).
			Should(And(haveReason(infrav1.CredentialsInvalidReason), HaveField("Message", ContainSubstring("missing"))))
		Expect(getPacketCluster(ns, "nosecret").Status.Initialization.Provisioned).To(BeNil())

		By("fixing the Secrets: the clusters provision at once (Secrets are watched), not at the slow retry")
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret)).To(Succeed())
		secret.Data["apiKey"] = []byte(packetsim.DefaultToken)
		Expect(k8sClient.Update(ctx, secret)).To(Succeed())
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns},
			Data: map[string][]byte{"apiKey": []byte(packetsim.DefaultToken)}})).To(Succeed())
		for _, name := range []string{"badkey", "nosecret"} {
			Eventually(func() *bool { return getPacketCluster(ns, name).Status.Initialization.Provisioned }, eventually).
				Should(HaveValue(BeTrue()), name)
		}
	})

	It("makes no Packet call while the Cluster is paused", func() {
		ns := newNamespace()
		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "paused", Namespace: ns},
			Spec: clusterv1.ClusterSpec{Paused: ptr.To(true), InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: "paused"}}}
		Expect(k8sClient.Create(ctx, cluster)).To(Succeed())
		before := len(sim.Requests())
		Expect(k8sClient.Create(ctx, &infrav1.PacketCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "paused", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "paused", UID: cluster.UID}}},
			Spec: infrav1.PacketClusterSpec{ProjectID: simProject, Metro: "sv"},
		})).To(Succeed())
		Eventually(conditionOf(ns, "paused", clusterv1.PausedCondition), eventually).Should(HaveField("Status", metav1.ConditionTrue))
		Consistently(func() int { return len(sim.Requests()) }, 2*time.Second).Should(Equal(before))
		Expect(endpointReservations(ns, "paused")).To(BeEmpty())
	})

	DescribeTable("deletion follows the reclaim policy and removes the SSH keys registered for the cluster",
		func(policy infrav1.ElasticIPReclaimPolicy, remaining int) {
			ns := newNamespace()
			createCluster(ns, "gone", infrav1.PacketClusterSpec{Metro: "sv", ElasticIPReclaimPolicy: policy})
			Eventually(provisioned(ns, "gone"), eventually).Should(Succeed())
			Expect(endpointReservations(ns, "gone")).To(HaveLen(1))
			c, err := factory.ClientFor("ssh-key-test", packetsim.DefaultToken)
			Expect(err).NotTo(HaveOccurred())
			key, err := c.CreateProjectSSHKey(ctx, simProject, infrav1.SSHKeyLabel(ns, "gone"),
				"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl gone@example.com")
			Expect(err).NotTo(HaveOccurred())

			Expect(k8sClient.Delete(ctx, getPacketCluster(ns, "gone"))).To(Succeed())
			Eventually(func() bool {
				return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gone"}, &infrav1.PacketCluster{}))
			}, eventually).Should(BeTrue())
			Expect(endpointReservations(ns, "gone")).To(HaveLen(remaining))
			for _, k := range sim.SSHKeys(simProject) {
				Expect(k.ID).NotTo(Equal(key.ID), "the cluster's SSH key is deleted with it")
			}
		},
		Entry("Delete releases the IP", infrav1.ElasticIPReclaimDelete, 0),
		Entry("Retain keeps the IP", infrav1.ElasticIPReclaimRetain, 1),
	)

	It("reserves once when the answer is lost and lists are slow, and releases every duplicate on deletion", func() {
		ns := newNamespace()
		DeferCleanup(sim.ClearFaults)
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCommitThenFail, Route: "POST /projects/{id}/ips", Count: 1, Status: 502, Body: "html"})
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultListLag, Route: "POST /projects/{id}/ips", Count: 1, Duration: 20 * time.Second})
		createCluster(ns, "lost", infrav1.PacketClusterSpec{Metro: "sv"})
		Eventually(conditionOf(ns, "lost", infrav1.ControlPlaneEndpointReadyCondition), eventually).Should(And(
			haveReason(infrav1.WaitingForIPReservationReason), HaveField("Message", ContainSubstring("may exist anyway"))))
		Consistently(func() int { return len(endpointReservations(ns, "lost")) }, 1500*time.Millisecond, 100*time.Millisecond).Should(Equal(1),
			"no second reservation while the first may still show up")

		sim.Advance(21 * time.Second)
		Eventually(provisioned(ns, "lost"), eventually).Should(Succeed())
		ips := endpointReservations(ns, "lost")
		Expect(ips).To(HaveLen(1))
		Expect(getPacketCluster(ns, "lost").Spec.ControlPlaneEndpoint.Host).To(Equal(ips[0].Network))
		Expect(getPacketCluster(ns, "lost").Annotations).NotTo(HaveKey(elasticip.ReserveStartedAnnotation))

		By("a duplicate made anyway (another manager, an older version) is released with the cluster")
		c, err := factory.ClientFor("duplicate-ip-test", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: simProject, Metro: "sv",
			Tags: []string{infrav1.ControlPlaneEndpointTag(ns, "lost"), infrav1.ClusterTag(ns, "lost")}})
		Expect(err).NotTo(HaveOccurred())
		Expect(endpointReservations(ns, "lost")).To(HaveLen(2))
		Expect(k8sClient.Delete(ctx, getPacketCluster(ns, "lost"))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lost"}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		Expect(endpointReservations(ns, "lost")).To(BeEmpty())
	})

	It("waits out a 429 for the server's Retry-After instead of retrying at once", func() {
		ns := newNamespace()
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultRateLimit, Route: "POST /projects/{id}/ips", RetryAfter: 2, Count: 1})
		createCluster(ns, "limited", infrav1.PacketClusterSpec{Metro: "sv"})
		Eventually(conditionOf(ns, "limited", infrav1.PacketAPIAvailableCondition), eventually).
			Should(haveReason(infrav1.RateLimitedReason))
		posts := apiCalls("POST /projects/{id}/ips")
		Consistently(func() int { return apiCalls("POST /projects/{id}/ips") }, 1500*time.Millisecond).Should(Equal(posts))
		Eventually(provisioned(ns, "limited"), eventually).Should(Succeed())
		Expect(endpointReservations(ns, "limited")).To(HaveLen(1))
		Expect(conditions.IsTrue(getPacketCluster(ns, "limited"), infrav1.PacketAPIAvailableCondition)).To(BeTrue())
	})

	It("enables the project's BGP once for KUBE_VIP clusters", func() {
		ns := newNamespace()
		createCluster(ns, "vip1", infrav1.PacketClusterSpec{Metro: "sv", VIPManager: infrav1.KubeVIPVIPManager})
		Eventually(provisioned(ns, "vip1"), eventually).Should(Succeed())
		cfg, ok := sim.BGPConfig(simProject)
		Expect(ok).To(BeTrue())
		Expect(cfg.DeploymentType).To(Equal("local"))
		Expect(conditions.IsTrue(getPacketCluster(ns, "vip1"), infrav1.BGPReadyCondition)).To(BeTrue())

		enables := apiCalls("POST /projects/{id}/bgp-configs")
		Expect(enables).To(BeNumerically("<=", 1))
		createCluster(ns, "vip2", infrav1.PacketClusterSpec{Metro: "sv", VIPManager: infrav1.KubeVIPVIPManager})
		Eventually(provisioned(ns, "vip2"), eventually).Should(Succeed())
		Expect(apiCalls("POST /projects/{id}/bgp-configs")).To(Equal(enables), "the existing config is reused")
	})

	It("adopts the previous provider's elastic IP for the migrated cluster only, and re-tags it", func() {
		c, err := factory.ClientFor("migration-test", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		old, err := c.ReserveIP(ctx, packet.ReserveIPRequest{ProjectID: simProject, Metro: "sv",
			Tags: []string{infrav1.LegacyClusterTag("migrated")}})
		Expect(err).NotTo(HaveOccurred())

		By("a new cluster of the same name in another namespace gets an address of its own")
		other := newNamespace()
		reserves := apiCalls("POST /projects/{id}/ips")
		createCluster(other, "migrated", infrav1.PacketClusterSpec{Metro: "sv"})
		Eventually(provisioned(other, "migrated"), eventually).Should(Succeed())
		Expect(getPacketCluster(other, "migrated").Spec.ControlPlaneEndpoint.Host).NotTo(Equal(old.Address))
		Expect(apiCalls("POST /projects/{id}/ips")).To(Equal(reserves + 1))

		By("a cluster of the same name whose endpoint is the old address, in a namespace not allowed to adopt, does not take it")
		thief := newNamespace()
		createCluster(thief, "migrated", infrav1.PacketClusterSpec{Metro: "sv",
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: old.Address, Port: 6443}})
		Eventually(provisioned(thief, "migrated"), eventually).Should(Succeed())
		Expect(conditions.GetReason(getPacketCluster(thief, "migrated"), infrav1.ControlPlaneEndpointReadyCondition)).
			To(Equal(infrav1.UserSuppliedEndpointReason), "an address it does not own, never released with it")
		Eventually(eventReasons(getPacketCluster(thief, "migrated")), eventually).Should(ContainElement("LegacyElasticIPNotAdopted"))
		untouched, err := c.GetIPReservation(ctx, old.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(untouched.Tags).To(ConsistOf(infrav1.LegacyClusterTag("migrated")))

		By("the migrated cluster, whose endpoint is the old address, adopts it without reserving")
		ns := legacyNamespace
		// Shared with the previous provider's takeover specs, which may have run first.
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		reserves = apiCalls("POST /projects/{id}/ips")
		createCluster(ns, "migrated", infrav1.PacketClusterSpec{Metro: "sv",
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: old.Address, Port: 6443}})
		Eventually(provisioned(ns, "migrated"), eventually).Should(Succeed())
		Expect(conditions.GetReason(getPacketCluster(ns, "migrated"), infrav1.ControlPlaneEndpointReadyCondition)).
			To(Equal(infrav1.ElasticIPReservedReason), "the cluster's own IP, released with it, not a user-supplied endpoint")
		Expect(apiCalls("POST /projects/{id}/ips")).To(Equal(reserves))
		got, err := c.GetIPReservation(ctx, old.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Tags).To(ConsistOf(infrav1.LegacyClusterTag("migrated"),
			infrav1.ControlPlaneEndpointTag(ns, "migrated"), infrav1.ClusterTag(ns, "migrated"), managementClusterTag()))

		By("deleting the other namespace's cluster releases its own address, not the migrated one's")
		Expect(k8sClient.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "migrated"}})).To(Succeed())
		Expect(k8sClient.Delete(ctx, getPacketCluster(other, "migrated"))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: other, Name: "migrated"}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		_, err = c.GetIPReservation(ctx, old.ID)
		Expect(err).NotTo(HaveOccurred(), "the migrated cluster's address is still reserved")
	})
})
