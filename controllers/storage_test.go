package controllers

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

var _ = Describe("PacketMachine storage", func() {
	It("sends the disk layout with the device create, byte for byte, and says what Packet refuses of one", func() {
		mc := newMachineCluster(infrav1.PacketClusterSpec{})
		layout := &infrav1.Storage{
			Disks: []infrav1.StorageDisk{
				{Device: "/dev/sda", WipeTable: true, Partitions: []infrav1.StoragePartition{{Label: "ROOTA", Number: 1, Size: "32G"}, {Label: "ETCDA", Number: 2, Size: "0"}}},
				{Device: "/dev/sdb", WipeTable: true, Partitions: []infrav1.StoragePartition{{Label: "ROOTB", Number: 1, Size: "32G"}, {Label: "ETCDB", Number: 2, Size: "0"}}},
			},
			RAID: []infrav1.StorageRAID{
				{Devices: []string{"/dev/sda1", "/dev/sdb1"}, Level: "1", Name: "/dev/md/ROOT"},
				{Devices: []string{"/dev/sda2", "/dev/sdb2"}, Level: "1", Name: "/dev/md/ETCD"},
			},
			Filesystems: []infrav1.StorageFilesystem{
				{Mount: infrav1.StorageMount{Device: "/dev/md/ROOT", Format: "ext4", Point: "/", Options: []string{"-L", "ROOT"}}},
				{Mount: infrav1.StorageMount{Device: "/dev/md/ETCD", Format: "ext4", Point: "/var/lib/etcd"}},
			},
		}
		pm := mc.createMachine("raid", machineOpts{controlPlane: true,
			spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", Storage: layout}})
		want, err := json.Marshal(getPM(pm).Spec.Storage)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(oneDevice(pm).Storage)).To(Equal(string(want)), "Packet keeps the document it was sent")
		Expect(string(want)).To(ContainSubstring(`"mount":{"device":"/dev/md/ROOT","format":"ext4","point":"/","options":["-L","ROOT"]}`),
			"in the Metal API spec's shape")

		By("a layout of more disks than the plan's servers have")
		three := layout.DeepCopy()
		three.Disks = append(three.Disks, infrav1.StorageDisk{Device: "/dev/sdc"})
		big := mc.createMachine("three-disks", machineOpts{spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", Storage: three}})
		Eventually(machineCondition(big, infrav1.DeviceReadyCondition), eventually).Should(And(
			haveReason(infrav1.InvalidRequestReason), HaveField("Message", ContainSubstring("Storage names 3 disks; plan c3.small.x86 has 2"))))
		Expect(devicesOf(big)).To(BeEmpty())

		By("a template of such a layout says so before any machine is made of it")
		pmt := &infrav1.PacketMachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "three-disks", Namespace: mc.ns,
				Labels: map[string]string{clusterv1.ClusterNameLabel: mc.name, clusterv1.WatchLabel: machineSuiteFilter}},
			Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
				Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", Storage: three}}},
		}
		Expect(k8sClient.Create(ctx, pmt)).To(Succeed())
		Eventually(eventReasons(pmt), eventually).Should(ContainElement("StorageExceedsPlan"))
	})
})
