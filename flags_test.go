package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
)

// parseFlags parses args as the manager's command line does.
func parseFlags(t *testing.T, args ...string) *options {
	t.Helper()
	opts := &options{logs: logs.NewOptions()}
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	opts.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return opts
}

// TestTheCreateConfirmWindowIsAFlag: the wait after a create that got no answer reaches the
// command line, defaults to two minutes, and a zero (which the device service would quietly
// turn into its default) is refused.
func TestTheCreateConfirmWindowIsAFlag(t *testing.T) {
	if got := parseFlags(t).createConfirmWindow; got != 2*time.Minute {
		t.Errorf("default window = %s, want 2m", got)
	}
	opts := parseFlags(t, "--device-create-confirm-window=20s")
	if opts.createConfirmWindow != 20*time.Second {
		t.Errorf("window = %s, want 20s", opts.createConfirmWindow)
	}
	if err := opts.validate(); err != nil {
		t.Errorf("20s refused: %v", err)
	}
	for _, bad := range []string{"0s", "-1m"} {
		if err := parseFlags(t, "--device-create-confirm-window="+bad).validate(); err == nil {
			t.Errorf("--device-create-confirm-window=%s accepted", bad)
		}
	}
}
