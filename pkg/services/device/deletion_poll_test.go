package device

import (
	"testing"
	"time"
)

// A device being deleted is looked at when it is expected gone, then at each new list for a
// while (a look answered by the same list would see the same), then ever less often.
func TestDeletionLookAimsAtTheExpectedEndThenFollowsEachList(t *testing.T) {
	lo, hi, margin := 10*time.Second, 2*time.Minute, 2*time.Second
	expected := 30 * time.Second
	for _, tc := range []struct {
		name           string
		age, sinceSeen time.Duration
		want           time.Duration
	}{
		{"early: at the expected end, the margin past it", 5 * time.Second, 0, 27 * time.Second},
		{"early, counted from when Packet showed it", 5 * time.Second, 4 * time.Second, 23 * time.Second},
		{"just past the end: the next list", 31 * time.Second, 0, margin},
		{"past the end, answered by a list a second old: the list after it", 31 * time.Second, time.Second, time.Second},
		{"no sooner than a second", 31 * time.Second, 5 * time.Second, minNextList},
		{"long past the end: twice the time spent", 45 * time.Second, 0, 90 * time.Second},
		{"very long past: at most hi", 10 * time.Minute, 0, hi},
	} {
		if got := deletionLook(tc.age, tc.sinceSeen, expected, lo, hi, margin); got != tc.want {
			t.Errorf("%s: deletionLook = %s, want %s", tc.name, got, tc.want)
		}
	}
}
