package device

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

var label = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func TestHostnameIsOneRFC1123Label(t *testing.T) {
	long := strings.Repeat("a", 80)
	for in, want := range map[string]string{
		"pm-w1":                     "pm-w1",
		"My.Machine_01":             "my-machine-01",
		"-x-":                       "x",
		"...":                       "machine",
		long:                        "",
		long + "b":                  "",
		"md-0-abcde.worker.example": "md-0-abcde-worker-example",
	} {
		got := Hostname(in)
		if !label.MatchString(got) {
			t.Errorf("Hostname(%q) = %q, not an RFC 1123 label of at most 63 characters", in, got)
		}
		if want != "" && got != want {
			t.Errorf("Hostname(%q) = %q, want %q", in, got, want)
		}
	}
	if Hostname(long) == Hostname(long+"b") {
		t.Error("two long names that differ only at the end got the same hostname")
	}
}

// pollCase is a device's state at a look and the interval pollInterval should answer.
type pollCase struct {
	name    string
	elapsed time.Duration
	pct     float64
	rate    float64
	want    time.Duration
}

func TestPollIntervalGrowsWithTimeAndAimsAtTheEstimatedEnd(t *testing.T) {
	lo, hi := 10*time.Second, 2*time.Minute
	for _, tc := range []pollCase{
		{"just created", 0, 0, 0, lo},
		{"queued a while", 40 * time.Second, 0, 0, 80 * time.Second},
		{"queued long", 10 * time.Minute, 0, 0, hi},
		{"measured rate, far from the end", 2 * time.Minute, 20, 1.0 / 3, hi},
		{"measured rate, near the end", 5 * time.Minute, 90, 1.0 / 3, 30*time.Second + estimateMargin},
		{"measured rate, almost done: when it is due, sooner than lo", 5 * time.Minute, 99, 1.0 / 3, 3*time.Second + estimateMargin},
		{"single sample only shortens", 100 * time.Second, 50, 0, 100*time.Second + estimateMargin},
		{"packet says 100%", 6 * time.Minute, 100, 0, lo},
	} {
		if got := pollInterval(tc.elapsed, tc.pct, tc.rate, 0, lo, hi, estimateMargin); got != tc.want {
			t.Errorf("%s: pollInterval = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A client with a small budget lists less often (packet.SnapshotMaxAge); looks aimed at an end
// land as far after it as its lists may be old, or an older list would still show the device
// provisioning.
func TestPollIntervalAimsAsFarPastTheEndAsTheListMayBeOld(t *testing.T) {
	lo, hi := 10*time.Second, 2*time.Minute
	margin := 5 * time.Second
	if got, want := pollInterval(5*time.Minute, 90, 1.0/3, 0, lo, hi, margin), 35*time.Second; got != want {
		t.Errorf("measured rate: pollInterval = %s, want %s", got, want)
	}
	if got, want := pollInterval(0, 0, 0, 62*time.Second, lo, hi, margin), 67*time.Second; got != want {
		t.Errorf("typical: pollInterval = %s, want %s", got, want)
	}
}

func TestPollIntervalAimsAtWhenDevicesLikeItWereDone(t *testing.T) {
	lo, hi := 10*time.Second, 2*time.Minute
	typical := 62 * time.Second
	for _, tc := range []pollCase{
		{"just created", 0, 0, 0, typical + estimateMargin},
		{"queued 20s", 20 * time.Second, 0, 0, 42*time.Second + estimateMargin},
		{"slower than typical: back to doubling", 80 * time.Second, 0, 0, hi},
		{"single sample further off than typical", 10 * time.Second, 10, 0, 52*time.Second + estimateMargin},
		{"single sample nearer than typical", 50 * time.Second, 95, 0, lo},
		{"a measured rate wins", 40 * time.Second, 50, 1, 50*time.Second + estimateMargin},
	} {
		if got := pollInterval(tc.elapsed, tc.pct, tc.rate, typical, lo, hi, estimateMargin); got != tc.want {
			t.Errorf("%s: pollInterval = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestProgressKnowsTheShortestRecentDurationOfAKind(t *testing.T) {
	p := NewProgress()
	t0 := time.Unix(0, 0)
	if d := p.typical("c3.small.x86/ubuntu", t0); d != 0 {
		t.Fatalf("typical with nothing learned = %s, want 0", d)
	}
	p.learn("c3.small.x86/ubuntu", t0, 70*time.Second)
	p.learn("c3.small.x86/ubuntu", t0.Add(time.Minute), 65*time.Second)
	p.learn("m3.large.x86/ubuntu", t0, 30*time.Second)
	if d := p.typical("c3.small.x86/ubuntu", t0.Add(2*time.Minute)); d != 65*time.Second {
		t.Errorf("typical = %s, want the shortest of its kind, 1m5s", d)
	}
	if d := p.typical("c3.small.x86/ubuntu", t0.Add(typicalFor+30*time.Second)); d != 65*time.Second {
		t.Errorf("typical after the first estimate aged out = %s, want 1m5s", d)
	}
	if d := p.typical("c3.small.x86/ubuntu", t0.Add(typicalFor+2*time.Minute)); d != 0 {
		t.Errorf("typical after every estimate aged out = %s, want 0", d)
	}
	for i := range 2 * typicalSamples {
		p.learn("many", t0, time.Duration(i+1)*time.Second)
	}
	if d := p.typical("many", t0); d != (typicalSamples+1)*time.Second {
		t.Errorf("typical of %d estimates = %s, want the shortest of the last %d", 2*typicalSamples, d, typicalSamples)
	}
	var nilProgress *Progress
	nilProgress.learn("k", t0, time.Second)
	if d := nilProgress.typical("k", t0); d != 0 {
		t.Error("a nil Progress must know nothing")
	}
}

func TestProgressMeasuresTheRateBetweenLooks(t *testing.T) {
	p := NewProgress()
	t0 := time.Unix(0, 0)
	if r := p.observe("d", t0, 10); r != 0 {
		t.Fatalf("first look gave rate %v, want 0", r)
	}
	if r := p.observe("d", t0.Add(30*time.Second), 20); r < 0.333 || r > 0.334 {
		t.Fatalf("rate = %v, want 1/3 %% per second", r)
	}
	p.Forget("d")
	if r := p.observe("d", t0.Add(60*time.Second), 30); r != 0 {
		t.Fatalf("rate after Forget = %v, want 0", r)
	}
	var nilProgress *Progress
	if r := nilProgress.observe("d", t0, 1); r != 0 {
		t.Fatal("a nil Progress must measure nothing")
	}
}

// A device provisioning at 1% a second from its creation at t0, seen by a list two seconds
// old and then by a fresh one: its rate, its end and the first look at the next device like it
// count from when Packet answered, not from the looks.
func TestNextLookCountsFromWhenPacketShowedTheDevice(t *testing.T) {
	lo, hi := 10*time.Second, 2*time.Minute
	t0 := time.Unix(1000, 0)
	p := NewProgress()
	seenAt := func(id string, at time.Duration) *packet.Device {
		return &packet.Device{ID: id, State: packet.DeviceStateProvisioning, CreatedAt: t0,
			ObservedAt: t0.Add(at), ProvisioningPercentage: float32(at.Seconds())}
	}
	if got, want := p.nextLook(seenAt("d1", 10*time.Second), "k", t0.Add(12*time.Second), lo, hi, estimateMargin), 16*time.Second; got != want {
		t.Errorf("first look = %s, want %s (twice the 9–10 s spent when Packet showed it, counted from then)", got, want)
	}
	// Seen at 30 s, 30%: 70 s to go at the measured 1%/s; counted from the looks (12 s and
	// 30 s apart for 20 percent) the rate would be 1.1%/s and the look 7 s early.
	if got, want := p.nextLook(seenAt("d1", 30*time.Second), "k", t0.Add(30*time.Second), lo, hi, estimateMargin), 70*time.Second+estimateMargin; got != want {
		t.Errorf("look after a measured rate = %s, want %s", got, want)
	}
	if got, want := p.nextLook(seenAt("d1", 97*time.Second), "k", t0.Add(99*time.Second), lo, hi, estimateMargin), 3*time.Second+estimateMargin; got != want {
		t.Errorf("look near a measured end = %s, want %s (when it is due, sooner than lo)", got, want)
	}
	if d := p.typical("k", t0.Add(30*time.Second)); d != 100*time.Second {
		t.Errorf("learned creation-to-end = %s, want 1m40s", d)
	}
	queued := &packet.Device{ID: "d2", State: packet.DeviceStateQueued, CreatedAt: t0.Add(20 * time.Second), ObservedAt: t0.Add(30 * time.Second)}
	if got, want := p.nextLook(queued, "k", t0.Add(32*time.Second), lo, hi, estimateMargin), 89*time.Second+estimateMargin; got != want {
		t.Errorf("look at a queued device like it = %s, want %s (its typical end, counted from now and from the end of its created_at second)", got, want)
	}
	unknown := &packet.Device{ID: "d3", State: packet.DeviceStateQueued, CreatedAt: t0}
	if got := p.nextLook(unknown, "other", t0.Add(15*time.Second), lo, hi, estimateMargin); got != 28*time.Second {
		t.Errorf("look at a device seen at an unknown time = %s, want 28s (counted from now)", got)
	}
}

func TestNextLookAimsAtTheEndFromTheFirstReadingOfEarlierLists(t *testing.T) {
	lo, hi := 10*time.Second, 2*time.Minute
	t0 := time.Unix(1000, 0)
	dev := &packet.Device{ID: "d", State: packet.DeviceStateProvisioning, CreatedAt: t0, ObservedAt: t0.Add(10 * time.Second),
		ProvisioningPercentage: 10, FirstReading: &packet.Reading{At: t0.Add(5 * time.Second), Percentage: 5}}
	if got, want := NewProgress().nextLook(dev, "k", t0.Add(10*time.Second), lo, hi, estimateMargin), 90*time.Second+estimateMargin; got != want {
		t.Errorf("first look with a first reading = %s, want %s (1%%/s measured since it)", got, want)
	}
	p := NewProgress()
	p.observe("d", t0.Add(8*time.Second), 6) // its own look, later than the list's reading
	if got, want := p.nextLook(dev, "k", t0.Add(10*time.Second), lo, hi, estimateMargin), 45*time.Second+estimateMargin; got != want {
		t.Errorf("look after its own reading = %s, want %s (the rate since its own look, 2%%/s)", got, want)
	}
}

func TestDeviceTagsKeepIdentityFirstAndDropReservedUserTags(t *testing.T) {
	identity := []string{"capp:machine-uid:u1", "capp:cluster:ns/c1", "capp:role:worker"}
	got := deviceTags(identity, []string{"team:a", "capp:machine-uid:u2", "cluster-api-provider-packet:cluster-id:x", "team:a", "capp:cluster:ns/c1"})
	want := []string{"capp:machine-uid:u1", "capp:cluster:ns/c1", "capp:role:worker", "team:a"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("deviceTags = %v, want %v", got, want)
	}
}

// A look answered by the same list as the look before sees the same percentage: that is no sign
// the device stopped, so the next look waits for the next list, not for lo.
func TestNextLookAnsweredByTheSameListWaitsForTheNextList(t *testing.T) {
	lo, hi, margin := 10*time.Second, 2*time.Minute, 5*time.Second
	t0 := time.Unix(1000, 0)
	p := NewProgress()
	dev := &packet.Device{ID: "d", State: packet.DeviceStateProvisioning, CreatedAt: t0,
		ObservedAt: t0.Add(50 * time.Second), ProvisioningPercentage: 90}
	p.nextLook(dev, "k", t0.Add(50*time.Second), lo, hi, margin)
	if got, want := p.nextLook(dev, "k", t0.Add(52*time.Second), lo, hi, margin), 3*time.Second; got != want {
		t.Errorf("look answered by the same list = %s, want %s (when the next list is due)", got, want)
	}
	if got := p.nextLook(dev, "k", t0.Add(60*time.Second), lo, hi, margin); got != minNextList {
		t.Errorf("look answered by the same, long expired list = %s, want %s", got, minNextList)
	}
	later := *dev
	later.ObservedAt = t0.Add(55 * time.Second)
	if got := p.nextLook(&later, "k", t0.Add(55*time.Second), lo, hi, margin); got < lo {
		t.Errorf("look answered by a newer list showing no progress = %s, want at least lo (%s)", got, lo)
	}
}
