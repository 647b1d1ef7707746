package main

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// createsRoute is the simulator's name for a device create.
const createsRoute = "POST /projects/{id}/devices"

// shutdownResult is how long a manager took to exit on SIGTERM with creates in flight.
type shutdownResult struct {
	machines int
	latency  time.Duration
	// inFlight are the creates Packet had been sent and not yet answered at the SIGTERM.
	inFlight int
	exit     time.Duration
	killed   bool
}

// runShutdown has the manager create machines at a Packet that takes latency to answer each
// create, sends it SIGTERM while the creates are in flight, and times its exit. A request in
// flight that outlived its reconcile would hold the manager until the request's own timeout; the
// harness kills a manager still running stopGrace after the signal.
func runShutdown(ctx context.Context, h *harness, machines int, latency time.Duration) (*shutdownResult, error) {
	h.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultLatency, Route: createsRoute, Latency: latency, Count: machines})
	w := &workload{c: h.env.Client, namespace: fmt.Sprintf("shutdown-%d", time.Now().Unix()), cluster: "shutdown", n: machines}
	if err := w.create(ctx); err != nil {
		return nil, err
	}
	res := &shutdownResult{machines: machines, latency: latency}
	if err := waitFor(ctx, 2*time.Minute, "creates in flight", func() (bool, error) {
		res.inFlight = h.sim.InFlight(createsRoute)
		return res.inFlight >= min(machines, 5), nil
	}); err != nil {
		return nil, err
	}
	m := h.managers[0]
	start := time.Now()
	h.stop(m, syscall.SIGTERM)
	res.exit = time.Since(start)
	res.killed = res.exit >= stopGrace
	return res, nil
}

func (r *shutdownResult) print(w io.Writer, manager string) {
	fmt.Fprintln(w, "| manager | machines | create latency | creates in flight at SIGTERM | exit after SIGTERM |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	exit := r.exit.Round(10 * time.Millisecond).String()
	if r.killed {
		exit = "killed after " + exit
	}
	fmt.Fprintf(w, "| %s | %d | %s | %d | %s |\n", manager, r.machines, r.latency, r.inFlight, exit)
}
