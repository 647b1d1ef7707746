package sandbox

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// A handover swaps this provider's manager inside one running sandbox, as a user swaps the
// previous Packet provider for this one on a management cluster: the manager is stopped (or
// killed), another release's components are installed by clusterctl, and another binary is started
// on the same ports. Nothing else is restarted, so workload clusters and the simulator's state
// carry over. The e2e suite starts its sandbox in process and does not Wait on it; a
// `sandbox up`, which does, would stop when the manager exits.

// StopManager stops this provider's manager: SIGTERM gives it its graceful shutdown (15 s at
// most), SIGKILL is a crash.
func (s *Sandbox) StopManager(sig syscall.Signal) error {
	c := s.Component(managerName)
	if c == nil || c.proc == nil || c.proc.exited() {
		return nil
	}
	if sig == syscall.SIGKILL {
		if err := syscall.Kill(-c.proc.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing %s: %w", c.Name, err)
		}
	}
	c.proc.stop(15 * time.Second)
	return nil
}

// StartManager starts binary as this provider's manager, on the ports and certificates the
// sandbox gave the manager it replaces (flags every controller-runtime manager accepts), with
// extraArgs after them and env added to the sandbox's. It returns once the manager is ready.
func (s *Sandbox) StartManager(ctx context.Context, binary string, extraArgs, env []string) error {
	c := s.Component(managerName)
	if c == nil {
		return fmt.Errorf("the sandbox has no %s", managerName)
	}
	if c.proc != nil && !c.proc.exited() {
		return fmt.Errorf("%s is still running (pid %d): stop it first", c.Name, c.Pid())
	}
	c.binary = binary
	c.args = append(slices.Clone(c.commonArgs), extraArgs...)
	c.env = append(slices.Clone(c.commonEnv), env...)
	return s.startComponent(ctx, c)
}

// UseProviderComponents points the clusterctl configuration at another release of this
// provider, whose repository folder may hold other versions too (clusterctl's
// `--infrastructure packet:<version>` picks among them).
func (s *Sandbox) UseProviderComponents(path string) error {
	s.cfg.ProviderComponents = path
	if err := s.cfg.check(); err != nil {
		return err
	}
	return s.writeClusterctlConfig()
}

// WireWebhooks points the webhook configurations and conversion webhooks that clusterctl
// installed at the sandbox's managers again, as after a `clusterctl init` of another release.
func (s *Sandbox) WireWebhooks(ctx context.Context) error { return s.wireWebhooks(ctx) }
