package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/device"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/sshkeys"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const testPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVzZXIta2V5LWZvci10aGUtbWFjaGluZS10ZXN0cw== user@test"

var _ = Describe("PacketMachine reconciler", func() {
	AfterEach(func() { sim.ClearFaults() })

	It("creates the device with the exact request, reports it provisioned, and deletes it only once Packet has", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		projectKey := sim.SSHKeys(simProject)[0]
		bootstrap := "#cloud-config\nwrite_files:\n- path: /etc/x\n  content: \"{ not a template }\"\n"
		pm := mc.createMachine("w1", machineOpts{bootstrap: bootstrap, spec: infrav1.PacketMachineSpec{
			BillingCycle: "hourly",
			Tags:         []string{"team:infra", "env:test"},
			SSHKeys:      []string{projectKey.ID, testPublicKey},
			CustomData:   &apiextensionsv1.JSON{Raw: []byte(`{"role":"worker"}`)},
		}})

		dev := oneDevice(pm)
		pm = getPM(pm)
		Expect(dev.Hostname).To(Equal("pm-w1"))
		Expect(dev.Plan).To(Equal("c3.small.x86"))
		Expect(dev.OS).To(Equal("ubuntu_24_04"))
		Expect(dev.Metro).To(Equal("sv"))
		Expect(dev.BillingCycle).To(Equal("hourly"))
		Expect(dev.UserData).To(Equal(bootstrap), "user-data without template actions passes byte for byte")
		Expect(dev.IPXEScriptURL).To(BeEmpty())
		Expect(dev.CustomData).To(HaveKeyWithValue("role", "worker"))
		Expect(dev.Tags).To(Equal([]string{
			infrav1.MachineTag(pm.Annotations[infrav1.MachineIdentityAnnotation]), infrav1.ClusterTag(mc.ns, "c1"), infrav1.RoleTag(false), "team:infra", "env:test",
			managementClusterTag(),
		}))
		Expect(pm.Annotations[infrav1.MachineIdentityAnnotation]).To(HaveLen(36), "a random UUID, not the UID or the name")
		Expect(pm.Annotations[infrav1.MachineIdentityAnnotation]).NotTo(Equal(string(pm.UID)))
		// The public key is registered once as a project key, found by fingerprint next time.
		fp, err := sshkeys.Fingerprint(testPublicKey)
		Expect(err).NotTo(HaveOccurred())
		var registered string
		for _, k := range sim.SSHKeys(simProject) {
			if k.Fingerprint == fp {
				registered = k.ID
			}
		}
		Expect(registered).NotTo(BeEmpty())
		Expect(dev.SSHKeyIDs).To(ConsistOf(projectKey.ID, registered))
		Eventually(func() string { return getPM(pm).Spec.ProviderID }, eventually).Should(Equal("equinixmetal://" + dev.ID))

		isProvisioned(pm)
		pm = getPM(pm)
		Expect(pm.Status.InstanceStatus).To(Equal("active"))
		Expect(pm.Status.FailureDomain).To(HavePrefix("sv"))
		Expect(pm.Status.Addresses).To(ContainElements(
			HaveField("Type", clusterv1.MachineExternalIP), HaveField("Type", clusterv1.MachineInternalIP),
			clusterv1.MachineAddress{Type: clusterv1.MachineHostName, Address: "pm-w1"}))
		Expect(conditions.IsTrue(pm, clusterv1.ReadyCondition)).To(BeTrue())
		Expect(conditions.Get(pm, infrav1.ElasticIPAssignedCondition)).To(haveReason(infrav1.NotNeededReason))
		Expect(conditions.Get(pm, infrav1.BGPSessionReadyCondition)).To(haveReason(infrav1.NotNeededReason))
		Expect(pm.Annotations).NotTo(HaveKey(device.CreateStartedAnnotation))
		Eventually(eventReasons(pm), eventually).Should(ContainElements("DeviceCreated", "DeviceActive"))

		By("reading it the way Cluster API's Machine controller does")
		machine := &clusterv1.Machine{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: "w1"}, machine)).To(Succeed())
		u, err := external.GetObjectFromContractVersionedRef(ctx, k8sClient, machine.Spec.InfrastructureRef, mc.ns)
		Expect(err).NotTo(HaveOccurred())
		provisioned, found, err := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned")
		Expect(err).NotTo(HaveOccurred())
		Expect(found && provisioned).To(BeTrue())
		providerID, _, _ := unstructured.NestedString(u.Object, "spec", "providerID")
		Expect(providerID).To(Equal("equinixmetal://" + dev.ID))
		ready, err := conditions.UnstructuredGet(u, clusterv1.ReadyCondition)
		Expect(err).NotTo(HaveOccurred())
		Expect(ready).To(HaveField("Status", BeEquivalentTo("True")))

		By("a second machine with the same public key reuses the registered key")
		pm2 := mc.createMachine("w2", machineOpts{spec: infrav1.PacketMachineSpec{SSHKeys: []string{testPublicKey}}})
		Expect(oneDevice(pm2).SSHKeyIDs).To(ConsistOf(registered))

		By("deleting: the PacketMachine stays while the device deprovisions")
		Expect(k8sClient.Delete(ctx, getPM(pm))).To(Succeed())
		Eventually(func() string { d, _ := sim.Device(dev.ID); return d.State }, eventually).Should(Equal("deprovisioning"))
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), &infrav1.PacketMachine{}) },
			time.Second).Should(Succeed())
		deleteAndWait(pm)
		_, exists := sim.Device(dev.ID)
		Expect(exists).To(BeFalse())
		deleteAndWait(pm2)
	})

	It("passes ignition and cloud-init Jinja through, renders CAPP template keys, and names the expression of a mixed payload", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		exposeOwnKey(mc)
		ignition := `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,{{ .apiKey }}"}}]}}`
		pmIgn := mc.createMachine("ign", machineOpts{bootstrap: ignition, format: "ignition", spec: infrav1.PacketMachineSpec{OS: "flatcar_stable"}})
		Expect(oneDevice(pmIgn).UserData).To(Equal(ignition))

		tmpl := "#cloud-config\nk8s: {{ .kubernetesVersion }}\nendpoint: {{ .controlPlaneEndpoint }}\nkey: {{ .apiKey }}\n"
		pmCP := mc.createMachine("cp", machineOpts{controlPlane: true, bootstrap: tmpl})
		endpoint := getPacketCluster(mc.ns, "c1").Spec.ControlPlaneEndpoint.Host
		Expect(oneDevice(pmCP).UserData).To(Equal("#cloud-config\nk8s: v1.33.1\nendpoint: " + endpoint + "\nkey: " + packetsim.DefaultToken + "\n"))

		jinja := "## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.hostname }}\nid: {{ v1.instance_id }}\n"
		pmJinja := mc.createMachine("jinja", machineOpts{bootstrap: jinja})
		Expect(oneDevice(pmJinja).UserData).To(Equal(jinja), "cloud-init Jinja reaches the device untouched")

		pmBad := mc.createMachine("bad", machineOpts{bootstrap: "#cloud-config\nx: {{ .kubernetesVersion }} {{ v1.instance_id }}\n"})
		Eventually(machineCondition(pmBad, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.BootstrapDataInvalidReason), HaveField("Message", ContainSubstring("with cloud-init Jinja {{ v1.instance_id }}"))))
		Expect(devicesOf(pmBad)).To(BeEmpty())

		By("fixing the bootstrap Secret: acted on at once (the Secret is watched), not at the slow retry")
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: "bad-bootstrap"}, secret)).To(Succeed())
		secret.Data["value"] = []byte("#cloud-config\nx: {{ .kubernetesVersion }}\n")
		Expect(k8sClient.Update(ctx, secret)).To(Succeed())
		Expect(oneDevice(pmBad).UserData).To(Equal("#cloud-config\nx: v1.33.1\n"))
	})

	It("never puts the manager's own API key in user-data", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{ExposeAPIKeyInUserData: true}) // no credentialsRef; webhooks are off here
		pm := mc.createMachine("cp", machineOpts{controlPlane: true, bootstrap: "#cloud-config\nkey: {{ .apiKey }}\n"})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.APIKeyNotExposableReason), HaveField("Message", ContainSubstring("never the manager's"))))
		Consistently(func() int { return createsFor(pm) }, time.Second, 100*time.Millisecond).Should(BeZero())

		By("with the cluster's own key in a credentialsRef Secret its owner did not annotate, still not")
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-key", Namespace: mc.ns},
			Data: map[string][]byte{"apiKey": []byte(packetsim.DefaultToken)}})).To(Succeed())
		pc := getPacketCluster(mc.ns, mc.name)
		orig := pc.DeepCopy()
		pc.Spec.CredentialsRef = &infrav1.SecretReference{Name: "team-key"}
		Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.APIKeyNotExposableReason), HaveField("Message", ContainSubstring(infrav1.ExposeInUserDataAnnotation))))
		Consistently(func() int { return createsFor(pm) }, time.Second, 100*time.Millisecond).Should(BeZero())

		By("with the cluster's own key in a credentialsRef Secret that allows it, that key is exposed")
		exposeOwnKey(mc)
		Expect(oneDevice(pm).UserData).To(Equal("#cloud-config\nkey: " + packetsim.DefaultToken + "\n"))
	})

	It("says, with a Warning event, that {{ .apiKey }} rendered empty and what to set", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("cp", machineOpts{controlPlane: true, bootstrap: "#cloud-config\nkey: '{{ .apiKey }}'\n"})
		Expect(oneDevice(pm).UserData).To(Equal("#cloud-config\nkey: ''\n"), "the device is created: the template asked, it gets nothing")
		Eventually(eventReasons(pm), eventually).Should(ContainElement(infrav1.APIKeyNotInUserDataReason))
		events := &corev1.EventList{}
		Expect(k8sClient.List(ctx, events, client.InNamespace(mc.ns))).To(Succeed())
		Expect(events.Items).To(ContainElement(And(HaveField("Reason", infrav1.APIKeyNotInUserDataReason), HaveField("Type", corev1.EventTypeWarning),
			HaveField("Message", And(ContainSubstring("spec.credentialsRef"), ContainSubstring("spec.exposeAPIKeyInUserData"))))))

		By("a payload that does not name the key gets no such event")
		plain := mc.createMachine("plain", machineOpts{controlPlane: true, bootstrap: "#cloud-config\nk8s: {{ .kubernetesVersion }}\n"})
		oneDevice(plain)
		Consistently(eventReasons(plain), time.Second).ShouldNot(ContainElement(infrav1.APIKeyNotInUserDataReason))
	})

	It("sends ipxe_script_url and always_pxe for custom_ipxe", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("ipxe", machineOpts{spec: infrav1.PacketMachineSpec{
			OS: "custom_ipxe", IPXEUrl: "http://boot.example/boot.ipxe", AlwaysPXE: true}})
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pm), pm)).To(Succeed())
		Eventually(func() []packetsim.Device { return devicesOf(pm) }, eventually).Should(HaveLen(1))
		dev := devicesOf(pm)[0]
		Expect(dev.IPXEScriptURL).To(Equal("http://boot.example/boot.ipxe"))
		Expect(dev.AlwaysPXE).To(BeTrue())
	})

	It("places the device in the Machine's failure domain", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		pm := mc.createMachine("fd", machineOpts{failureDomain: "sv16"})
		Expect(oneDevice(pm).Facility).To(Equal("sv16"))
		isProvisioned(pm)
		Expect(getPM(pm).Status.FailureDomain).To(Equal("sv16"))
	})

	It("waits, with a reason, for the cluster's infrastructure and the bootstrap data", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		mc.setInfrastructureProvisioned(false)
		pm := mc.createMachine("wait", machineOpts{noBootstrap: true})
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(haveReason(infrav1.WaitingForClusterInfrastructureReason))

		mc.setInfrastructureProvisioned(true)
		Eventually(machineCondition(pm, infrav1.DeviceReadyCondition), eventually).Should(haveReason(infrav1.WaitingForBootstrapDataReason))
		Expect(devicesOf(pm)).To(BeEmpty())

		machine := &clusterv1.Machine{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: mc.ns, Name: "wait"}, machine)).To(Succeed())
		base := machine.DeepCopy()
		machine.Spec.Bootstrap.DataSecretName = ptrTo("wait-bootstrap")
		Expect(k8sClient.Patch(ctx, machine, client.MergeFrom(base))).To(Succeed())
		oneDevice(pm)
	})
})

func ptrTo[T any](v T) *T { return &v }

// exposeOwnKey gives the cluster its own credentials Secret (holding the simulator's key, its
// owner allowing it in user-data) and turns exposeAPIKeyInUserData on.
func exposeOwnKey(mc *machineCluster) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "own-key", Namespace: mc.ns,
		Annotations: map[string]string{infrav1.ExposeInUserDataAnnotation: "true"}},
		Data: map[string][]byte{"apiKey": []byte(packetsim.DefaultToken)}})).To(Succeed())
	pc := getPacketCluster(mc.ns, mc.name)
	orig := pc.DeepCopy()
	pc.Spec.CredentialsRef, pc.Spec.ExposeAPIKeyInUserData = &infrav1.SecretReference{Name: "own-key"}, true
	Expect(k8sClient.Patch(ctx, pc, client.MergeFrom(orig))).To(Succeed())
}
