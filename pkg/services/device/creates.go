package device

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// SentCreates remembers the machines this process has sent a device create for that Packet did
// not refuse, until a copy of the PacketMachine shows the device recorded.
//
// It guards against the informer cache: a reconcile may start from a copy of the PacketMachine
// older than the writes of the reconcile before it, one that shows neither the recorded device
// nor the create-started annotation. Such a copy looks like a machine that never had a device.
// A new process has no such copies (its cache starts from a consistent list, which includes
// every write made before it), so memory of this process's own creates is enough.
type SentCreates struct {
	mu   sync.Mutex
	sent map[types.UID]struct{}
}

// NewSentCreates returns an empty SentCreates.
func NewSentCreates() *SentCreates { return &SentCreates{sent: map[types.UID]struct{}{}} }

func (c *SentCreates) add(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[uid] = struct{}{}
}

// has reports whether a create was sent for the machine.
func (c *SentCreates) has(uid types.UID) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.sent[uid]
	return ok
}

func (c *SentCreates) forget(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sent, uid)
}
