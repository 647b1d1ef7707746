package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
)

var _ = Describe("PacketMachine reconciler, a newer PacketMachine", func() {
	It("retries a status write that met a newer copy in a second, without an error to back off from", func() {
		const filter = "conflict" // no manager serves it: the test runs the reconciles itself
		mc := newFilteredMachineCluster(infrav1.PacketClusterSpec{}, filter)
		pm := mc.createMachine("conflict", machineOpts{})
		r := newTestMachineReconciler(filter)
		r.Client, r.progress, r.sentCreates = k8sClient, device.NewProgress(), device.NewSentCreates()
		r.credentials = credentialsSource(k8sClient, factory, r.DefaultAPIKey, nil)
		req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pm)}

		By("a first reconcile creating the device")
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(getPM(pm).Spec.ProviderID).NotTo(BeEmpty())
		queued := getPM(pm).Status.InstanceStatus

		By("the device moves on, and Cluster API labels the PacketMachine after the copy a reconcile starts from")
		sim.Advance(time.Minute)
		time.Sleep(testPollMin) // past the device snapshot's age limit: the next look lists again
		stale := getPM(pm)
		patchLabels(getPM(pm), filter+"-relabelled")
		r.Client = &staleReads{Client: k8sClient, stale: stale}
		res, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "a conflict is not a failure: an error would double the machine's backoff")
		Expect(res.RequeueAfter).To(Equal(conflictRetry))
		live := getPM(pm)
		Expect(live.Status.InstanceStatus).To(Equal(queued), "the older copy's status was not written")
		Expect(live.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/watch-filter", filter+"-relabelled"))

		By("the retry, from the newer copy")
		r.Client = k8sClient
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(getPM(pm).Status.InstanceStatus).NotTo(Equal(queued))
		Expect(getPM(pm).Labels).To(HaveKeyWithValue("cluster.x-k8s.io/watch-filter", filter+"-relabelled"))
	})
})

// staleReads answers reads of one PacketMachine with an older copy of it, as an informer cache
// that has not seen the latest write yet would.
type staleReads struct {
	client.Client
	stale *infrav1.PacketMachine
}

func (c *staleReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if pm, ok := obj.(*infrav1.PacketMachine); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(pm)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
