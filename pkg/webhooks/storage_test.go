package webhooks

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// raid1 is the raid flavour's layout: RAID 1 boot and root over two disks, a data array for etcd.
func raid1() *infrav1.Storage {
	disk := func(dev string) infrav1.StorageDisk {
		return infrav1.StorageDisk{Device: dev, WipeTable: true, Partitions: []infrav1.StoragePartition{
			{Label: "BIOS" + dev[len(dev)-1:], Number: 1, Size: "4096"},
			{Label: "ROOT" + dev[len(dev)-1:], Number: 2, Size: "32G"},
			{Label: "ETCD" + dev[len(dev)-1:], Number: 3, Size: "0"},
		}}
	}
	return &infrav1.Storage{
		Disks: []infrav1.StorageDisk{disk("/dev/sda"), disk("/dev/sdb")},
		RAID: []infrav1.StorageRAID{
			{Devices: []string{"/dev/sda2", "/dev/sdb2"}, Level: "1", Name: "/dev/md/ROOT"},
			{Devices: []string{"/dev/sda3", "/dev/sdb3"}, Level: "1", Name: "/dev/md/ETCD"},
		},
		Filesystems: []infrav1.StorageFilesystem{
			{Mount: infrav1.StorageMount{Device: "/dev/md/ROOT", Format: "ext4", Point: "/", Options: []string{"-L", "ROOT"}}},
			{Mount: infrav1.StorageMount{Device: "/dev/md/ETCD", Format: "ext4", Point: "/var/lib/etcd"}},
		},
	}
}

func TestStorageLayoutsPacketWouldRefuseAreRefusedWithTheirFieldPath(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(s *infrav1.Storage)
		field string // "" when valid
		says  string
	}{
		{name: "the raid flavour's layout", edit: func(*infrav1.Storage) {}},
		{name: "nvme partitions are named with a p", edit: func(s *infrav1.Storage) {
			s.Disks = []infrav1.StorageDisk{{Device: "/dev/nvme0n1", Partitions: []infrav1.StoragePartition{{Label: "DATA", Number: 1, Size: "0"}}}}
			s.RAID = nil
			s.Filesystems = []infrav1.StorageFilesystem{{Mount: infrav1.StorageMount{Device: "/dev/nvme0n1p1", Format: "xfs", Point: "/data"}}}
		}},
		{name: "swap has no mount point", edit: func(s *infrav1.Storage) {
			s.Disks[0].Partitions[2].Size = "8G"
			s.Disks[0].Partitions = append(s.Disks[0].Partitions, infrav1.StoragePartition{Label: "SWAP", Number: 4, Size: "0"})
			s.Filesystems = append(s.Filesystems, infrav1.StorageFilesystem{Mount: infrav1.StorageMount{Device: "/dev/sda4", Format: "swap"}})
		}},
		{name: "RAID 1 over one device", edit: func(s *infrav1.Storage) { s.RAID[0].Devices = s.RAID[0].Devices[:1] },
			field: "spec.storage.raid[0].devices", says: "RAID 1 needs at least 2 devices"},
		{name: "RAID 5 over two devices", edit: func(s *infrav1.Storage) { s.RAID[1].Level = "5" },
			field: "spec.storage.raid[1].devices", says: "RAID 5 needs at least 3 devices"},
		{name: "an array of a partition not declared", edit: func(s *infrav1.Storage) { s.RAID[0].Devices[1] = "/dev/sdc2" },
			field: "spec.storage.raid[0].devices[1]", says: "not a partition declared"},
		{name: "a partition in two arrays' device list twice", edit: func(s *infrav1.Storage) { s.RAID[0].Devices[1] = "/dev/sda2" },
			field: "spec.storage.raid[0].devices[1]", says: "Duplicate"},
		{name: "a filesystem on an array not declared", edit: func(s *infrav1.Storage) { s.Filesystems[1].Mount.Device = "/dev/md/DATA" },
			field: "spec.storage.filesystems[1].mount.device", says: "nor an array declared"},
		{name: "two filesystems on one array", edit: func(s *infrav1.Storage) { s.Filesystems[1].Mount.Device = "/dev/md/ROOT" },
			field: "spec.storage.filesystems[1].mount.device", says: "Duplicate"},
		{name: "two filesystems at one point", edit: func(s *infrav1.Storage) { s.Filesystems[1].Mount.Point = "/" },
			field: "spec.storage.filesystems[1].mount.point", says: "Duplicate"},
		{name: "a relative mount point", edit: func(s *infrav1.Storage) { s.Filesystems[1].Mount.Point = "var/lib/etcd" },
			field: "spec.storage.filesystems[1].mount.point", says: "absolute path"},
		{name: "duplicate labels", edit: func(s *infrav1.Storage) { s.Disks[1].Partitions[2].Label = "ETCDa" },
			field: "spec.storage.disks[1].partitions[2].label", says: "Duplicate"},
		{name: "duplicate partition numbers", edit: func(s *infrav1.Storage) { s.Disks[0].Partitions[1].Number = 1 },
			field: "spec.storage.disks[0].partitions[1].number", says: "Duplicate"},
		{name: "a size that does not parse", edit: func(s *infrav1.Storage) { s.Disks[0].Partitions[1].Size = "32 GB" },
			field: "spec.storage.disks[0].partitions[1].size", says: "such as 512M or 4G"},
		{name: "a partition after the rest of the disk", edit: func(s *infrav1.Storage) {
			s.Disks[0].Partitions = append(s.Disks[0].Partitions, infrav1.StoragePartition{Label: "MORE", Number: 4, Size: "1G"})
		}, field: "spec.storage.disks[0].partitions[3].size", says: "after a partition that takes the rest"},
		{name: "a disk that is no block device", edit: func(s *infrav1.Storage) { s.Disks[1].Device = "sdb" },
			field: "spec.storage.disks[1].device", says: "block device"},
		{name: "one disk twice", edit: func(s *infrav1.Storage) { s.Disks[1].Device = "/dev/sda" },
			field: "spec.storage.disks[1].device", says: "Duplicate"},
		{name: "an array name that is no md device", edit: func(s *infrav1.Storage) { s.RAID[1].Name = "ETCD" },
			field: "spec.storage.raid[1].name", says: "/dev/md/ROOT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := raid1()
			tc.edit(s)
			errs := validateStorage(s, field.NewPath("spec", "storage"))
			if tc.field == "" {
				if len(errs) != 0 {
					t.Fatalf("a valid layout refused: %v", errs)
				}
				return
			}
			// The first error is the cause; what follows from it (a partition no disk declares any
			// more) may be reported too.
			if len(errs) == 0 || errs[0].Field != tc.field || !strings.Contains(errs[0].Error(), tc.says) {
				t.Fatalf("want first %s saying %q, got %v", tc.field, tc.says, errs)
			}
		})
	}
}

func TestStorageCannotChangeOnceTheMachineExists(t *testing.T) {
	oldSpec := &infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", Metro: "sv", Storage: raid1()}
	newSpec := oldSpec.DeepCopy()
	newSpec.Storage.Filesystems[1].Mount.Point = "/data"
	errs, _ := ValidatePacketMachineUpdate(oldSpec, newSpec, field.NewPath("spec"))
	if len(errs) != 1 || errs[0].Field != "spec.storage" {
		t.Fatalf("want spec.storage forbidden, got %v", errs)
	}
}
