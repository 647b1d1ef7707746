package v1beta1

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// ParseHardwareReservationIDs parses PacketMachineSpec.HardwareReservationID. It is the one parser
// for the field: the validating webhook rejects what it rejects, and the machine controller uses
// its result to create the device.
//
// The accepted forms are:
//   - "" (no reservation): ids is nil, nextAvailable is false;
//   - "next-available" (any free reservation of the plan): ids is nil, nextAvailable is true;
//   - one hardware reservation UUID, or several separated by commas, tried in the order given:
//     ids holds them (lower-cased, without surrounding spaces), nextAvailable is false.
//
// Spaces around entries are ignored. An empty entry, an entry that is not a UUID, a UUID listed
// twice, and "next-available" inside a list are errors whose message names the offending entry.
func ParseHardwareReservationIDs(s string) (ids []string, nextAvailable bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, false, nil
	}
	if s == NextAvailableHardwareReservation {
		return nil, true, nil
	}
	parts := strings.Split(s, ",")
	seen := make(map[string]int, len(parts))
	ids = make([]string, 0, len(parts))
	for i, part := range parts {
		raw := strings.TrimSpace(part)
		id := strings.ToLower(raw)
		switch {
		case id == "":
			return nil, false, fmt.Errorf("entry %d of the list is empty: separate hardware reservation UUIDs with single commas", i+1)
		case raw == NextAvailableHardwareReservation:
			return nil, false, errors.New(`"next-available" cannot be combined with hardware reservation UUIDs: use it alone, or list UUIDs only`)
		case !IsUUID(id):
			return nil, false, fmt.Errorf("entry %d (%q) is not a hardware reservation UUID (like 3fa85f64-5717-4562-b3fc-2c963f66afa6)", i+1, truncate(raw, 64))
		}
		if first, dup := seen[id]; dup {
			return nil, false, fmt.Errorf("hardware reservation %s is listed twice (entries %d and %d)", id, first, i+1)
		}
		seen[id] = i + 1
		ids = append(ids, id)
	}
	return ids, false, nil
}

// IsUUID reports whether s is a UUID in the canonical 8-4-4-4-12 hexadecimal form that the Packet
// API uses for every object ID (either letter case); uuid.Validate alone also takes the braced,
// urn: and undashed forms.
func IsUUID(s string) bool {
	return len(s) == 36 && uuid.Validate(s) == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
