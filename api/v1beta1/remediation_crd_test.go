package v1beta1_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

var _ = Describe("PacketRemediation", func() {
	It("is what a MachineHealthCheck clones from a PacketRemediationTemplate", func() {
		ns := newNamespace()
		tmpl := &infrav1.PacketRemediationTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "reboot-first", Namespace: ns},
			Spec: infrav1.PacketRemediationTemplateSpec{Template: infrav1.PacketRemediationTemplateResource{
				Spec: infrav1.PacketRemediationSpec{Strategy: []infrav1.RemediationStep{
					{Type: infrav1.RemediationStepReboot, Timeout: &metav1.Duration{Duration: 3 * time.Minute}, Attempts: ptr.To[int32](2)},
					{Type: infrav1.RemediationStepReplace},
				}},
			}},
		}
		Expect(testEnv.Client.Create(ctx, tmpl)).To(Succeed())

		// As the MachineHealthCheck does (core/reconcilers/machinehealthcheck, Cluster API v1.14.2).
		ref := &corev1.ObjectReference{APIVersion: infrav1.GroupVersion.String(), Kind: "PacketRemediationTemplate",
			Name: tmpl.Name, Namespace: ns}
		from, err := external.Get(ctx, testEnv.Client, ref)
		Expect(err).NotTo(HaveOccurred())
		to, err := external.GenerateTemplate(&external.GenerateTemplateInput{Template: from, TemplateRef: ref,
			Namespace: ns, ClusterName: "c1",
			OwnerRef: &metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: "m1",
				UID: "6b1d6c52-8d6e-4f0f-9a53-000000000002"}})
		Expect(err).NotTo(HaveOccurred())
		to.SetName("m1")
		Expect(to.GetKind()).To(Equal(strings.TrimSuffix(ref.Kind, clusterv1.TemplateSuffix)))
		Expect(testEnv.Client.Create(ctx, to)).To(Succeed())

		got := &infrav1.PacketRemediation{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, got)).To(Succeed())
		Expect(got.Spec).To(Equal(tmpl.Spec.Template.Spec))
		Expect(got.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "c1"))
		Expect(got.OwnerReferences).To(HaveLen(1))
	})

	It("defaults to reboot, reinstall, replace with 5m, 20m and one try each", func() {
		s := infrav1.PacketRemediationSpec{}.StrategyOrDefault()
		Expect(s).To(HaveLen(3))
		Expect([]infrav1.RemediationStepType{s[0].Type, s[1].Type, s[2].Type}).To(Equal([]infrav1.RemediationStepType{
			infrav1.RemediationStepReboot, infrav1.RemediationStepReinstall, infrav1.RemediationStepReplace}))
		Expect(s[0].TimeoutOrDefault()).To(Equal(5 * time.Minute))
		Expect(s[1].TimeoutOrDefault()).To(Equal(20 * time.Minute))
		Expect(s[0].AttemptsOrDefault()).To(Equal(int32(1)))
	})

	It("refuses unknown steps, zero attempts and steps after Replace; an omitted strategy is the default", func() {
		ns := newNamespace()
		for i, strategy := range [][]infrav1.RemediationStep{
			{{Type: "Rebuild"}},
			{{Type: infrav1.RemediationStepReboot, Attempts: ptr.To[int32](0)}},
			{{Type: infrav1.RemediationStepReplace}, {Type: infrav1.RemediationStepReboot}},
			{{Type: infrav1.RemediationStepReplace}, {Type: infrav1.RemediationStepReplace}},
			{},
		} {
			rem := &infrav1.PacketRemediation{ObjectMeta: metav1.ObjectMeta{Name: "r" + string(rune('a'+i)), Namespace: ns},
				Spec: infrav1.PacketRemediationSpec{Strategy: strategy}}
			if len(strategy) == 0 {
				// An empty list is omitted, so it means the default; a JSON [] is refused.
				Expect(testEnv.Client.Create(ctx, rem)).To(Succeed())
				continue
			}
			err := testEnv.Client.Create(ctx, rem)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "strategy %v: %v", strategy, err)
		}
	})
})
