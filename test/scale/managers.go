package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// managerProc is one running manager process.
type managerProc struct {
	cmd         *exec.Cmd
	exited      chan struct{} // closed once Wait returned
	metricsAddr string
}

// stop ends the process with sig (killing it after 30 s) and returns the CPU time it used and
// its peak RSS.
// stopGrace is how long a stopped manager has to exit before it is killed: controller-runtime's
// default graceful-shutdown time.
const stopGrace = 30 * time.Second

func (m *managerProc) stop(sig syscall.Signal) (time.Duration, int64) {
	if m.cmd.Process == nil {
		return 0, 0
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.exited:
	case <-time.After(stopGrace):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	ru, ok := m.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Maxrss * 1024
}

// isLeader reports whether the manager holds the leader-election lease, from controller-runtime's
// leader_election_master_status metric.
func (m *managerProc) isLeader(ctx context.Context) bool {
	return scrapeMetric(ctx, m.metricsAddr, "leader_election_master_status", "") == 1
}

// leader waits up to timeout for a manager to hold the lease and returns it.
func (h *harness) leader(ctx context.Context, timeout time.Duration) (*managerProc, error) {
	var leader *managerProc
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, m := range h.managers {
			if m.isLeader(ctx) {
				leader = m
				return true, nil
			}
		}
		return false, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return nil, fmt.Errorf("no manager of %d took the lease within %s", len(h.managers), timeout)
	}
	return leader, err
}

// killLeader SIGKILLs the manager holding the lease, measures how long another one takes to
// hold it, and starts a replacement, so that the replica count stays.
func (h *harness) killLeader(ctx context.Context) (time.Duration, error) {
	if len(h.managers) < 2 {
		return 0, errors.New("killLeader needs two managers")
	}
	old, err := h.leader(ctx, time.Minute)
	if err != nil {
		return 0, err
	}
	h.stop(old, syscall.SIGKILL)
	killed := time.Now()
	if _, err := h.leader(ctx, time.Minute); err != nil {
		return 0, err
	}
	took := time.Since(killed)
	return took, h.startManager(ctx)
}
