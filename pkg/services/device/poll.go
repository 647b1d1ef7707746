package device

import (
	"sync"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// Polling. Bare metal takes minutes to provision and each look costs an API call from the
// project's budget, so the interval grows with the time already spent; once Packet reports a
// provisioning percentage the next look is aimed at the estimated end, so the machine is
// reported provisioned soon after the device is active.

// estimateMargin is added to an estimated end so the look lands just after it: as far after it
// as the project's device list that answers the look may be old, so that list was taken after
// the end.
const estimateMargin = packet.DefaultSnapshotMaxAge

// provisioningPoll is when to look again at a device that is being provisioned.
func (s *Service) provisioningPoll(dev *packet.Device) time.Duration {
	now := s.opts.Now()
	var elapsed time.Duration
	if !dev.CreatedAt.IsZero() {
		elapsed = max(0, now.Sub(dev.CreatedAt))
	}
	var rate float64
	if dev.State == packet.DeviceStateProvisioning {
		rate = s.opts.Progress.observe(dev.ID, now, float64(dev.ProvisioningPercentage))
	}
	return pollInterval(elapsed, float64(dev.ProvisioningPercentage), rate, s.opts.PollMin, s.opts.PollMax)
}

// pollInterval is twice the time spent (bounded by lo and hi) until a percentage is known.
// With a percentage, the remaining time is estimated from the measured rate (percent per
// second), or, with a single observation, from the rate since creation — a lower bound, as it
// counts the time spent queued, so that estimate only ever shortens the interval.
func pollInterval(elapsed time.Duration, pct, rate float64, lo, hi time.Duration) time.Duration {
	interval := clamp(2*elapsed, lo, hi)
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
	remaining := time.Duration((100-pct)/rate*float64(time.Second)) + estimateMargin
	if measured {
		return clamp(remaining, lo, hi)
	}
	return clamp(min(interval, remaining), lo, hi)
}

// deletionPoll is when to look again at a device whose deletion was requested elapsed ago.
func deletionPoll(elapsed time.Duration, lo, hi time.Duration) time.Duration {
	return clamp(2*elapsed, lo, hi)
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// Progress remembers the last provisioning percentage seen of each device, to measure its rate.
// It is an optimisation only: a restarted manager starts without it and polls a little more.
type Progress struct {
	mu      sync.Mutex
	samples map[string]progressSample
}

type progressSample struct {
	at  time.Time
	pct float64
}

// NewProgress returns an empty Progress.
func NewProgress() *Progress { return &Progress{samples: map[string]progressSample{}} }

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

// Forget drops what is known of a device that is no longer provisioning.
func (p *Progress) Forget(id string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.samples, id)
}
