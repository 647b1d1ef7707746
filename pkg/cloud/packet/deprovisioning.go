package packet

import (
	"time"
)

// Deprovisioning times. Packet reports no progress while it deprovisions a device, so the only
// measure of how long that takes is this client's own deletes and the project's lists: a device
// that one list showed and the next, a single page taken after its delete was sent, does not, was
// deprovisioned in at most the time between the delete and that list. Every list is read for
// every device this client deleted, whoever asked for the list, so the bounds are as tight as
// the lists are frequent, whenever the machines' own looks land.

const (
	// deprovisionedFor is how long a measured deprovisioning time counts, and deprovisionedSamples
	// how many a project keeps: as for provisioning estimates (device.Progress), short enough
	// that a change in how fast Packet deprovisions shows within minutes.
	deprovisionedFor     = 10 * time.Minute
	deprovisionedSamples = 32
	// deleteForgetAfter drops a delete no list of the snapshots' projects showed the end of (a
	// device of a project nobody lists, or one never listed).
	deleteForgetAfter = 30 * time.Minute
)

// timedDuration is a duration measured at a time.
type timedDuration struct {
	at time.Time
	d  time.Duration
}

// deleteSent records that this client's delete of the device was sent at sent.
func (s *deviceSnapshots) deleteSent(id string, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deletes == nil {
		s.deletes = map[string]time.Time{}
	}
	s.deletes[id] = sent
}

// learnDeprovisioned measures, from the project's earlier list and a new one-page list taken at
// takenAt, the devices deleted by this client that the earlier list showed and the new one does
// not. Called with s.mu held.
func (s *deviceSnapshots) learnDeprovisioned(p *projectSnapshot, earlier, devices map[string]Device, takenAt time.Time) {
	for id, sent := range s.deletes {
		_, was := earlier[id]
		_, is := devices[id]
		switch {
		case takenAt.Sub(sent) > deleteForgetAfter:
			delete(s.deletes, id)
		case was && !is && sent.Before(takenAt):
			p.deprovisioned = append(p.deprovisioned, timedDuration{at: takenAt, d: takenAt.Sub(sent)})
			delete(s.deletes, id)
		}
	}
	if n := len(p.deprovisioned); n > deprovisionedSamples {
		p.deprovisioned = p.deprovisioned[n-deprovisionedSamples:]
	}
}

// DeprovisioningTime is the shortest time from a delete this client sent to a list of the
// project that no longer showed the device, among those measured in the last deprovisionedFor;
// 0 when none was. Each is an upper bound of that device's time; the shortest is the closest.
func (c *client) DeprovisioningTime(projectID string) time.Duration {
	if c.snapshots == nil {
		return 0
	}
	s := c.snapshots
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.projects[projectID]
	if !ok {
		return 0
	}
	now := s.now()
	var shortest time.Duration
	for _, m := range p.deprovisioned {
		if now.Sub(m.at) <= deprovisionedFor && (shortest == 0 || m.d < shortest) {
			shortest = m.d
		}
	}
	return shortest
}
