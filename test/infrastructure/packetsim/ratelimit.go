package packetsim

import (
	"math"
	"sync"
	"time"
)

// rateLimiter is a token bucket per API token, on the simulator's clock (so
// a virtual clock refills only when a test advances it).
type rateLimiter struct {
	mu      sync.Mutex
	limit   RateLimit
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// rateDecision carries what the X-RateLimit-* headers report.
type rateDecision struct {
	allowed    bool
	limit      int
	remaining  int
	reset      time.Time
	retryAfter int // seconds, when not allowed
}

func newRateLimiter(limit RateLimit) *rateLimiter {
	if limit.PerSecond > 0 && limit.Burst <= 0 {
		limit.Burst = int(math.Max(1, math.Ceil(limit.PerSecond)))
	}
	return &rateLimiter{limit: limit, buckets: map[string]*bucket{}}
}

// unlimitedReport is what the headers say when rate limiting is off: the
// real API always sends them, and packngo parses them.
const unlimitedReport = 5000

func (rl *rateLimiter) take(token string, now time.Time) rateDecision {
	if rl.limit.PerSecond <= 0 {
		return rateDecision{allowed: true, limit: unlimitedReport, remaining: unlimitedReport - 1, reset: now.Add(time.Minute)}
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	b := rl.buckets[token]
	burst := float64(rl.limit.Burst)
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		rl.buckets[token] = b
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(burst, b.tokens+elapsed*rl.limit.PerSecond)
		b.last = now
	}
	d := rateDecision{limit: rl.limit.Burst}
	if b.tokens >= 1 {
		b.tokens--
		d.allowed = true
	} else {
		d.retryAfter = int(math.Ceil((1 - b.tokens) / rl.limit.PerSecond))
	}
	d.remaining = int(b.tokens)
	toFull := time.Duration((burst - b.tokens) / rl.limit.PerSecond * float64(time.Second))
	d.reset = now.Add(toFull)
	return d
}

func (rl *rateLimiter) reset() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.buckets = map[string]*bucket{}
}
