package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

var _ = Describe("EMLB", func() {
	It("fronts the control plane with a load balancer whose origins follow a control-plane rollout while the endpoint answers", func(ctx SpecContext) {
		ns := testNamespace(ctx, "emlb")
		const name = "lb"
		applyYAML(ctx, ns, generateCluster(ctx, ns, name, "emlb", "--control-plane-machine-count", "1", "--worker-machine-count", "0"))

		By("the endpoint is the load balancer's address, its one origin the control plane")
		pc := waitClusterProvisioned(ctx, ns, name)
		waitClusterAvailable(ctx, ns, name, 1, 0, 6*time.Minute)
		lb := clusterLoadBalancer(ctx, ns, name)
		Expect(pc.Spec.ControlPlaneEndpoint.Host).To(Equal(lb.IPs[0]))
		Expect(ipReservationsOf(ctx, ns)).To(BeEmpty(), "no elastic IP for an EMLB cluster")
		Eventually(origins(ctx, ns, name)).WithContext(ctx).Should(Equal(controlPlaneTargets(ctx, ns, name)))
		wc := workloadClient(ctx, ns, name)
		expectNodesMatchMachines(ctx, ns, name)

		By("rolling the control plane to " + upgradeVersion + " while polling the endpoint")
		probe := startEndpointProbe(ctx, wc)
		setControlPlaneVersion(ctx, ns, name, upgradeVersion)
		Eventually(func(g Gomega) {
			machines := &clusterv1.MachineList{}
			g.Expect(k8s.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
			g.Expect(machines.Items).To(HaveLen(1))
			g.Expect(machines.Items[0].Spec.Version).To(Equal(upgradeVersion))
			g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(1), "the old device is deleted")
		}).WithContext(ctx).WithTimeout(8 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		waitClusterAvailable(ctx, ns, name, 1, 0, 4*time.Minute)
		Eventually(origins(ctx, ns, name)).WithContext(ctx).Should(Equal(controlPlaneTargets(ctx, ns, name)),
			"the new control plane is the only origin: none is left of the old one")
		longest, failures, total := probe.stop()
		GinkgoWriter.Printf("endpoint during the rollout: %d of %d probes failed, at most %d in a row\n", failures, total, longest)
		Expect(longest).To(BeNumerically("<", 20),
			"the endpoint kept answering: the new control plane was an origin before the old one was removed")

		deleteClusterAndExpectNoDevices(ctx, ns, name)
	})
})

// clusterLoadBalancer returns the one load balancer named for the cluster.
func clusterLoadBalancer(ctx context.Context, ns, name string) LoadBalancer {
	lbs, err := sim.LoadBalancers(ctx)
	Expect(err).NotTo(HaveOccurred())
	mine := filter(lbs, func(lb LoadBalancer) bool { return lb.Name == infrav1.ControlPlaneEndpointTag(ns, name) })
	Expect(mine).To(HaveLen(1))
	Expect(mine[0].IPs).NotTo(BeEmpty())
	return mine[0]
}

// origins returns the active origins of the cluster's pool as "target:port".
func origins(ctx context.Context, ns, name string) func(Gomega) []string {
	return func(g Gomega) []string {
		pools, err := sim.LoadBalancerPools(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, p := range pools {
			if p.Name != infrav1.ControlPlaneEndpointTag(ns, name) {
				continue
			}
			for _, o := range p.Origins {
				if o.Active {
					out = append(out, fmt.Sprintf("%s:%d", o.Target, o.PortNumber))
				}
			}
		}
		return out
	}
}

// controlPlaneTargets returns "address:6443" of each control-plane device's public IPv4.
func controlPlaneTargets(ctx context.Context, ns, name string) []string {
	devices, err := sim.Devices(ctx, infrav1.ClusterTag(ns, name))
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, d := range devices {
		if !hasTagPart(d.Tags, infrav1.RoleTag(true)) {
			continue
		}
		for _, ip := range d.Network {
			if ip.Public && ip.Management && !strings.Contains(ip.Address, ":") {
				out = append(out, ip.Address+":6443")
			}
		}
	}
	return out
}

// ipReservationsOf returns the IP reservations tagged for the namespace's clusters.
func ipReservationsOf(ctx context.Context, ns string) []IP {
	ips, err := sim.IPReservations(ctx, "")
	Expect(err).NotTo(HaveOccurred())
	return filter(ips, func(ip IP) bool { return taggedFor(ip.Tags, ns) })
}
