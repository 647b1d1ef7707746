package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// Fixtures of what the previous provider's v0.9.0 (sigs.k8s.io/cluster-api-provider-packet
// v0.9.0) leaves behind, as its manager writes them.

// v090Time is a lastTransitionTime of the previous provider's conditions.
const v090Time = "2026-01-01T00:00:00Z"

// v090Condition is a condition as v0.9.0 writes it (Cluster API v1beta1): one that is True has
// neither reason nor message; a False one has a severity.
func v090Condition(conditionType string) map[string]any {
	return map[string]any{"type": conditionType, "status": "True", "lastTransitionTime": v090Time}
}

// writeAsV090 writes obj's status as the previous provider left it. Its CRD took what our
// schema refuses (conditions without a reason, fields we do not have), and a migration installs
// our CRD over objects stored under its: so the status is written while the CRD takes any status,
// and ours is put back before the spec goes on. The object keeps what it was stored with, as in
// etcd after a migration.
func writeAsV090(kind string, obj client.Object, status map[string]any) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	key := client.ObjectKey{Name: crdName(kind)}
	Expect(k8sClient.Get(ctx, key, crd)).To(Succeed())
	ours := crd.Spec.DeepCopy()
	restore := func() {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8sClient.Get(ctx, key, cur)).To(Succeed())
		cur.Spec = *ours.DeepCopy()
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
	}
	DeferCleanup(restore) // should the spec fail halfway, the suite goes on with our schema
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"] = apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: ptr.To(true)}
	}
	Expect(k8sClient.Update(ctx, crd)).To(Succeed())

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(infrav1.GroupVersion.WithKind(kind))
	// The API server takes a moment to serve the changed schema.
	Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
			return err
		}
		u.Object["status"] = status
		return k8sClient.Status().Update(ctx, u)
	}, eventually, 100*time.Millisecond).Should(Succeed())

	restore()
	// Ours is served again once it refuses a changed condition without a reason (an unchanged
	// one it lets through: validation ratcheting).
	Eventually(func() bool {
		probe := u.DeepCopy()
		conds, _, _ := unstructured.NestedSlice(probe.Object, "status", "conditions")
		changed := v090Condition("Probe")
		probe.Object["status"].(map[string]any)["conditions"] = append(conds, changed)
		err := k8sClient.Status().Update(ctx, probe, client.DryRunAll)
		return apierrors.IsInvalid(err)
	}, eventually, 100*time.Millisecond).Should(BeTrue(), "our CRD's schema is served again")
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
}

func crdName(kind string) string {
	return map[string]string{"PacketCluster": "packetclusters", "PacketMachine": "packetmachines"}[kind] +
		"." + infrav1.GroupVersion.Group
}
