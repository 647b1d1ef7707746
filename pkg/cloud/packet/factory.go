package packet

import (
	"crypto/sha256"
	"os"
	"sync"
)

// Factory hands out one Client per credential source, so that every object sharing an API key
// shares its request budget and rate-limit state. A source whose key changes (a rotated Secret)
// gets a fresh client.
type Factory struct {
	opts Options

	mu      sync.Mutex
	clients map[string]cachedClient
}

type cachedClient struct {
	keyHash [sha256.Size]byte
	client  Client
}

// NewFactory returns a Factory whose clients use opts (its APIKey is ignored).
func NewFactory(opts Options) *Factory {
	// packngo dumps whole requests, user-data included, when PACKNGO_DEBUG is set. User-data
	// holds the cluster's bootstrap secrets, so that switch stays off in the provider.
	_ = os.Unsetenv("PACKNGO_DEBUG")
	return &Factory{opts: opts, clients: map[string]cachedClient{}}
}

// ClientFor returns the client for the credentials of source (e.g. "namespace/secret-name",
// or "" for the manager's own key), creating it on first use or when the key changed.
func (f *Factory) ClientFor(source, apiKey string) (Client, error) {
	hash := sha256.Sum256([]byte(apiKey))
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[source]; ok && c.keyHash == hash {
		return c.client, nil
	}
	opts := f.opts
	opts.APIKey = apiKey
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	f.clients[source] = cachedClient{keyHash: hash, client: c}
	return c, nil
}
