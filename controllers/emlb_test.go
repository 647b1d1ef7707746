package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/loadbalancer"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// clusterLoadBalancers returns the simulator's load balancers and pools named for a cluster.
func clusterLoadBalancers(ns, name string) ([]packetsim.LoadBalancer, []packetsim.LoadBalancerPool) {
	want := infrav1.ControlPlaneEndpointTag(ns, name)
	var lbs []packetsim.LoadBalancer
	for _, lb := range sim.LoadBalancers(simProject) {
		if lb.Name == want {
			lbs = append(lbs, lb)
		}
	}
	var pools []packetsim.LoadBalancerPool
	for _, p := range sim.LoadBalancerPools(simProject) {
		if p.Name == want {
			pools = append(pools, p)
		}
	}
	return lbs, pools
}

// originsOf returns "name target:port active" for each origin of the cluster's pools.
func originsOf(ns, name string) func() []string {
	return func() []string {
		_, pools := clusterLoadBalancers(ns, name)
		var out []string
		for _, p := range pools {
			for _, o := range p.Origins {
				out = append(out, strings.Join([]string{o.Name, o.Target + ":" + strconv.Itoa(o.PortNumber), boolWord(o.Active)}, " "))
			}
		}
		return out
	}
}

// publicIPv4Of is the public management IPv4 of the machine's device.
func publicIPv4Of(pm *infrav1.PacketMachine) string {
	for _, a := range getPM(pm).Status.Addresses {
		if a.Type == clusterv1.MachineExternalIP && !strings.Contains(a.Address, ":") {
			return a.Address
		}
	}
	return ""
}

// lbaasCalls counts the simulator's recorded load-balancer API requests.
func lbaasCalls() int { return total(lbaasCallsByRoute()) }

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// lbaasCallsByRoute is the simulator's count of load-balancer API requests per route.
func lbaasCallsByRoute() map[string]int {
	out := map[string]int{}
	for route, c := range sim.Counters() {
		if strings.Contains(route, " /lbaas/") {
			out[route] = c
		}
	}
	return out
}

// lbaasCallsAtRest waits until no load-balancer request has been made for a second (a hot loop
// fails here) and returns the count by route. Reconciles a watch event started from a cache that has not yet seen the
// previous reconcile's write look at the load balancer again (reads only); waiting them out makes
// what a test counts next its own.
func lbaasCallsAtRest() map[string]int {
	last := -1
	var counts map[string]int
	Eventually(func() bool {
		counts = lbaasCallsByRoute()
		n := total(counts)
		still := n == last
		last = n
		return still
	}, eventually, time.Second).Should(BeTrue())
	return counts
}

// callsSince is how many requests each route received after the counts were taken.
func callsSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for route, c := range after {
		if d := c - before[route]; d > 0 {
			out[route] = d
		}
	}
	return out
}

var _ = Describe("EMLB clusters", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("front the control planes with one load balancer, make each control plane an origin, and delete it all with the cluster", func() {
		start := lbaasCallsAtRest()
		mc := newMachineCluster(infrav1.PacketClusterSpec{Metro: "sv", VIPManager: infrav1.EMLBVIPManager})
		setup := callsSince(start, lbaasCallsAtRest())
		// Each resource is created once and the new load balancer read once; how often the
		// project's lists are read depends on how many reconciles ran from a stale cache.
		Expect(setup).To(HaveKeyWithValue("POST /lbaas/v1/projects/{id}/loadbalancers", 1))
		Expect(setup).To(HaveKeyWithValue("GET /lbaas/v1/loadbalancers/{id}", 1))
		Expect(setup).To(HaveKeyWithValue("POST /lbaas/v1/projects/{id}/loadbalancers/pools", 1))
		Expect(setup).To(HaveKeyWithValue("POST /lbaas/v1/loadbalancers/{id}/ports", 1))
		Expect(setup).To(HaveLen(6), "besides the creates, only the project's load balancers and pools are listed: %v", setup)
		perCluster := total(setup)
		lbs, pools := clusterLoadBalancers(mc.ns, mc.name)
		Expect(lbs).To(HaveLen(1))
		Expect(pools).To(HaveLen(1))
		lb := lbs[0]
		Expect(lb.LocationID).To(Equal(packetsim.LBaaSLocations["sv"].ID))
		Expect(lb.Ports).To(ConsistOf(And(HaveField("Number", 6443), HaveField("PoolIDs", ConsistOf(pools[0].ID)))))
		pc := getPacketCluster(mc.ns, mc.name)
		Expect(pc.Spec.ControlPlaneEndpoint).To(Equal(clusterv1.APIEndpoint{Host: lb.IP, Port: 6443}))
		Expect(pc.Status.Conditions).To(ContainElement(And(HaveField("Type", infrav1.ControlPlaneEndpointReadyCondition),
			HaveField("Reason", infrav1.LoadBalancerReadyReason))))
		Expect(sim.IPReservations(simProject)).NotTo(ContainElement(HaveField("Tags", ContainElement(infrav1.ControlPlaneEndpointTag(mc.ns, mc.name)))),
			"no elastic IP is reserved for an EMLB cluster")

		By("a control plane and a worker: only the control plane becomes an origin, on its public address")
		before := lbaasCallsAtRest()
		cp0 := mc.createMachine("cp0", machineOpts{controlPlane: true})
		isProvisioned(cp0)
		joined := lbaasCallsAtRest()
		joins := callsSince(before, joined)
		Expect(joins).To(HaveKeyWithValue("POST /lbaas/v1/loadbalancers/pools/{id}/origins", 1))
		Expect(joins).To(HaveLen(2), "besides the origin's create, only the project's pools are listed: %v", joins)
		perControlPlane := total(joins)
		w0 := mc.createMachine("w0", machineOpts{})
		isProvisioned(w0)
		Expect(originsOf(mc.ns, mc.name)()).To(ConsistOf("pm-cp0 " + publicIPv4Of(cp0) + ":6443 active"))
		Expect(callsSince(joined, lbaasCallsAtRest())).To(BeEmpty(), "a worker makes no load-balancer call")
		Expect(eventReasons(getPM(cp0))()).To(ContainElement("LoadBalancerOriginAdded"))

		By("a second control plane joins, the first goes: the origins follow")
		cp1 := mc.createMachine("cp1", machineOpts{controlPlane: true})
		isProvisioned(cp1)
		Expect(originsOf(mc.ns, mc.name)()).To(ConsistOf(
			"pm-cp0 "+publicIPv4Of(cp0)+":6443 active", "pm-cp1 "+publicIPv4Of(cp1)+":6443 active"))
		before = lbaasCallsAtRest()
		deleteAndWait(cp0)
		Expect(originsOf(mc.ns, mc.name)()).To(ConsistOf("pm-cp1 " + publicIPv4Of(cp1) + ":6443 active"))
		perDeletedControlPlane := total(callsSince(before, lbaasCallsAtRest()))

		By("deleting the cluster removes the pool and the load balancer")
		mc.deleteMachines()
		beforeDelete := lbaasCalls()
		Expect(k8sClient.Delete(ctx, getPacketCluster(mc.ns, mc.name))).To(Succeed())
		Eventually(func(g Gomega) {
			lbs, pools := clusterLoadBalancers(mc.ns, mc.name)
			g.Expect(lbs).To(BeEmpty())
			g.Expect(pools).To(BeEmpty())
		}, eventually).Should(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: mc.name}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		AddReportEntry("LBaaS calls", fmt.Sprintf("cluster create %d, control plane joins %d, control plane deleted %d, cluster delete %d",
			perCluster, perControlPlane, perDeletedControlPlane, lbaasCalls()-beforeDelete))
	})

	It("listen and point origins at the Cluster's API server port", func() {
		ns := newNamespace()
		cluster, _ := createCluster(ns, "port", infrav1.PacketClusterSpec{Metro: "da", VIPManager: infrav1.EMLBVIPManager})
		orig := cluster.DeepCopy()
		cluster.Spec.ClusterNetwork.APIServerPort = 7443
		Expect(k8sClient.Patch(ctx, cluster, client.MergeFrom(orig))).To(Succeed())
		Eventually(provisioned(ns, "port"), eventually).Should(Succeed())
		lbs, _ := clusterLoadBalancers(ns, "port")
		Expect(lbs).To(HaveLen(1))
		Expect(lbs[0].Ports).To(ConsistOf(HaveField("Number", 7443)))
		Expect(getPacketCluster(ns, "port").Spec.ControlPlaneEndpoint.Port).To(Equal(int32(7443)))
	})

	It("create one load balancer and one pool when their answers are lost, as after a manager killed mid-way", func() {
		for _, route := range []string{"POST /lbaas/v1/projects/{id}/loadbalancers", "POST /lbaas/v1/projects/{id}/loadbalancers/pools",
			"POST /lbaas/v1/loadbalancers/{id}/ports"} {
			sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultCommitThenFail, Route: route, Status: 502, Count: 1})
		}
		ns := newNamespace()
		createCluster(ns, "lost", infrav1.PacketClusterSpec{Metro: "ny", VIPManager: infrav1.EMLBVIPManager})
		Eventually(provisioned(ns, "lost"), eventually).Should(Succeed())
		lbs, pools := clusterLoadBalancers(ns, "lost")
		Expect(lbs).To(HaveLen(1))
		Expect(pools).To(HaveLen(1))
		Expect(lbs[0].Ports).To(ConsistOf(HaveField("PoolIDs", ConsistOf(pools[0].ID))))
	})

	It("remove the origin of a control plane that is gone, whoever left it", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{Metro: "sv", VIPManager: infrav1.EMLBVIPManager})
		_, pools := clusterLoadBalancers(mc.ns, mc.name)
		Expect(pools).To(HaveLen(1))
		c, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.CreateLoadBalancerOrigin(ctx, pools[0].ID, packet.LoadBalancerOrigin{Name: "pm-long-gone", Target: "127.0.0.99", Port: 6443, Active: true})
		Expect(err).NotTo(HaveOccurred())

		cp0 := mc.createMachine("cp0", machineOpts{controlPlane: true})
		isProvisioned(cp0)
		Expect(originsOf(mc.ns, mc.name)()).To(HaveLen(2))
		// A control plane going is what makes the cluster look at its origins.
		deleteAndWait(cp0)
		Eventually(originsOf(mc.ns, mc.name), eventually).Should(BeEmpty())
	})

	It("adopt the project's load balancer that holds a user-supplied endpoint", func() {
		c, err := factory.ClientFor("", packetsim.DefaultToken)
		Expect(err).NotTo(HaveOccurred())
		id, err := c.CreateLoadBalancer(ctx, packet.CreateLoadBalancerRequest{ProjectID: simProject, Name: "migrated-capp-vip",
			LocationID: packetsim.LBaaSLocations["da"].ID})
		Expect(err).NotTo(HaveOccurred())
		lb, err := c.GetLoadBalancer(ctx, id)
		Expect(err).NotTo(HaveOccurred())

		By("a tenant writing that address as its endpoint, in a cluster of the same name elsewhere, does not get it")
		thief := newNamespace()
		createCluster(thief, "migrated", infrav1.PacketClusterSpec{Metro: "da", VIPManager: infrav1.EMLBVIPManager,
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: lb.IPs[0], Port: 6443}})
		Eventually(conditionOf(thief, "migrated", infrav1.ControlPlaneEndpointReadyCondition), eventually).Should(And(
			haveReason(infrav1.WaitingForLoadBalancerReason), HaveField("Message", ContainSubstring(loadbalancer.LegacyLoadBalancerIDAnnotation))))
		Consistently(func() string { got, _ := c.GetLoadBalancer(ctx, id); return got.Name }, time.Second).Should(Equal("migrated-capp-vip"))

		By("the migrated cluster, which carries the previous provider's record of it, adopts it")
		ns := newNamespace()
		_, pc := createCluster(ns, "migrated", infrav1.PacketClusterSpec{Metro: "da", VIPManager: infrav1.EMLBVIPManager,
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: lb.IPs[0], Port: 6443}})
		orig := pc.DeepCopy()
		pc.Annotations = map[string]string{loadbalancer.LegacyLoadBalancerIDAnnotation: id}
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		Eventually(provisioned(ns, "migrated"), eventually).Should(Succeed())
		lbs, _ := clusterLoadBalancers(ns, "migrated")
		Expect(lbs).To(ConsistOf(HaveField("ID", id)), "the load balancer is renamed for the cluster, none is created")
		Expect(eventReasons(getPacketCluster(ns, "migrated"))()).To(ContainElement("LoadBalancerAdopted"))

		By("deleting the tenant's cluster leaves the adopted load balancer alone")
		Expect(k8sClient.Delete(ctx, getPacketCluster(thief, "migrated"))).To(Succeed())
		Eventually(func() bool {
			return apierrorsIsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: thief, Name: "migrated"}, &infrav1.PacketCluster{}))
		}, eventually).Should(BeTrue())
		_, err = c.GetLoadBalancer(ctx, id)
		Expect(err).NotTo(HaveOccurred())
	})

	It("never adopt another cluster's load balancer whose address a tenant writes as its endpoint", func() {
		victim := newNamespace()
		createCluster(victim, "prod", infrav1.PacketClusterSpec{Metro: "da", VIPManager: infrav1.EMLBVIPManager})
		Eventually(provisioned(victim, "prod"), eventually).Should(Succeed())
		lbs, _ := clusterLoadBalancers(victim, "prod")
		Expect(lbs).To(HaveLen(1))
		host := getPacketCluster(victim, "prod").Spec.ControlPlaneEndpoint.Host

		thief := newNamespace()
		_, pc := createCluster(thief, "prod", infrav1.PacketClusterSpec{Metro: "da", VIPManager: infrav1.EMLBVIPManager,
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: host, Port: 6443}})
		orig := pc.DeepCopy()
		pc.Annotations = map[string]string{loadbalancer.LegacyLoadBalancerIDAnnotation: lbs[0].ID} // even knowing its ID
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		Eventually(conditionOf(thief, "prod", infrav1.ControlPlaneEndpointReadyCondition), eventually).Should(haveReason(infrav1.WaitingForLoadBalancerReason))
		Consistently(func() []string {
			got, _ := clusterLoadBalancers(victim, "prod")
			var names []string
			for _, lb := range got {
				names = append(names, lb.Name)
			}
			return names
		}, time.Second).Should(Equal([]string{lbs[0].Name}), "the victim's load balancer keeps its name")
		Expect(eventReasons(getPacketCluster(thief, "prod"))()).NotTo(ContainElement("LoadBalancerAdopted"))
	})

	It("wait, saying why, while the load-balancer API refuses the key", func() {
		sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHTTPError, Route: "GET /lbaas/v1/projects/{id}/loadbalancers", Status: 503,
			Message: "load balancers are down for maintenance"})
		ns := newNamespace()
		createCluster(ns, "down", infrav1.PacketClusterSpec{Metro: "sv", VIPManager: infrav1.EMLBVIPManager})
		Eventually(conditionOf(ns, "down", infrav1.ControlPlaneEndpointReadyCondition), eventually).Should(And(
			haveReason(infrav1.PacketAPIErrorReason), HaveField("Message", ContainSubstring("down for maintenance"))))
		Expect(getPacketCluster(ns, "down").Status.Initialization.Provisioned).To(BeNil())
		sim.ClearFaults()
		Eventually(provisioned(ns, "down"), eventually).Should(Succeed())
	})
})

func boolWord(b bool) string {
	if b {
		return "active"
	}
	return "inactive"
}
