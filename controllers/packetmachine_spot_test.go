package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// Spot machines run in metro da, which no other spec of the suite uses, so that moving the
// market there reclaims only their devices.
const (
	spotMetro = "da"
	spotPlan  = "c3.small.x86"
)

func spotSpec(bid string) infrav1.PacketMachineSpec {
	return infrav1.PacketMachineSpec{Metro: spotMetro, MachineType: spotPlan, SpotInstance: true,
		SpotPriceMax: ptr.To(resource.MustParse(bid))}
}

var _ = Describe("PacketMachine reconciler, spot market", func() {
	var marketPrice float64
	BeforeEach(func() {
		marketPrice = sim.SpotPrices()[spotMetro][spotPlan]
		DeferCleanup(func() { Expect(sim.SetSpotPrice(spotMetro, spotPlan, marketPrice)).To(Succeed()) })
	})

	It("bids, reports the machine interruptible, passes on the termination notice and stops at the reclaimed device", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("spot", machineOpts{spec: spotSpec("0.5")})
		isProvisioned(pm)
		dev := oneDevice(pm)
		Expect(dev.SpotInstance).To(BeTrue())
		Expect(dev.SpotPriceMax).To(BeNumerically("==", 0.5))
		Expect(getPM(pm).Status.Interruptible).To(BeTrue())

		By("the market rising above the bid")
		Expect(sim.SetSpotPrice(spotMetro, spotPlan, 0.6)).To(Succeed())
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			HaveField("Reason", infrav1.DeviceTerminationScheduledReason),
			HaveField("Message", ContainSubstring("spot market price rose above spotPriceMax"))))
		Eventually(eventReasons(pm), eventually).Should(ContainElement(infrav1.DeviceTerminationScheduledReason))

		By("Packet deleting the device at its termination time")
		Eventually(func() *infrav1.PacketMachine {
			sim.Advance(5 * time.Second)
			return getPM(pm)
		}, eventually, 200*time.Millisecond).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", infrav1.DeviceReadyCondition), HaveField("Reason", infrav1.DeviceReclaimedReason)))))
		Expect(devicesOf(pm)).To(BeEmpty())
		Consistently(func() int { return createsFor(pm) }, 1500*time.Millisecond, 100*time.Millisecond).Should(Equal(1),
			"a reclaimed device is the Machine's end, not a reason to create another")
		Expect(getPM(pm).Spec.ProviderID).To(Equal(infrav1.ProviderIDPrefix + dev.ID))
		deleteAndWait(pm)
	})

	It("tells a bid below the market apart and retries it slowly, not in a loop", func() {
		Expect(sim.SetSpotPrice(spotMetro, spotPlan, 2)).To(Succeed())
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("lowbid", machineOpts{spec: spotSpec("0.5")})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			HaveField("Reason", infrav1.SpotBidRefusedReason),
			HaveField("Message", ContainSubstring("below the current spot market price of 2")),
			HaveField("Message", ContainSubstring("bid 0.5 an hour"))))
		Consistently(func() int { return createsFor(pm) }, 1500*time.Millisecond, 100*time.Millisecond).Should(Equal(1))
		Expect(devicesOf(pm)).To(BeEmpty())
		Expect(eventReasons(pm)()).To(ContainElement(infrav1.SpotBidRefusedReason))
		deleteAndWait(pm)
	})

	It("creates no spot control plane until it is explicitly allowed", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("spotcp", machineOpts{controlPlane: true, spec: spotSpec("1")})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			HaveField("Reason", infrav1.SpotControlPlaneNotAllowedReason),
			HaveField("Message", ContainSubstring(infrav1.AllowSpotControlPlaneAnnotation))))
		Consistently(func() int { return createsFor(pm) }, time.Second, 100*time.Millisecond).Should(BeZero())

		cur := getPM(pm)
		orig := cur.DeepCopy()
		cur.Annotations = map[string]string{infrav1.AllowSpotControlPlaneAnnotation: "true"}
		Expect(k8sClient.Patch(ctx, cur, client.MergeFrom(orig))).To(Succeed())
		dev := oneDevice(pm)
		Expect(dev.SpotInstance).To(BeTrue())
		deleteAndWait(pm)
	})
})
