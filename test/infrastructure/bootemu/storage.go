package bootemu

import (
	"encoding/json"
	"strings"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// mounts prints the host's arrays and mounted filesystems to its console, as mdadm and mount
// would report them at boot; nothing when the device has Packet's default layout.
func (e *Emulator) mounts(h *host, d *packetsim.Device) {
	if len(d.Storage) == 0 {
		return
	}
	// Packet made the arrays and filesystems of the device's document before it installed the
	// operating system.
	var l packetsim.StorageLayout
	if err := json.Unmarshal(d.Storage, &l); err != nil {
		e.console(h, "storage: the device's layout is unreadable: %v", err)
		return
	}
	for _, r := range l.Raid {
		e.console(h, "md: %s: raid%s of %s, active", r.Name, r.Level, strings.Join(r.Devices, " "))
	}
	for _, f := range l.Filesystems {
		m := f.Mount
		if m.Format == "swap" {
			e.console(h, "swapon: %s", m.Device)
			continue
		}
		e.console(h, "mount: %s on %s type %s (rw,relatime)", m.Device, m.Point, m.Format)
	}
}
