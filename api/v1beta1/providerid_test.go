package v1beta1

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseProviderID(t *testing.T) {
	const id = "5a7c1f2e-0000-4000-8000-000000000001"
	for in, want := range map[string]string{
		ProviderID(id):   id,
		"packet://" + id: id,
		"equinixmetal://5A7C1F2E-0000-4000-8000-000000000001": id,
	} {
		got, err := ParseProviderID(in)
		if err != nil || got != want {
			t.Errorf("ParseProviderID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", id, "aws://" + id, ProviderIDPrefix, ProviderIDPrefix + "not-a-uuid", ProviderIDPrefix + id + "/x"} {
		if got, err := ParseProviderID(bad); err == nil {
			t.Errorf("ParseProviderID(%q) = %q, want an error", bad, got)
		}
	}
}

// canonicalUUID is the fuzz test's own oracle of a device ID, independent of IsUUID.
var canonicalUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func FuzzParseProviderID(f *testing.F) {
	f.Add(ProviderID("5a7c1f2e-0000-4000-8000-000000000001"))
	f.Add("packet://5a7c1f2e-0000-4000-8000-000000000001")
	f.Add("equinixmetal://")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseProviderID(s)
		if err != nil {
			return
		}
		if !canonicalUUID.MatchString(id) || id != strings.ToLower(id) {
			t.Fatalf("ParseProviderID(%q) accepted %q", s, id)
		}
		if again, err := ParseProviderID(ProviderID(id)); err != nil || again != id {
			t.Fatalf("round trip of %q gave %q, %v", id, again, err)
		}
	})
}
