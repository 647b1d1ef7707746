package packet

import (
	"testing"
	"time"
)

func TestFactoryForgetsClientsNobodyAsksFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFactory(Options{APIURL: "http://127.0.0.1:1/metal/v1/"})
	f.now = func() time.Time { return now }

	a, _ := f.ClientFor("ns-a/creds", "key-a")
	if _, err := f.ClientFor("ns-b/creds", "key-b"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Minute)
	if again, _ := f.ClientFor("ns-a/creds", "key-a"); again != a {
		t.Fatal("a client in use was replaced")
	}
	now = now.Add(20 * time.Minute) // b unused for 70 minutes, a for 20
	if _, err := f.ClientFor("ns-a/creds", "key-a"); err != nil {
		t.Fatal(err)
	}
	if got := f.cached(); got != 1 {
		t.Fatalf("factory holds %d clients, want 1: the cluster of ns-b has not asked for an hour", got)
	}
	if rotated, _ := f.ClientFor("ns-a/creds", "key-a2"); rotated == a {
		t.Fatal("a rotated key got the old client")
	}
}
