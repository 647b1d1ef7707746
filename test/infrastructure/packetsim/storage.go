package packetsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// StorageLayout is the custom partitioning and RAID document of a device create, in the Metal
// API spec's Storage shape, as far as the simulator and the boot emulation read it. Fields it
// does not know (packngo's mount.create) are let through, as Packet lets them.
type StorageLayout struct {
	Disks []struct {
		Device     string `json:"device"`
		Partitions []struct {
			Label  string `json:"label"`
			Number int    `json:"number"`
			Size   string `json:"size"`
		} `json:"partitions"`
	} `json:"disks"`
	Raid []struct {
		Devices []string `json:"devices"`
		Level   string   `json:"level"`
		Name    string   `json:"name"`
	} `json:"raid"`
	Filesystems []struct {
		Mount struct {
			Device string `json:"device"`
			Format string `json:"format"`
			Point  string `json:"point"`
		} `json:"mount"`
	} `json:"filesystems"`
}

var (
	storageSize = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	// raidDevices is how many devices each level Packet offers needs.
	raidDevices = map[string]int{"0": 2, "1": 2, "5": 3, "6": 4, "10": 4}
)

// validateStorage checks a create's storage document against itself and the plan's drives, and
// returns it as sent: Packet keeps it as the device's storage. The words are the simulator's
// (Packet's are unpublished); the checks are what its provisioning would fail on.
func validateStorage(raw json.RawMessage, plan *planEntry) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var doc StorageLayout
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "Storage is not a valid custom partitioning and RAID document: "+err.Error())
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if drives := planDrives(plan); len(doc.Disks) > drives {
		bad("Storage names %d disks; plan %s has %d", len(doc.Disks), plan.Slug, drives)
	}
	if len(doc.Raid) > 0 && !plan.Specs.Features.Raid {
		bad("Storage has RAID arrays; plan %s does not support RAID", plan.Slug)
	}
	devices := map[string]bool{}
	for _, d := range doc.Disks {
		if !strings.HasPrefix(d.Device, "/dev/") {
			bad("Storage disk device %q is not a block device", d.Device)
		}
		for _, p := range d.Partitions {
			if !storageSize.MatchString(p.Size) {
				bad("Storage partition %q has an invalid size %q", p.Label, p.Size)
			}
			devices[partitionOf(d.Device, p.Number)] = true
		}
	}
	for _, r := range doc.Raid {
		need, ok := raidDevices[r.Level]
		switch {
		case !ok:
			bad("Storage RAID %s has an unsupported level %q", r.Name, r.Level)
		case len(r.Devices) < need:
			bad("Storage RAID %s: level %s needs at least %d devices, got %d", r.Name, r.Level, need, len(r.Devices))
		}
		for _, dev := range r.Devices {
			if !devices[dev] {
				bad("Storage RAID %s: device %s is not a declared partition", r.Name, dev)
			}
		}
		devices[r.Name] = true
	}
	for _, f := range doc.Filesystems {
		if !devices[f.Mount.Device] {
			bad("Storage filesystem device %s is not a declared partition or RAID array", f.Mount.Device)
		}
		if f.Mount.Format == "" {
			bad("Storage filesystem on %s has no format", f.Mount.Device)
		}
	}
	if len(problems) > 0 {
		return nil, errorf(http.StatusUnprocessableEntity, problems...)
	}
	return append(json.RawMessage(nil), raw...), nil
}

// planDrives is how many drives the plan's servers have.
func planDrives(plan *planEntry) int {
	n := 0
	for _, d := range plan.Specs.Drives {
		n += max(d.Count, 1)
	}
	return n
}

// partitionOf is a partition's block device: /dev/sda2, /dev/nvme0n1p2.
func partitionOf(disk string, number int) string {
	if disk != "" && disk[len(disk)-1] >= '0' && disk[len(disk)-1] <= '9' {
		return fmt.Sprintf("%sp%d", disk, number)
	}
	return fmt.Sprintf("%s%d", disk, number)
}
