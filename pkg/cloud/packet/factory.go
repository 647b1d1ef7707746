package packet

import (
	"crypto/sha256"
	"os"
	"sync"
	"time"
)

// Factory hands out one Client per credential source, so that every object sharing an API key
// shares its request budget and rate-limit state. A source whose key changes (a rotated Secret)
// gets a fresh client, and one nobody asked for in clientIdleTTL is dropped: its cluster is
// most likely gone, and a long-lived manager would otherwise keep every key it ever used.
type Factory struct {
	opts Options
	now  func() time.Time

	mu      sync.Mutex
	clients map[string]cachedClient
}

type cachedClient struct {
	keyHash  [sha256.Size]byte
	client   Client
	lastUsed time.Time
}

// clientIdleTTL is how long an unused client is kept. Every cluster's objects are reconciled at
// least once per sync period (10 minutes by default), so a live cluster's client never idles
// that long.
const clientIdleTTL = time.Hour

// NewFactory returns a Factory whose clients use opts (its APIKey is ignored).
func NewFactory(opts Options) *Factory {
	// packngo dumps whole requests, user-data included, when PACKNGO_DEBUG is set. User-data
	// holds the cluster's bootstrap secrets, so that switch stays off in the provider.
	_ = os.Unsetenv("PACKNGO_DEBUG")
	return &Factory{opts: opts, now: time.Now, clients: map[string]cachedClient{}}
}

// ClientFor returns the client for the credentials of source (e.g. "namespace/secret-name",
// or "" for the manager's own key), creating it on first use or when the key changed.
func (f *Factory) ClientFor(source, apiKey string) (Client, error) {
	hash := sha256.Sum256([]byte(apiKey))
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, c := range f.clients {
		if s != source && now.Sub(c.lastUsed) > clientIdleTTL {
			delete(f.clients, s)
		}
	}
	if c, ok := f.clients[source]; ok && c.keyHash == hash {
		c.lastUsed = now
		f.clients[source] = c
		return c.client, nil
	}
	opts := f.opts
	opts.APIKey = apiKey
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	f.clients[source] = cachedClient{keyHash: hash, client: c, lastUsed: now}
	return c, nil
}

// cached reports how many clients the factory holds.
func (f *Factory) cached() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.clients)
}
