package device

import (
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Looks at a device being deleted. Packet shows no progress while it deprovisions, only the
// state, so looks are aimed at when the device is expected gone: as long after the delete as the
// project's devices took lately (measured by the Packet client from its deletes and the project's
// lists), PollMin before anything was measured. Each second a PacketMachine outlives its device
// holds up whoever waits for it (a KubeadmControlPlane rollout step, a Cluster's deletion); a
// look that finds the device still deprovisioning costs a reconcile, a status write the first
// time and a share of a list every machine being deleted reads.

// expectedDeprovisioning is how long after its delete the device is expected gone.
func (s *Service) expectedDeprovisioning() time.Duration {
	if d := s.scope.Packet.DeprovisioningTime(s.scope.ProjectID()); d > 0 {
		return min(d, s.opts.PollMax)
	}
	return s.opts.PollMin
}

// firstDeletionLook is when, from a delete just asked, to look first: the expected end, as late
// after it as the list that answers may be old, so that list was taken after the end.
func (s *Service) firstDeletionLook() time.Duration {
	return min(s.expectedDeprovisioning()+s.opts.SnapshotMaxAge, s.opts.PollMax)
}

// nextDeletionLook is when, from now, to look again at a device whose deletion was asked at
// requestedAt and that Packet showed deprovisioning at dev.ObservedAt (deletionLook).
func (s *Service) nextDeletionLook(dev *packet.Device, requestedAt time.Time) time.Duration {
	now := s.opts.Now()
	seen := dev.ObservedAt
	if seen.IsZero() || seen.After(now) {
		seen = now
	}
	return deletionLook(seen.Sub(requestedAt), now.Sub(seen), s.expectedDeprovisioning(), s.opts.PollMin, s.opts.PollMax, s.opts.SnapshotMaxAge)
}

// deletionLook is when to look again at a device that Packet showed deprovisioning age after its
// delete, sinceSeen ago. Before the expected end, at it, margin after it as the first look; until
// lo past it, at the project's next list (margin after the one that answered), which may be the
// first not to show the device: a list no newer shows what the last one showed. After that the
// interval doubles with the time spent, between lo and hi.
func deletionLook(age, sinceSeen, expected, lo, hi, margin time.Duration) time.Duration {
	switch {
	case age < expected:
		return max(minNextList, expected-age+margin-sinceSeen)
	case age < expected+lo:
		return max(minNextList, margin-sinceSeen)
	}
	return clamp(2*age, lo, hi)
}
