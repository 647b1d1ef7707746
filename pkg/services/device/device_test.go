package device

import (
	"regexp"
	"strings"
	"testing"
	"time"
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

func TestPollIntervalGrowsWithTimeAndAimsAtTheEstimatedEnd(t *testing.T) {
	lo, hi := 10*time.Second, 2*time.Minute
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		pct     float64
		rate    float64
		want    time.Duration
	}{
		{"just created", 0, 0, 0, lo},
		{"queued a while", 40 * time.Second, 0, 0, 80 * time.Second},
		{"queued long", 10 * time.Minute, 0, 0, hi},
		{"measured rate, far from the end", 2 * time.Minute, 20, 1.0 / 3, hi},
		{"measured rate, near the end", 5 * time.Minute, 90, 1.0 / 3, 30*time.Second + estimateMargin},
		{"measured rate, almost done", 5 * time.Minute, 99, 1.0 / 3, lo},
		{"single sample only shortens", 100 * time.Second, 50, 0, 100*time.Second + estimateMargin},
		{"packet says 100%", 6 * time.Minute, 100, 0, lo},
	} {
		if got := pollInterval(tc.elapsed, tc.pct, tc.rate, lo, hi); got != tc.want {
			t.Errorf("%s: pollInterval = %s, want %s", tc.name, got, tc.want)
		}
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

func TestDeviceTagsKeepIdentityFirstAndDropReservedUserTags(t *testing.T) {
	identity := []string{"capp:machine-uid:u1", "capp:cluster:ns/c1", "capp:role:worker"}
	got := deviceTags(identity, []string{"team:a", "capp:machine-uid:u2", "cluster-api-provider-packet:cluster-id:x", "team:a", "capp:cluster:ns/c1"})
	want := []string{"capp:machine-uid:u1", "capp:cluster:ns/c1", "capp:role:worker", "team:a"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("deviceTags = %v, want %v", got, want)
	}
}
