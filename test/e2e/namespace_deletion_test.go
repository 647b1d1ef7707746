package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

var _ = Describe("Namespace deletion", func() {
	It("deletes every device, elastic IP and SSH key of a running cluster with its own credentials, then the namespace goes", func(ctx SpecContext) {
		ns := testNamespace(ctx, "ns-deletion")
		const name = "doomed"

		By("a cluster whose PacketCluster reads its key from a Secret in the namespace (credentialsRef)")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "packet-credentials"},
			Data: map[string][]byte{credentials.APIKeySecretKey: []byte(sandbox.SimToken)}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		applyYAMLEditingPacketCluster(ctx, ns, generateCluster(ctx, ns, name, "", "--control-plane-machine-count", "1", "--worker-machine-count", "1"),
			func(pc map[string]any) error {
				return unstructured.SetNestedField(pc, secret.Name, "spec", "credentialsRef", "name")
			})
		waitClusterAvailable(ctx, ns, name, 1, 1, 4*time.Minute)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.Finalizers).To(ContainElement(credentials.Finalizer(name)),
			"the PacketCluster holds the Secret its machines will delete their devices with")
		Eventually(func(g Gomega) { g.Expect(devicesOf(ctx, g, ns)).To(HaveLen(2)) }).WithContext(ctx).Should(Succeed())

		By("deleting the namespace, as a team leaving the management cluster does")
		start := time.Now()
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(sb.WaitNamespaceDeleted(ctx, ns, 5*time.Minute)).To(Succeed())
		GinkgoWriter.Printf("namespace deletion: %s\n", time.Since(start).Round(time.Second))
		Expect(checkLeaks(ctx, ns)).To(Succeed(), "nothing of the namespace's cluster is left at Packet")
	})
})
