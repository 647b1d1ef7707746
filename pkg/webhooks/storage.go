package webhooks

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// sizePattern is a partition size as Packet takes it: bytes with an optional K, M, G or T suffix.
var sizePattern = regexp.MustCompile(`^[0-9]+[KMGT]?$`)

// raidMinDevices is how many devices each RAID level needs to be the level it says.
var raidMinDevices = map[string]int{"0": 2, "1": 2, "5": 3, "6": 4, "10": 4}

// validateStorage refuses a disk layout that Packet would refuse or that cannot work: a
// partition, array or filesystem naming a device no one declared, RAID levels over too few
// devices, duplicate labels, devices or mount points, sizes that do not parse.
func validateStorage(s *infrav1.Storage, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	partitions := map[string]bool{} // block devices of the declared partitions
	disks, labels := map[string]bool{}, map[string]bool{}
	for i, d := range s.Disks {
		p := path.Child("disks").Index(i)
		if !strings.HasPrefix(d.Device, "/dev/") {
			errs = append(errs, field.Invalid(p.Child("device"), d.Device, "must be a block device, for example /dev/sda"))
		}
		if disks[d.Device] {
			errs = append(errs, field.Duplicate(p.Child("device"), d.Device))
		}
		disks[d.Device] = true
		errs = append(errs, validatePartitions(d, p.Child("partitions"), labels, partitions)...)
	}
	arrays := map[string]bool{}
	for i, r := range s.RAID {
		p := path.Child("raid").Index(i)
		if !strings.HasPrefix(r.Name, "/dev/md") {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, "must be the array's block device, for example /dev/md/ROOT"))
		}
		if arrays[r.Name] || partitions[r.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		arrays[r.Name] = true
		if need, ok := raidMinDevices[r.Level]; ok && len(r.Devices) < need {
			errs = append(errs, field.Invalid(p.Child("devices"), r.Devices, fmt.Sprintf("RAID %s needs at least %d devices", r.Level, need)))
		}
		used := map[string]bool{}
		for j, dev := range r.Devices {
			switch {
			case !partitions[dev]:
				errs = append(errs, field.Invalid(p.Child("devices").Index(j), dev, "is not a partition declared in disks"))
			case used[dev]:
				errs = append(errs, field.Duplicate(p.Child("devices").Index(j), dev))
			}
			used[dev] = true
		}
	}
	return append(errs, validateFilesystems(s.Filesystems, path.Child("filesystems"), partitions, arrays)...)
}

// validatePartitions checks one disk's partitions, recording their labels and block devices.
func validatePartitions(d infrav1.StorageDisk, path *field.Path, labels, partitions map[string]bool) field.ErrorList {
	var errs field.ErrorList
	numbers, rest := map[int32]bool{}, false
	for i, part := range d.Partitions {
		p := path.Index(i)
		if labels[part.Label] {
			errs = append(errs, field.Duplicate(p.Child("label"), part.Label))
		}
		labels[part.Label] = true
		if numbers[part.Number] {
			errs = append(errs, field.Duplicate(p.Child("number"), part.Number))
		}
		numbers[part.Number] = true
		switch {
		case !sizePattern.MatchString(part.Size):
			errs = append(errs, field.Invalid(p.Child("size"), part.Size, "must be a size such as 512M or 4G, or 0 for the rest of the disk"))
		case rest:
			errs = append(errs, field.Invalid(p.Child("size"), part.Size, "comes after a partition that takes the rest of the disk (size 0)"))
		}
		rest = rest || part.Size == "0"
		partitions[partitionDevice(d.Device, part.Number)] = true
	}
	return errs
}

// validateFilesystems checks that each filesystem is made on a declared partition or array,
// once, and mounted at a point of its own.
func validateFilesystems(fss []infrav1.StorageFilesystem, path *field.Path, partitions, arrays map[string]bool) field.ErrorList {
	var errs field.ErrorList
	devices, points := map[string]bool{}, map[string]bool{}
	for i, fs := range fss {
		p := path.Index(i).Child("mount")
		m := fs.Mount
		switch {
		case !partitions[m.Device] && !arrays[m.Device]:
			errs = append(errs, field.Invalid(p.Child("device"), m.Device, "is not a partition declared in disks nor an array declared in raid"))
		case devices[m.Device]:
			errs = append(errs, field.Duplicate(p.Child("device"), m.Device))
		}
		devices[m.Device] = true
		switch {
		case m.Format == "swap":
		case !strings.HasPrefix(m.Point, "/"):
			errs = append(errs, field.Invalid(p.Child("point"), m.Point, "must be an absolute path (none only for swap)"))
		case points[m.Point]:
			errs = append(errs, field.Duplicate(p.Child("point"), m.Point))
		}
		points[m.Point] = true
	}
	return errs
}

// partitionDevice is the block device of a disk's partition: /dev/sda2, or /dev/nvme0n1p2 where
// the disk's name ends in a digit.
func partitionDevice(disk string, number int32) string {
	if disk != "" && disk[len(disk)-1] >= '0' && disk[len(disk)-1] <= '9' {
		return fmt.Sprintf("%sp%d", disk, number)
	}
	return fmt.Sprintf("%s%d", disk, number)
}
