package v1beta1_test

import (
	"encoding/json"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/contract"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

var kinds = []string{"PacketCluster", "PacketClusterTemplate", "PacketMachine", "PacketMachineTemplate",
	"PacketRemediation", "PacketRemediationTemplate"}

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}
	Expect(testEnv.Client.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func fullMachineSpec() infrav1.PacketMachineSpec {
	return infrav1.PacketMachineSpec{
		OS:                    "custom_ipxe",
		BillingCycle:          "hourly",
		MachineType:           "c3.small.x86",
		SSHKeys:               []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@host"},
		Metro:                 "sv",
		IPXEUrl:               "http://boot.example.com/ipxe",
		AlwaysPXE:             true,
		HardwareReservationID: "next-available",
		Tags:                  []string{"team:platform"},
		CustomData:            &apiextensionsv1.JSON{Raw: []byte(`{"rack":"r12"}`)},
	}
}

var _ = Describe("Cluster API contract", func() {
	It("runs on the kube-apiserver and etcd that the Makefile built", func() {
		want := os.Getenv("ENVTEST_K8S_VERSION")
		Expect(want).NotTo(BeEmpty(), "make test exports ENVTEST_K8S_VERSION")
		Expect(testEnv.ServerVersion).To(Equal("v" + want))
		Expect(testEnv.EtcdVersion).To(HavePrefix("etcd Version: 3.6."))
	})

	for _, kind := range kinds {
		It("installs "+kind+" under the name Cluster API computes, with the v1beta2 contract label", func() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			name := contract.CalculateCRDName(infrav1.GroupVersion.Group, kind)
			Expect(testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			Expect(crd.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/v1beta2", "v1beta1"))
			Expect(crd.Spec.Names.Categories).To(ContainElement("cluster-api"))
			Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
			Expect(crd.Spec.Names.ShortNames).To(HaveLen(1))
		})
	}
})

var _ = Describe("Round trip through the kube-apiserver", func() {
	It("keeps every PacketCluster field and applies the schema defaults", func() {
		ns := newNamespace()
		in := &infrav1.PacketCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns},
			Spec: infrav1.PacketClusterSpec{
				ProjectID:              "1b2c3d4e-0000-4000-8000-000000000001",
				Metro:                  "da",
				ControlPlaneEndpoint:   clusterv1.APIEndpoint{Host: "198.51.100.7", Port: 6443},
				VIPManager:             infrav1.KubeVIPVIPManager,
				CredentialsRef:         &infrav1.SecretReference{Name: "packet-creds"},
				ElasticIPReclaimPolicy: infrav1.ElasticIPReclaimRetain,
				BGP:                    &infrav1.BGPSpec{LocalASN: 65001},
			},
		}
		Expect(testEnv.Client.Create(ctx, in.DeepCopy())).To(Succeed())
		out := &infrav1.PacketCluster{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(in), out)).To(Succeed())
		Expect(out.Spec).To(Equal(in.Spec))

		minimal := &infrav1.PacketCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c2", Namespace: ns},
			Spec:       infrav1.PacketClusterSpec{ProjectID: "p", Metro: "sv"},
		}
		Expect(testEnv.Client.Create(ctx, minimal)).To(Succeed())
		Expect(minimal.Spec.VIPManager).To(Equal(infrav1.CPEMVIPManager))
		Expect(minimal.Spec.ElasticIPReclaimPolicy).To(Equal(infrav1.ElasticIPReclaimDelete))
		Expect(minimal.Spec.ControlPlaneEndpoint.IsZero()).To(BeTrue())
	})

	It("keeps every PacketMachine field and its status", func() {
		ns := newNamespace()
		in := &infrav1.PacketMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns},
			Spec:       fullMachineSpec(),
		}
		in.Spec.ProviderID = infrav1.ProviderIDPrefix + "5a7c1f2e-0000-4000-8000-000000000001"
		obj := in.DeepCopy()
		Expect(testEnv.Client.Create(ctx, obj)).To(Succeed())
		obj.Status = infrav1.PacketMachineStatus{
			Initialization:        infrav1.PacketMachineInitializationStatus{Provisioned: ptr.To(true)},
			Addresses:             []clusterv1.MachineAddress{{Type: clusterv1.MachineExternalIP, Address: "198.51.100.8"}},
			InstanceStatus:        "active",
			HardwareReservationID: "8c0e1f2e-0000-4000-8000-000000000001",
			FailureDomain:         "sv15",
			Conditions: []metav1.Condition{{
				Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
			}},
		}
		Expect(testEnv.Client.Status().Update(ctx, obj)).To(Succeed())

		out := &infrav1.PacketMachine{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(in), out)).To(Succeed())
		Expect(out.Spec).To(Equal(in.Spec))
		Expect(out.Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
		Expect(out.Status.Addresses).To(Equal(obj.Status.Addresses))
		Expect(out.Status.FailureDomain).To(Equal("sv15"))
	})

	It("keeps both templates, including the autoscaler's capacity and node info", func() {
		ns := newNamespace()
		mt := &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "mt", Namespace: ns},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"pool": "a"}},
				Spec:       fullMachineSpec(),
			}},
		}
		Expect(testEnv.Client.Create(ctx, mt)).To(Succeed())
		mt.Status = infrav1.PacketMachineTemplateStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")},
			NodeInfo: infrav1.NodeInfo{Architecture: "amd64", OperatingSystem: "linux"},
		}
		Expect(testEnv.Client.Status().Update(ctx, mt)).To(Succeed())
		gotMT := &infrav1.PacketMachineTemplate{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(mt), gotMT)).To(Succeed())
		Expect(gotMT.Spec).To(Equal(mt.Spec))
		Expect(gotMT.Status.Capacity.Cpu().String()).To(Equal("8"))
		Expect(gotMT.Status.NodeInfo.Architecture).To(Equal(infrav1.Architecture("amd64")))

		ct := &infrav1.PacketClusterTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "ct", Namespace: ns},
			Spec: infrav1.PacketClusterTemplateSpec{Template: infrav1.PacketClusterTemplateResource{
				Spec: infrav1.PacketClusterSpec{ProjectID: "p", Metro: "ny", VIPManager: infrav1.CPEMVIPManager,
					ElasticIPReclaimPolicy: infrav1.ElasticIPReclaimDelete},
			}},
		}
		Expect(testEnv.Client.Create(ctx, ct.DeepCopy())).To(Succeed())
		gotCT := &infrav1.PacketClusterTemplate{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(ct), gotCT)).To(Succeed())
		Expect(gotCT.Spec).To(Equal(ct.Spec))
	})
})

var _ = Describe("Schema validation", func() {
	DescribeTable("rejects values outside an enum, naming the field",
		func(kind, field string, obj map[string]any) {
			u := &unstructured.Unstructured{Object: obj}
			u.SetAPIVersion(infrav1.GroupVersion.String())
			u.SetKind(kind)
			u.SetName("bad")
			u.SetNamespace(newNamespace())
			err := testEnv.Client.Create(ctx, u)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(err.Error()).To(ContainSubstring("Unsupported value"))
		},
		Entry("vipManager", "PacketCluster", "spec.vipManager",
			map[string]any{"spec": map[string]any{"projectID": "p", "metro": "sv", "vipManager": "HAPROXY"}}),
		Entry("elasticIPReclaimPolicy", "PacketCluster", "spec.elasticIPReclaimPolicy",
			map[string]any{"spec": map[string]any{"projectID": "p", "metro": "sv", "elasticIPReclaimPolicy": "Keep"}}),
		Entry("billingCycle", "PacketMachine", "spec.billingCycle",
			map[string]any{"spec": map[string]any{"os": "ubuntu_24_04", "machineType": "c3.small.x86", "billingCycle": "weekly"}}),
		Entry("template vipManager", "PacketClusterTemplate", "spec.template.spec.vipManager",
			map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"projectID": "p", "vipManager": "x"}}}}),
	)

	It("requires projectID, os and machineType", func() {
		ns := newNamespace()
		err := testEnv.Client.Create(ctx, &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring("spec.projectID"))
		err = testEnv.Client.Create(ctx, &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue())
		Expect(err.Error()).To(And(ContainSubstring("spec.os"), ContainSubstring("spec.machineType")))
	})
})

// Manifests written for the previous Packet provider's v1beta1 API, as its templates rendered them.
const previousProviderManifests = `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: PacketCluster
metadata:
  name: legacy
spec:
  projectID: 1b2c3d4e-0000-4000-8000-000000000001
  facility: da11
  vipManager: KUBE_VIP
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: PacketMachineTemplate
metadata:
  name: legacy-control-plane
spec:
  template:
    spec:
      os: ubuntu_20_04
      billingCycle: hourly
      machineType: c3.small.x86
      sshKeys:
      - ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQExample user@host
      hardwareReservationID: "8c0e1f2e-0000-4000-8000-000000000001,8c0e1f2e-0000-4000-8000-000000000002"
      tags: []
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: PacketMachine
metadata:
  name: legacy-worker
spec:
  os: custom_ipxe
  ipxeURL: http://boot.example.com/talos.ipxe
  machineType: m3.large.x86
  metro: sv
  providerID: equinixmetal://5a7c1f2e-0000-4000-8000-000000000001
`

var _ = Describe("Manifests of the previous Packet provider", func() {
	It("apply unchanged", func() {
		ns := newNamespace()
		for _, doc := range strings.Split(previousProviderManifests, "\n---\n") {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
			u.SetNamespace(ns)
			Expect(testEnv.Client.Create(ctx, u)).To(Succeed(), "creating %s", u.GetKind())
		}
		pcl := &infrav1.PacketCluster{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy"}, pcl)).To(Succeed())
		Expect(pcl.Spec.Facility).To(Equal("da11"))
		Expect(pcl.Spec.VIPManager).To(Equal(infrav1.KubeVIPVIPManager))
		pma := &infrav1.PacketMachine{}
		Expect(testEnv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-worker"}, pma)).To(Succeed())
		Expect(pma.Spec.IPXEUrl).To(Equal("http://boot.example.com/talos.ipxe"))
	})
})

var _ = Describe("Printer columns", func() {
	// table asks the kube-apiserver for its server-side printout of one object, as kubectl get does.
	table := func(resource, ns, name string) (columns []string, cells []any) {
		cfg := rest.CopyConfig(testEnv.Config)
		cfg.GroupVersion = &schema.GroupVersion{Group: infrav1.GroupVersion.Group, Version: infrav1.GroupVersion.Version}
		cfg.APIPath = "/apis"
		cfg.NegotiatedSerializer = clientNegotiatedSerializer()
		rc, err := rest.RESTClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		raw, err := rc.Get().Namespace(ns).Resource(resource).Name(name).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		t := &metav1.Table{}
		Expect(json.Unmarshal(raw, t)).To(Succeed())
		Expect(t.Rows).To(HaveLen(1))
		for _, c := range t.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		return columns, t.Rows[0].Cells
	}

	It("show real data for a provisioned PacketMachine and PacketCluster", func() {
		ns := newNamespace()
		owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: "machine-0", UID: "6f9b1c1e-0000-4000-8000-000000000001"}
		pma := &infrav1.PacketMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns,
				Labels:          map[string]string{clusterv1.ClusterNameLabel: "c1"},
				OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86",
				ProviderID: infrav1.ProviderIDPrefix + "5a7c1f2e-0000-4000-8000-000000000001"},
		}
		Expect(testEnv.Client.Create(ctx, pma)).To(Succeed())
		pma.Status.InstanceStatus = "active"
		pma.Status.Initialization.Provisioned = ptr.To(true)
		pma.Status.FailureDomain = "sv15"
		pma.Status.Interruptible = true
		pma.Status.Addresses = []clusterv1.MachineAddress{{Type: clusterv1.MachineInternalIP, Address: "10.0.0.3"},
			{Type: clusterv1.MachineExternalIP, Address: "198.51.100.9"}, {Type: clusterv1.MachineHostName, Address: "m"}}
		pma.Status.Conditions = []metav1.Condition{{Type: infrav1.DeviceReadyCondition, Status: metav1.ConditionTrue,
			Reason: infrav1.DeviceActiveReason, LastTransitionTime: metav1.Now()}}
		Expect(testEnv.Client.Status().Update(ctx, pma)).To(Succeed())

		// kubectl get shows the columns of priority 0; -o wide all of them.
		columns, cells := table("packetmachines", ns, "m")
		Expect(columns).To(Equal([]string{"Name", "Cluster", "State", "Provisioned", "ProviderID", "Machine", "Age",
			"Plan", "Facility", "Address", "Spot", "Reason"}))
		Expect(cells[1:6]).To(Equal([]any{"c1", "active", true, pma.Spec.ProviderID, "machine-0"}))
		Expect(cells[6]).NotTo(BeEmpty())
		Expect(cells[7:]).To(Equal([]any{"c3.small.x86", "sv15", "198.51.100.9", true, infrav1.DeviceActiveReason}))

		pcl := &infrav1.PacketCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
			Spec: infrav1.PacketClusterSpec{ProjectID: "p", Metro: "sv",
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "198.51.100.7", Port: 6443}},
		}
		Expect(testEnv.Client.Create(ctx, pcl)).To(Succeed())
		pcl.Status.Initialization.Provisioned = ptr.To(true)
		pcl.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		Expect(testEnv.Client.Status().Update(ctx, pcl)).To(Succeed())

		columns, cells = table("packetclusters", ns, "c1")
		Expect(columns).To(Equal([]string{"Name", "Cluster", "Endpoint", "Provisioned", "Ready", "Age",
			"Metro", "Facility", "VIP Manager", "Project"}))
		Expect(cells[1:5]).To(Equal([]any{"c1", "198.51.100.7", true, "True"}))
		Expect(cells[6:]).To(Equal([]any{"sv", nil, "CPEM", "p"}))
	})
})
