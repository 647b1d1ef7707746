package packetsim

import (
	"sync"
	"time"
)

// Clock is the simulator's notion of "now". Every state transition (device
// provisioning, deprovisioning, hardware-reservation wipes, EIP approval...) is
// computed from it, so tests that use a VirtualClock are fully deterministic.
type Clock interface {
	Now() time.Time
	// Advance moves the clock forward. A RealClock keeps ticking with wall
	// time and adds d as an offset, so Advance works in both modes.
	Advance(d time.Duration)
}

// VirtualClock only moves when Advance is called.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewVirtualClock returns a clock frozen at start (UTC). A zero start uses a
// fixed, readable date so test output is stable.
func NewVirtualClock(start time.Time) *VirtualClock {
	if start.IsZero() {
		start = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	return &VirtualClock{now: start.UTC()}
}

func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *VirtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// RealClock follows wall time plus whatever offset Advance added.
type RealClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func NewRealClock() *RealClock { return &RealClock{} }

func (c *RealClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.offset).Truncate(time.Microsecond)
}

func (c *RealClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// rfc3339 is the one timestamp format the simulator emits. packngo keeps most
// timestamps as raw strings, and parses the rest as RFC 3339.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
