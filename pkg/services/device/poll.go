package device

import (
	"sync"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Polling. Bare metal takes minutes to provision and each look costs an API call from the
// project's budget, so the interval grows with the time already spent; once Packet reports a
// provisioning percentage the next look is aimed at the estimated end, so the machine is
// reported provisioned soon after the device is active. The rate comes from two readings: two
// looks, or a look and the first percentage that an earlier list of the project (asked for by
// another machine's look) showed. A device like others provisioned lately (same plan and
// operating system) has its first looks aimed at when those were done instead.

// estimateMargin is added to an estimated end so the look lands just after it: as far after it
// as the project's device list that answers the look may be old (Options.SnapshotMaxAge, by
// default this), so that list was taken after the end.
const estimateMargin = packet.DefaultSnapshotMaxAge

// minNextList bounds how soon a look that waits for the project's next list follows the last.
const minNextList = time.Second

// provisioningPoll is when to look again at a device that is being provisioned.
func (s *Service) provisioningPoll(dev *packet.Device) time.Duration {
	pm := s.scope.PacketMachine
	return s.opts.Progress.nextLook(dev, pm.Spec.MachineType+"/"+pm.Spec.OS, s.opts.Now(), s.opts.PollMin, s.opts.PollMax, s.opts.SnapshotMaxAge)
}

// nextLook is when, from now, to look again at a provisioning device of kind (plan and
// operating system), as Packet showed it at dev.ObservedAt. Rates and estimates count from
// then, not from now: most looks are answered by a list a second or two old, and a rate measured
// between an old answer and a fresh one, counted from the looks, is off by that much (seen as
// devices estimated to end in half the time they took, whose estimates then set the first looks
// of every device like them).
func (p *Progress) nextLook(dev *packet.Device, kind string, now time.Time, lo, hi, margin time.Duration) time.Duration {
	seen := dev.ObservedAt
	if seen.IsZero() || seen.After(now) {
		seen = now
	}
	// Packet gives created_at to the second, so the device was created up to a second after
	// it: durations learned from it err long, and looks aimed from it (elapsed) land late,
	// never early.
	var sinceCreated, elapsed time.Duration
	if !dev.CreatedAt.IsZero() {
		sinceCreated = max(0, seen.Sub(dev.CreatedAt))
		elapsed = max(0, sinceCreated-time.Second)
	}
	pct := float64(dev.ProvisioningPercentage)
	var rate float64
	if dev.State == packet.DeviceStateProvisioning {
		if p.shownBefore(dev.ID, seen) {
			// Answered by the list that answered the last look, or an older one: it shows what
			// that one showed, so it is no sign that the device stopped progressing, and the
			// next list may show it done. Waiting lo would report such a device lo late.
			return max(minNextList, margin-now.Sub(seen))
		}
		if r := dev.FirstReading; r != nil && r.At.Before(seen) {
			p.seed(dev.ID, r.At, float64(r.Percentage))
		}
		rate = p.observe(dev.ID, seen, pct)
		if rate > 0 && pct < 100 && !dev.CreatedAt.IsZero() {
			p.learn(kind, now, sinceCreated+timeToEnd(pct, rate))
		}
	}
	// Counted from when Packet showed the device; no sooner than lo, unless the interval is
	// shorter itself (a measured end is near).
	interval := pollInterval(elapsed, pct, rate, p.typical(kind, now), lo, hi, margin)
	return max(min(lo, interval), interval-now.Sub(seen))
}

// pollInterval is twice the time spent (bounded by lo and hi) until a percentage is known, or,
// when devices like this one lately took typical from creation to the end, the time left until
// then. With a percentage, the remaining time is estimated from the measured rate (percent per
// second; then the interval may be shorter than lo), or, with a single observation, from the
// rate since creation — a lower bound, as it counts the time spent queued, so that estimate only
// ever shortens the interval. Looks aimed at an end land margin after it.
func pollInterval(elapsed time.Duration, pct, rate float64, typical, lo, hi, margin time.Duration) time.Duration {
	interval := clamp(2*elapsed, lo, hi)
	if typical > elapsed {
		interval = clamp(typical-elapsed+margin, lo, hi)
	}
	switch {
	case pct >= 100:
		return lo // done by Packet's count, only the state is still to change
	case pct <= 0:
		return interval
	}
	measured := rate > 0
	if !measured && elapsed > 0 {
		rate = pct / elapsed.Seconds()
	}
	if rate <= 0 {
		return interval
	}
	remaining := timeToEnd(pct, rate) + margin
	if measured {
		// Sooner than lo when the measured end is near: a look that landed a moment before the
		// end (estimates of a fleet differ by a second or two) would otherwise report the
		// machine lo late. It stops at the first look that finds no progress (no rate).
		return min(remaining, hi)
	}
	return clamp(min(interval, remaining), lo, hi)
}

// timeToEnd is how long a device at pct percent, progressing at rate percent a second, takes
// to reach 100.
func timeToEnd(pct, rate float64) time.Duration {
	return time.Duration((100 - pct) / rate * float64(time.Second))
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// Progress remembers the last provisioning percentage seen of each device, to measure its rate,
// and how long devices of each kind took lately. It is an optimisation only: a restarted manager
// starts without it and polls a little more.
type Progress struct {
	mu      sync.Mutex
	samples map[string]progressSample
	// durations are recent estimates of creation-to-end times by plan and operating system.
	durations map[string][]durationSample
}

type durationSample struct {
	at time.Time
	d  time.Duration
}

// A duration estimate counts for typicalFor after it was made, and at most typicalSamples of a
// kind are kept: enough for a burst of creates, short enough that a change in how fast Packet
// provisions shows within minutes.
const (
	typicalFor     = 10 * time.Minute
	typicalSamples = 32
)

type progressSample struct {
	at  time.Time
	pct float64
}

// NewProgress returns an empty Progress.
func NewProgress() *Progress {
	return &Progress{samples: map[string]progressSample{}, durations: map[string][]durationSample{}}
}

// learn records that a device of kind, as estimated at at, takes d from creation to the end.
func (p *Progress) learn(kind string, at time.Time, d time.Duration) {
	if p == nil || d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.durations[kind] = append(p.durations[kind], durationSample{at: at, d: d})
	if n := len(p.durations[kind]); n > typicalSamples {
		p.durations[kind] = p.durations[kind][n-typicalSamples:]
	}
}

// typical is the shortest creation-to-end time estimated for a device of kind in the last
// typicalFor, or 0. The shortest: a look aimed at it that lands early sees a percentage and
// aims again, one that lands late reports a machine late.
func (p *Progress) typical(kind string, now time.Time) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var shortest time.Duration
	for _, s := range p.durations[kind] {
		if now.Sub(s.at) <= typicalFor && (shortest == 0 || s.d < shortest) {
			shortest = s.d
		}
	}
	return shortest
}

// shownBefore reports whether the device's last recorded reading is from at or later: a look
// answered by the same list as the one before.
func (p *Progress) shownBefore(id string, at time.Time) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, ok := p.samples[id]
	return ok && !at.After(prev.at)
}

// observe records pct for the device and returns the rate since the previous observation, in
// percent per second, or 0 when there is none to compare with.
func (p *Progress) observe(id string, at time.Time, pct float64) float64 {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, ok := p.samples[id]
	p.samples[id] = progressSample{at: at, pct: pct}
	if !ok || !at.After(prev.at) || pct <= prev.pct {
		return 0
	}
	return (pct - prev.pct) / at.Sub(prev.at).Seconds()
}

// seed records pct for the device at at, unless a reading of it is already known.
func (p *Progress) seed(id string, at time.Time, pct float64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.samples[id]; !ok {
		p.samples[id] = progressSample{at: at, pct: pct}
	}
}

// Forget drops what is known of a device that is no longer provisioning.
func (p *Progress) Forget(id string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.samples, id)
}
