package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/catalog/failuredomains"
)

var _ = Describe("PacketCluster failure domains", func() {
	It("computes the failure domains again an hour on, narrowed by a template added since", func() {
		ns := newNamespace()
		createCluster(ns, "tokyo", infrav1.PacketClusterSpec{Metro: "ty"})
		Eventually(provisioned(ns, "tokyo"), eventually).Should(Succeed())
		Expect(getPacketCluster(ns, "tokyo").Status.FailureDomains).To(ConsistOf(HaveField("Name", "ty11"), HaveField("Name", "nrt1")))

		By("a template whose plan Tokyo does not offer (c3.medium.x86), labelled for the cluster")
		Expect(k8sClient.Create(ctx, &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "medium", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "tokyo"}},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.medium.x86"}}},
		})).To(Succeed())
		poke := func(n string) {
			pc := getPacketCluster(ns, "tokyo")
			base := client.MergeFrom(pc.DeepCopy())
			pc.Annotations["test/poke"] = n
			Expect(k8sClient.Patch(ctx, pc, base)).To(Succeed())
		}
		poke("1")
		Consistently(func() []clusterv1.FailureDomain { return getPacketCluster(ns, "tokyo").Status.FailureDomains }, time.Second).
			Should(HaveLen(2), "within the hour the failure domains stand")
		simClock.Advance(failuredomains.RefreshAfter + time.Minute)
		poke("2")
		Eventually(func() []clusterv1.FailureDomain { return getPacketCluster(ns, "tokyo").Status.FailureDomains }, eventually).
			Should(BeEmpty(), "no Tokyo facility offers every plan the cluster uses")
	})
})
