package v1beta1_test

import (
	"strings"
	"testing"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

const (
	uuidA = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	uuidB = "0b0c3b7e-4f39-4d5c-9a51-1c3f3c0d9e21"
)

func TestParseHardwareReservationIDs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		ids     []string
		next    bool
		wantErr string
	}{
		{name: "empty", in: ""},
		{name: "only spaces", in: "   "},
		{name: "next-available", in: "next-available", next: true},
		{name: "next-available with spaces", in: " next-available ", next: true},
		{name: "one UUID", in: uuidA, ids: []string{uuidA}},
		{name: "upper-case UUID is lower-cased", in: strings.ToUpper(uuidA), ids: []string{uuidA}},
		{name: "list in order", in: uuidB + "," + uuidA, ids: []string{uuidB, uuidA}},
		{name: "list with spaces", in: uuidA + " , " + uuidB, ids: []string{uuidA, uuidB}},
		{name: "trailing comma", in: uuidA + ",", wantErr: "entry 2 of the list is empty"},
		{name: "double comma", in: uuidA + ",," + uuidB, wantErr: "entry 2 of the list is empty"},
		{name: "lone comma", in: ",", wantErr: "entry 1 of the list is empty"},
		{name: "not a UUID", in: "abc", wantErr: `entry 1 ("abc") is not a hardware reservation UUID`},
		{name: "UUID without dashes", in: strings.ReplaceAll(uuidA, "-", ""), wantErr: "is not a hardware reservation UUID"},
		{name: "UUID with a bad character", in: "3fa85f64-5717-4562-b3fc-2c963f66afaz", wantErr: "is not a hardware reservation UUID"},
		{name: "braced UUID", in: "{" + uuidA + "}", wantErr: "is not a hardware reservation UUID"},
		{name: "second entry bad", in: uuidA + ",next", wantErr: `entry 2 ("next")`},
		{name: "next-available in a list", in: uuidA + ",next-available", wantErr: `"next-available" cannot be combined`},
		{name: "Next-Available is not the keyword", in: "Next-Available", wantErr: "is not a hardware reservation UUID"},
		{name: "duplicate", in: uuidA + "," + strings.ToUpper(uuidA), wantErr: "listed twice (entries 1 and 2)"},
		{name: "long garbage is truncated in the message", in: strings.Repeat("x", 300), wantErr: "xxx...\")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, next, err := infrav1.ParseHardwareReservationIDs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseHardwareReservationIDs(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				if ids != nil || next {
					t.Fatalf("ParseHardwareReservationIDs(%q) returned ids=%v next=%v with an error", tt.in, ids, next)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHardwareReservationIDs(%q) error = %v", tt.in, err)
			}
			if next != tt.next || strings.Join(ids, ",") != strings.Join(tt.ids, ",") {
				t.Fatalf("ParseHardwareReservationIDs(%q) = %v, %v; want %v, %v", tt.in, ids, next, tt.ids, tt.next)
			}
		})
	}
}

func TestIsUUID(t *testing.T) {
	for s, want := range map[string]bool{
		uuidA: true, strings.ToUpper(uuidB): true, "": false, uuidA + "0": false,
		"3fa85f64_5717-4562-b3fc-2c963f66afa6": false, "3fa85f64-5717-4562-b3fc-2c963f66afg6": false,
		// Forms uuid.Validate takes that Packet IDs never have.
		"{" + uuidA + "}": false, "urn:uuid:" + uuidA: false, strings.ReplaceAll(uuidA, "-", ""): false,
	} {
		if got := infrav1.IsUUID(s); got != want {
			t.Errorf("IsUUID(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzParseHardwareReservationIDs checks that the parser never panics and that what it accepts is
// consistent: either next-available alone, or a non-empty list of distinct canonical UUIDs that
// parses to itself again when joined back with commas.
func FuzzParseHardwareReservationIDs(f *testing.F) {
	for _, s := range []string{"", "next-available", uuidA, uuidA + "," + uuidB, uuidA + ", ,", "a,b,c", uuidA + "," + uuidA} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, next, err := infrav1.ParseHardwareReservationIDs(s)
		if err != nil {
			if ids != nil || next {
				t.Fatalf("error %v returned together with ids=%v next=%v", err, ids, next)
			}
			return
		}
		if next {
			if ids != nil {
				t.Fatalf("next-available returned ids %v", ids)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			if ids != nil {
				t.Fatalf("empty input returned ids %v", ids)
			}
			return
		}
		if len(ids) == 0 {
			t.Fatalf("%q accepted with no ids and no next-available", s)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if !infrav1.IsUUID(id) || id != strings.ToLower(id) || seen[id] {
				t.Fatalf("%q accepted with a bad or duplicate id %q", s, id)
			}
			seen[id] = true
		}
		again, next2, err := infrav1.ParseHardwareReservationIDs(strings.Join(ids, ","))
		if err != nil || next2 || strings.Join(again, ",") != strings.Join(ids, ",") {
			t.Fatalf("re-parsing %v gave %v, %v, %v", ids, again, next2, err)
		}
	})
}
