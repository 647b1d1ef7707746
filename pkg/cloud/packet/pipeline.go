package packet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pipeline is the http.RoundTripper every request to Packet goes through, the Metal API's
// (packngo's) and the load-balancer API's alike, each API with one of its own per key. In order:
//
//  1. the API's last 429: while Packet's pause lasts, a request waits it out if it is short
//     (shortRateLimitPause) and otherwise fails at once with a RateLimited *Error, sending
//     nothing that would be refused too;
//  2. the request budget, the key's limiter;
//  3. the metrics (metricsTransport), then the network.
//
// Every wait ends with the request's context, the reconcile's (callContext gives packngo's
// requests theirs). A 429 answer starts the pause from its Retry-After or X-RateLimit-Reset.
// Errors it makes carry no header and no body, so no key or token (redact is for the answers'
// texts, which the clients classify).
type pipeline struct {
	next    http.RoundTripper
	limiter *rate.Limiter
	now     func() time.Time
	// api names the API in messages ("Packet", "the load-balancer API").
	api string

	mu           sync.Mutex
	blockedUntil time.Time
}

func newPipeline(next http.RoundTripper, qps float64, burst int, now func() time.Time, api string) *pipeline {
	return &pipeline{next: metricsTransport{next: next}, limiter: rate.NewLimiter(rate.Limit(qps), burst), now: now, api: api}
}

func (p *pipeline) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if wait := p.pausedFor(); wait > 0 && (wait > shortRateLimitPause || !pause(ctx, wait)) {
		return nil, &Error{Kind: KindRateLimited, Operation: operationOf(r), RetryAfter: wait,
			Messages: []string{fmt.Sprintf("waiting %s for %s's rate limit to reset", wait.Round(time.Second), p.api)}}
	}
	if err := p.limiter.Wait(ctx); err != nil {
		return nil, err
	}
	if at, ok := ctx.Value(sentAtKey{}).(*time.Time); ok {
		*at = p.now()
	}
	resp, err := p.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		now := p.now()
		p.pauseUntil(now.Add(retryAfter(resp.Header, now)))
	}
	return resp, err
}

// pausedFor is how long Packet's last 429 still applies.
func (p *pipeline) pausedFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blockedUntil.Sub(p.now())
}

func (p *pipeline) pauseUntil(until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until.After(p.blockedUntil) {
		p.blockedUntil = until
	}
}

// shortRateLimitPause is the longest pause after a 429 that requests wait out, as they wait for
// the budget, instead of failing at once. Packet's usual Retry-After is a second: failing every
// call meanwhile would have each machine that happens to reconcile record the 429 in its
// conditions, and write them twice. The call that received the 429 still reports it.
const shortRateLimitPause = 2 * time.Second

// pause waits d, and reports false if ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// callContext gives the requests of one packngo call the context of the reconcile that made it:
// packngo's methods take none, so without it a cancelled reconcile (the manager stopping, its
// leadership lost) would wait out the HTTP timeout. Each pooled packngo client has its own
// callContext, set for the length of one call; a pooled client serves one call at a time.
type callContext struct {
	next http.RoundTripper
	ctx  context.Context
}

func (t *callContext) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.ctx == nil {
		return t.next.RoundTrip(r)
	}
	// The request carries the reconcile's context (and its values, see withSentAt) and ends
	// with it or with its own (the http.Client's timeout), whichever ends first; the two are
	// let go of each other when its body is closed.
	ctx, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(r.Context(), cancel)
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &releaseOnClose{ReadCloser: resp.Body, release: func() { stop(); cancel() }}
	return resp, nil
}

// releaseOnClose runs release once its body is closed.
type releaseOnClose struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// sentAtKey keys the time.Time a request's context asks the pipeline to set to when the request
// left the budget: the time an answer shows a device at.
type sentAtKey struct{}

func withSentAt(ctx context.Context, at *time.Time) context.Context {
	return context.WithValue(ctx, sentAtKey{}, at)
}

// redact replaces every secret in s with a mark, for texts an answer may have echoed.
func redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
