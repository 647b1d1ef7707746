package packet_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

func TestMessageKeepsPacketsWordsAndTheStatus(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  packet.Error
		want string
	}{
		{"422", packet.Error{StatusCode: 422, Messages: []string{"Plan is not valid", "Metro is not valid"}},
			"Plan is not valid, Metro is not valid (HTTP 422)"},
		{"503 without a body", packet.Error{StatusCode: 503, Messages: []string{"Service Unavailable"}}, "Service Unavailable (HTTP 503)"},
		{"no response", packet.Error{Messages: []string{"dial tcp: connection refused"}}, "dial tcp: connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Message(); got != tt.want {
				t.Fatalf("Message() = %q, want %q", got, tt.want)
			}
		})
	}

	long := packet.Error{StatusCode: 502, Messages: []string{strings.Repeat("<html>é", 200)}}
	got := long.Message()
	if len(got) > 600 || !strings.HasSuffix(got, "… (HTTP 502)") || !strings.HasPrefix(got, "<html>é") {
		t.Fatalf("a long error page is not trimmed: %d bytes, %q…", len(got), got[:40])
	}
}
