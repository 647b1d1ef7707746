package webhooks_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

const (
	projectUUID = "a3b8c1d2-0000-4000-8000-000000000001"
	resUUID     = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	deviceUUID  = "7a1c2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// expectRejected asserts that err is the Invalid error the API server returns for a webhook
// rejection, with a cause at field whose message contains msg.
func expectRejected(err error, field, msg string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an Invalid (422) error, got %v", err)
	status, ok := err.(apierrors.APIStatus) //nolint:errorlint // the client returns the status error itself
	Expect(ok).To(BeTrue())
	Expect(status.Status().Details).NotTo(BeNil())
	var causes []string
	for _, c := range status.Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
		causes = append(causes, c.Field+": "+c.Message)
	}
	Fail("no cause at " + field + " containing " + msg + "; causes: " + strings.Join(causes, " | "))
}

func cluster(ns string, mutate func(*infrav1.PacketClusterSpec)) *infrav1.PacketCluster {
	c := &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pc-", Namespace: ns},
		Spec:       infrav1.PacketClusterSpec{ProjectID: projectUUID, Metro: "da"},
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

func machine(ns string, mutate func(*infrav1.PacketMachineSpec)) *infrav1.PacketMachine {
	m := &infrav1.PacketMachine{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pm-", Namespace: ns},
		Spec:       infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"},
	}
	if mutate != nil {
		mutate(&m.Spec)
	}
	return m
}

var _ = Describe("PacketCluster webhooks", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("defaults vipManager, elasticIPReclaimPolicy and the port of a given host", func() {
		c := cluster(ns, func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "api.example.com"}
		})
		Expect(k8s.Create(ctx, c)).To(Succeed())
		got := &infrav1.PacketCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		Expect(got.Spec.VIPManager).To(Equal(infrav1.CPEMVIPManager))
		Expect(got.Spec.ElasticIPReclaimPolicy).To(Equal(infrav1.ElasticIPReclaimDelete))
		Expect(got.Spec.ControlPlaneEndpoint).To(Equal(clusterv1.APIEndpoint{Host: "api.example.com", Port: 6443}))
	})

	DescribeTable("rejects an invalid PacketCluster on create",
		func(mutate func(*infrav1.PacketClusterSpec), field, msg string) {
			expectRejected(k8s.Create(ctx, cluster(ns, mutate)), field, msg)
		},
		Entry("no location", func(s *infrav1.PacketClusterSpec) { s.Metro = "" }, "spec.metro", "set the Packet metro"),
		Entry("metro and facility", func(s *infrav1.PacketClusterSpec) { s.Facility = "da11" }, "spec.facility", "mutually exclusive"),
		Entry("EMLB in a metro without load balancers", func(s *infrav1.PacketClusterSpec) { s.VIPManager, s.Metro = infrav1.EMLBVIPManager, "fr" },
			"spec.metro", `supported values: "am", "da", "dc", "ny", "sg", "sv"`),
		Entry("EMLB in a facility", func(s *infrav1.PacketClusterSpec) {
			s.VIPManager, s.Metro, s.Facility = infrav1.EMLBVIPManager, "", "da11"
		}, "spec.metro", "vipManager EMLB needs a metro"),
		Entry("a host with a scheme", func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "https://api.example.com", Port: 6443}
		}, "spec.controlPlaneEndpoint.host", "must be an IP address or a DNS name"),
		Entry("a port without a host", func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Port: 6443}
		}, "spec.controlPlaneEndpoint.host", "a port needs a host"),
	)

	It("relays the deprecation warning for facility", func() {
		warnings.take()
		Expect(k8s.Create(ctx, cluster(ns, func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da11" }))).To(Succeed())
		Expect(warnings.take()).To(ContainElement(ContainSubstring("spec.facility is deprecated")))
	})

	It("rejects changes to projectID, vipManager and a set endpoint, and accepts the controller setting the endpoint", func() {
		c := cluster(ns, nil)
		Expect(k8s.Create(ctx, c)).To(Succeed())

		base := c.DeepCopy()
		c.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 6443}
		Expect(k8s.Patch(ctx, c, client.MergeFrom(base))).To(Succeed())

		changed := c.DeepCopy()
		changed.Spec.ProjectID = "b3b8c1d2-0000-4000-8000-000000000002"
		expectRejected(k8s.Update(ctx, changed), "spec.projectID", "cannot change")

		changed = c.DeepCopy()
		changed.Spec.VIPManager = infrav1.KubeVIPVIPManager
		expectRejected(k8s.Update(ctx, changed), "spec.vipManager", "cannot change from CPEM")

		changed = c.DeepCopy()
		changed.Spec.ControlPlaneEndpoint.Host = "203.0.113.11"
		expectRejected(k8s.Update(ctx, changed), "spec.controlPlaneEndpoint", "cannot change once set")
	})

	It("lets elasticIPReclaimPolicy change before deletion but not during it", func() {
		c := cluster(ns, func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = infrav1.ElasticIPReclaimRetain })
		c.Finalizers = []string{infrav1.PacketClusterFinalizer}
		Expect(k8s.Create(ctx, c)).To(Succeed())

		base := c.DeepCopy()
		c.Spec.ElasticIPReclaimPolicy = infrav1.ElasticIPReclaimDelete
		Expect(k8s.Patch(ctx, c, client.MergeFrom(base))).To(Succeed())

		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		Expect(c.DeletionTimestamp.IsZero()).To(BeFalse())

		base = c.DeepCopy()
		c.Spec.ElasticIPReclaimPolicy = infrav1.ElasticIPReclaimRetain
		expectRejected(k8s.Patch(ctx, c, client.MergeFrom(base)), "spec.elasticIPReclaimPolicy",
			"cannot change while the PacketCluster is being deleted")

		// Removing the finalizer (what the controller does last) is still accepted.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		base = c.DeepCopy()
		c.Finalizers = nil
		Expect(k8s.Patch(ctx, c, client.MergeFrom(base))).To(Succeed())
	})
})

var _ = Describe("PacketMachine webhooks", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("defaults billingCycle to hourly", func() {
		m := machine(ns, nil)
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Expect(m.Spec.BillingCycle).To(Equal("hourly"))
	})

	DescribeTable("rejects an invalid PacketMachine on create",
		func(mutate func(*infrav1.PacketMachineSpec), field, msg string) {
			expectRejected(k8s.Create(ctx, machine(ns, mutate)), field, msg)
		},
		Entry("metro and facility", func(s *infrav1.PacketMachineSpec) { s.Metro, s.Facility = "da", "da11" }, "spec.facility", "mutually exclusive"),
		Entry("ipxeURL without custom_ipxe", func(s *infrav1.PacketMachineSpec) { s.IPXEUrl = "https://boot.example.com/x" },
			"spec.ipxeURL", `is only used with os "custom_ipxe"`),
		Entry("custom_ipxe without ipxeURL", func(s *infrav1.PacketMachineSpec) { s.OS = "custom_ipxe" },
			"spec.ipxeURL", "boots the iPXE script at ipxeURL"),
		// The CRD's enum and length limits reject these before the webhook sees them; the user
		// still gets the field path.
		Entry("unknown billingCycle", func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "weekly" }, "spec.billingCycle", "supported values"),
		Entry("a tag longer than 255", func(s *infrav1.PacketMachineSpec) { s.Tags = []string{strings.Repeat("t", 256)} }, "spec.tags[0]", "255"),
		Entry("malformed hardwareReservationID", func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resUUID + ",,x" },
			"spec.hardwareReservationID", "entry 2 of the list is empty"),
		Entry("a duplicate tag", func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"a", "a"} }, "spec.tags[1]", "Duplicate value"),
	)

	It("accepts the controller's and the migration's updates, and rejects every other spec change", func() {
		m := machine(ns, func(s *infrav1.PacketMachineSpec) {
			s.Facility, s.HardwareReservationID = "da11", "next-available"
		})
		Expect(k8s.Create(ctx, m)).To(Succeed())

		base := m.DeepCopy()
		m.Spec.ProviderID = infrav1.ProviderIDPrefix + deviceUUID
		Expect(k8s.Patch(ctx, m, client.MergeFrom(base))).To(Succeed())

		base = m.DeepCopy()
		m.Spec.Facility, m.Spec.Metro = "", "da"
		Expect(k8s.Patch(ctx, m, client.MergeFrom(base))).To(Succeed())

		for field, change := range map[string]func(*infrav1.PacketMachineSpec){
			"spec.os":                    func(s *infrav1.PacketMachineSpec) { s.OS = "flatcar_stable" },
			"spec.machineType":           func(s *infrav1.PacketMachineSpec) { s.MachineType = "m3.large.x86" },
			"spec.billingCycle":          func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "monthly" },
			"spec.hardwareReservationID": func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resUUID },
			"spec.sshKeys":               func(s *infrav1.PacketMachineSpec) { s.SSHKeys = []string{"ssh-ed25519 AAAA"} },
			"spec.metro":                 func(s *infrav1.PacketMachineSpec) { s.Metro = "sv" },
			"spec.tags":                  func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"team:a"} },
			"spec.providerID":            func(s *infrav1.PacketMachineSpec) { s.ProviderID = infrav1.ProviderIDPrefix + resUUID },
		} {
			changed := m.DeepCopy()
			change(&changed.Spec)
			expectRejected(k8s.Update(ctx, changed), field, "")
		}
	})
})

var _ = Describe("Template webhooks", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("keeps a PacketMachineTemplate's spec immutable except for Cluster API's topology dry run", func() {
		t := &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pmt-", Namespace: ns},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86"},
			}},
		}
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Expect(t.Spec.Template.Spec.BillingCycle).To(Equal("hourly"))

		changed := t.DeepCopy()
		changed.Spec.Template.Spec.MachineType = "m3.large.x86"
		expectRejected(k8s.Update(ctx, changed), "spec.template.spec.machineType", "PacketMachineTemplate spec.template.spec is immutable")
		expectRejected(k8s.Update(ctx, changed, client.DryRunAll), "spec.template.spec.machineType", "is immutable")

		changed.Annotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
		Expect(k8s.Update(ctx, changed, client.DryRunAll)).To(Succeed())

		changed = t.DeepCopy()
		changed.Spec.Template.ObjectMeta.Labels = map[string]string{"role": "worker"}
		Expect(k8s.Update(ctx, changed)).To(Succeed())

		changed.Spec.Template.ObjectMeta.Labels = map[string]string{"role": "not valid!"}
		expectRejected(k8s.Update(ctx, changed), "spec.template.metadata.labels", "")
	})

	It("rejects a providerID in a PacketMachineTemplate", func() {
		t := &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pmt-", Namespace: ns},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", ProviderID: infrav1.ProviderIDPrefix + deviceUUID},
			}},
		}
		expectRejected(k8s.Create(ctx, t), "spec.template.spec.providerID", "must be empty in a template")
	})

	It("rejects, through the kube-apiserver, a PacketMachineTemplate whose RAID 1 array has one device", func() {
		storage := &infrav1.Storage{
			Disks: []infrav1.StorageDisk{{Device: "/dev/sda", Partitions: []infrav1.StoragePartition{{Label: "ROOT", Number: 1, Size: "0"}}}},
			RAID:  []infrav1.StorageRAID{{Devices: []string{"/dev/sda1"}, Level: "1", Name: "/dev/md/ROOT"}},
		}
		t := &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pmt-", Namespace: ns},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", Storage: storage},
			}},
		}
		expectRejected(k8s.Create(ctx, t), "spec.template.spec.storage.raid[0].devices", "RAID 1 needs at least 2 devices")
	})

	It("keeps a PacketClusterTemplate's spec immutable except for Cluster API's topology dry run", func() {
		t := &infrav1.PacketClusterTemplate{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "pct-", Namespace: ns},
			Spec: infrav1.PacketClusterTemplateSpec{Template: infrav1.PacketClusterTemplateResource{
				Spec: infrav1.PacketClusterSpec{ProjectID: projectUUID},
			}},
		}
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Expect(t.Spec.Template.Spec.VIPManager).To(Equal(infrav1.CPEMVIPManager))

		changed := t.DeepCopy()
		changed.Spec.Template.Spec.Metro = "sv"
		expectRejected(k8s.Update(ctx, changed), "spec.template.spec", "PacketClusterTemplate spec.template.spec is immutable")

		changed.Annotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
		Expect(k8s.Update(ctx, changed, client.DryRunAll)).To(Succeed())

		changed = t.DeepCopy()
		changed.Spec.Template.Spec.VIPManager = "METALLB"
		changed.Annotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
		expectRejected(k8s.Update(ctx, changed, client.DryRunAll), "spec.template.spec.vipManager", "Unsupported value")
	})
})
