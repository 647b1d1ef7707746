package v1beta1

// Storage is Packet's custom partitioning and RAID document for a device's disks, in the shape
// of the Metal API's Storage schema: the disks and their partitions, the software RAID arrays
// built from partitions, and the filesystems made and mounted on partitions or arrays. Packet
// lays the disks out before the operating system is installed; it is sent with the device
// create as it is written here.
type Storage struct {
	// disks are the disks to partition, by block device.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=24
	Disks []StorageDisk `json:"disks,omitempty"`

	// raid are the software RAID arrays, made of partitions of the disks.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=24
	RAID []StorageRAID `json:"raid,omitempty"`

	// filesystems are made on partitions or arrays and mounted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Filesystems []StorageFilesystem `json:"filesystems,omitempty"`
}

// StorageDisk is one disk and its partitions.
type StorageDisk struct {
	// device is the disk's block device, for example /dev/sda or /dev/nvme0n1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Device string `json:"device"`

	// wipeTable clears the disk's partition table first.
	// +optional
	WipeTable bool `json:"wipeTable,omitempty"`

	// partitions of the disk, by number.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Partitions []StoragePartition `json:"partitions,omitempty"`
}

// StoragePartition is one partition of a disk. Its block device is the disk's followed by its
// number (/dev/sda2; /dev/nvme0n1p2 for a disk whose name ends in a digit).
type StoragePartition struct {
	// label names the partition (its GPT name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=36
	Label string `json:"label"`

	// number is the partition's number on the disk, from 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	Number int32 `json:"number"`

	// size is the partition's size: a number of bytes with a K, M, G or T suffix (512M, 4G), or
	// 0 for the rest of the disk.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	Size string `json:"size"`
}

// StorageRAID is a software RAID array.
type StorageRAID struct {
	// devices are the partitions the array is made of.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=24
	Devices []string `json:"devices"`

	// level is the RAID level: 0, 1, 5, 6 or 10.
	// +kubebuilder:validation:Enum="0";"1";"5";"6";"10"
	Level string `json:"level"`

	// name is the array's block device, for example /dev/md/ROOT.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
}

// StorageFilesystem is a filesystem made on a partition or array.
type StorageFilesystem struct {
	// mount says where the filesystem is made and mounted.
	Mount StorageMount `json:"mount"`
}

// StorageMount is a filesystem's device, format and mount point.
type StorageMount struct {
	// device is the partition or array the filesystem is made on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Device string `json:"device"`

	// format is the filesystem's type, for example ext4, xfs, vfat or swap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	Format string `json:"format"`

	// point is where it is mounted, for example /var/lib/etcd; none for swap.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Point string `json:"point,omitempty"`

	// options are passed to the filesystem's creation (mkfs), for example ["-L", "ETCD"].
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	Options []string `json:"options,omitempty"`
}
