package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// benchResult is one row of the scale table.
type benchResult struct {
	// clusters is how many clusters (and projects) the n machines were split between.
	clusters                  int
	n                         int
	provisionWall, deleteWall time.Duration
	callsByRoute              map[string]int
	calls, rateLimited        int
	reconciles                float64
	// writes are PacketMachine patches and updates by verb and subresource, counted by the
	// kube-apiserver.
	writes map[string]float64
	// secretReads are the Secrets the kube-apiserver was asked for (credentials, bootstrap data).
	secretReads float64
	// provisionFloor and deleteFloor are the least the Packet budget and the simulator's clock
	// allow: one create per machine through the request budget, then provisioning; one delete
	// per machine, then deprovisioning. Polls are not counted.
	provisionFloor, deleteFloor time.Duration
	activeToProvisioned         []time.Duration
	peakRSS                     int64
	cpu                         time.Duration
	// firstMachineWrites are the stored changes of the first machine, in order.
	firstMachineWrites []string
	// fleetWrites are the stored changes of the first cluster's machines by kind, per machine.
	fleetWrites []string
	// firstDeviceCalls are the Packet requests that named the first machine's device, in order.
	firstDeviceCalls []string
	// deviceLists are when the project's devices were listed, when there were few enough to read.
	deviceLists []string
}

// runBench provisions and deletes n machines and measures what it cost. With projects in the
// harness (--clusters), the machines are split between one cluster per project, each with its
// own key and so its own request budget, all reconciled by the one manager.
func runBench(ctx context.Context, h *harness, n int) (*benchResult, error) {
	ws, err := benchWorkloads(h, n)
	if err != nil {
		return nil, err
	}
	before, err := apiserverRequests(ctx, h.env.Config)
	if err != nil {
		return nil, fmt.Errorf("reading the kube-apiserver's request metrics: %w", err)
	}
	tally, err := tallyWrites(ctx, h.env.Config, ws[0].namespace, ws[0].machineName(0))
	if err != nil {
		return nil, fmt.Errorf("watching the first cluster's machines: %w", err)
	}
	start := time.Now()
	if err := eachWorkload(ws, func(w *workload) error { return w.create(ctx) }); err != nil {
		return nil, err
	}
	perBudget := ws[0].n // the machines behind one key
	res := &benchResult{n: perBudget * len(ws), clusters: len(ws),
		provisionFloor: h.provisionFloor(perBudget), deleteFloor: h.deleteFloor(perBudget)}
	if err := waitAllProvisioned(ctx, h, ws, res); err != nil {
		return nil, err
	}
	res.provisionWall = time.Since(start)
	fmt.Printf("N=%d: provisioned in %s (floor %s); deleting\n", res.n, res.provisionWall.Round(time.Second), res.provisionFloor.Round(time.Second))
	firstDevice, err := ws[0].deviceID(ctx, 0)
	if err != nil {
		return nil, err
	}

	deleteStart := time.Now()
	if err := eachWorkload(ws, func(w *workload) error { return w.deleteAll(ctx, 4*time.Hour) }); err != nil {
		return nil, err
	}
	res.deleteWall = time.Since(deleteStart)
	res.fleetWrites = tally.Stop(ws[0].n)
	res.firstMachineWrites = tally.trace.Entries()

	res.reconciles = scrapeReconciles(ctx, h.metricsAddr(), "packetmachine")
	after, err := apiserverRequests(ctx, h.env.Config)
	if err != nil {
		return nil, fmt.Errorf("reading the kube-apiserver's request metrics: %w", err)
	}
	res.countWrites(before, after)
	res.countCalls(h.sim, firstDevice, tally.trace.start)
	h.stopManager(syscall.SIGTERM)
	res.peakRSS, res.cpu = h.peakRSS, h.cpu
	return res, nil
}

// countWrites records the PacketMachine writes and Secret reads between two readings of the
// kube-apiserver's request metrics.
func (res *benchResult) countWrites(before, after map[string]float64) {
	res.writes = map[string]float64{}
	for key, v := range after {
		d := v - before[key]
		if write, ok := strings.CutPrefix(key, "packetmachines "); ok && d > 0 {
			res.writes[write] = d
		}
	}
	res.secretReads = after["secrets GET"] - before["secrets GET"]
}

// benchWorkloads are the clusters of a run of n machines: one in the simulator's default
// project, or n split evenly between the harness's projects.
func benchWorkloads(h *harness, n int) ([]*workload, error) {
	watcher, err := client.NewWithWatch(h.env.Config, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		return nil, err
	}
	stamp := time.Now().Unix()
	if len(h.opts.projects) == 0 {
		return []*workload{{c: h.env.Client, watcher: watcher, namespace: fmt.Sprintf("scale-%d-%d", n, stamp), cluster: "scale", n: n}}, nil
	}
	ws := make([]*workload, len(h.opts.projects))
	for i, p := range h.opts.projects {
		ws[i] = &workload{c: h.env.Client, watcher: watcher, namespace: fmt.Sprintf("scale-%d-%d-%s", n, stamp, p.name), cluster: "scale",
			n: n / len(ws), projectID: p.projectID, apiKey: p.apiKey}
	}
	return ws, nil
}

// eachWorkload runs f for every workload at once and returns the first error.
func eachWorkload(ws []*workload, f func(*workload) error) error {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = f(w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// countCalls reads the simulator's request log: calls, 429s, when the project's devices were
// listed, and the calls that named the first machine's device, with their time since start.
func (res *benchResult) countCalls(sim *packetsim.Server, firstDevice string, start time.Time) {
	res.callsByRoute = sim.Counters()
	for _, r := range sim.Requests() {
		res.calls++
		if r.Status == http.StatusTooManyRequests {
			res.rateLimited++
		}
		if r.Route == "GET /projects/{id}/devices" {
			res.deviceLists = append(res.deviceLists, fmt.Sprintf("%.1fs", r.Time.Sub(start).Seconds()))
		}
		if strings.Contains(r.Path, firstDevice) {
			res.firstDeviceCalls = append(res.firstDeviceCalls, fmt.Sprintf("%6.1fs  %s %d", r.Time.Sub(start).Seconds(), r.Route, r.Status))
		}
	}
}

// waitAllProvisioned waits until every workload's machines are provisioned, recording in res
// how long after its device turned active each was seen so.
func waitAllProvisioned(ctx context.Context, h *harness, ws []*workload, res *benchResult) error {
	var mu sync.Mutex
	return eachWorkload(ws, func(w *workload) error {
		d, err := waitProvisioned(ctx, h, w)
		mu.Lock()
		defer mu.Unlock()
		res.activeToProvisioned = append(res.activeToProvisioned, d...)
		return err
	})
}

// waitProvisioned waits until every machine of w is provisioned and returns, for each, how long
// after its device turned active that was seen.
func waitProvisioned(ctx context.Context, h *harness, w *workload) ([]time.Duration, error) {
	var activeToProvisioned []time.Duration
	seen := map[string]bool{}
	err := w.waitMachines(ctx, 4*time.Hour, fmt.Sprintf("%d machines provisioned", w.n), func(_ map[string]*infrav1.PacketMachine, changed []*infrav1.PacketMachine) bool {
		now := time.Now()
		for _, m := range changed {
			if !seen[m.Name] && ptr.Deref(m.Status.Initialization.Provisioned, false) {
				seen[m.Name] = true
				if d, ok := h.sim.Device(strings.TrimPrefix(m.Spec.ProviderID, infrav1.ProviderIDPrefix)); ok {
					activeToProvisioned = append(activeToProvisioned, now.Sub(d.StateSince))
				}
			}
		}
		return len(seen) == w.n
	})
	return activeToProvisioned, err
}

// scrapeReconciles sums controller_runtime_reconcile_total of one controller.
func scrapeReconciles(ctx context.Context, addr, controller string) float64 {
	return scrapeMetric(ctx, addr, "controller_runtime_reconcile_total", `controller="`+controller+`"`)
}

// scrapeMetric sums a metric's samples whose line contains labels, from a manager's metrics
// endpoint; -1 when it does not answer.
func scrapeMetric(ctx context.Context, addr, name, labels string) float64 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if (strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ")) && strings.Contains(line, labels) {
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				total += v
			}
		}
	}
	return total
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// printTable writes the results as a Markdown table, then the per-route calls per machine.
func printTable(w io.Writer, provisioning time.Duration, rate float64, results []*benchResult) {
	fmt.Fprintf(w, "\nProvisioning time %s (simulator clock), simulator rate limit %.0f req/s per token\n\n", provisioning, rate)
	fmt.Fprintln(w, "| N | provisioned in (floor) | deleted in (floor) | API calls / machine | Kubernetes writes / machine | reconciles / machine | active→provisioned p50 | p99 | 429s (share) | manager peak RSS | manager CPU (per machine) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		share := 0.0
		if r.calls > 0 {
			share = 100 * float64(r.rateLimited) / float64(r.calls)
		}
		nLabel := strconv.Itoa(r.n)
		if r.clusters > 1 {
			nLabel += fmt.Sprintf(" (%d clusters, a project and key each)", r.clusters)
		}
		fmt.Fprintf(w, "| %s | %s (%s) | %s (%s) | %.1f | %.1f | %.1f | %s | %s | %d (%.2f%%) | %d MiB | %.1f s (%.0f ms) |\n",
			nLabel, r.provisionWall.Round(time.Second), r.provisionFloor.Round(time.Second),
			r.deleteWall.Round(time.Second), r.deleteFloor.Round(time.Second),
			float64(r.calls)/float64(r.n), sum(r.writes)/float64(r.n), r.reconciles/float64(r.n),
			percentile(r.activeToProvisioned, 0.5).Round(100*time.Millisecond),
			percentile(r.activeToProvisioned, 0.99).Round(100*time.Millisecond),
			r.rateLimited, share, r.peakRSS>>20, r.cpu.Seconds(), float64(r.cpu.Milliseconds())/float64(r.n))
	}
	for _, r := range results {
		fmt.Fprintf(w, "\nAPI calls per machine by route, N = %d (includes the cluster's own calls):\n\n", r.n)
		routes := make([]string, 0, len(r.callsByRoute))
		for route := range r.callsByRoute {
			routes = append(routes, route)
		}
		sort.Strings(routes)
		for _, route := range routes {
			fmt.Fprintf(w, "    %-40s %6.2f\n", route, float64(r.callsByRoute[route])/float64(r.n))
		}
		fmt.Fprintf(w, "\nPacketMachine writes per machine by verb and subresource, N = %d (kube-apiserver's count):\n\n", r.n)
		for _, key := range slices.Sorted(maps.Keys(r.writes)) {
			fmt.Fprintf(w, "    %-40s %6.2f\n", key, r.writes[key]/float64(r.n))
		}
		fmt.Fprintf(w, "\nSecrets read per machine, N = %d (credentials and bootstrap data; kube-apiserver's count): %.2f\n", r.n, r.secretReads/float64(r.n))
		fmt.Fprintf(w, "\nWhat each stored write of the first machine changed, N = %d (a watch of the kube-apiserver):\n\n", r.n)
		for _, line := range r.firstMachineWrites {
			fmt.Fprintf(w, "    %s\n", line)
		}
		fmt.Fprintf(w, "\nStored changes per machine by kind, the first cluster's %d machines (a watch of the kube-apiserver):\n\n", r.n/r.clusters)
		for _, line := range r.fleetWrites {
			fmt.Fprintf(w, "    %s\n", line)
		}
		fmt.Fprintf(w, "\nPacket calls that named the first machine's device, N = %d (lists and the create do not name it):\n\n", r.n)
		for _, line := range r.firstDeviceCalls {
			fmt.Fprintf(w, "    %s\n", line)
		}
		if len(r.deviceLists) <= maxListedLists {
			fmt.Fprintf(w, "\nWhen the project's devices were listed, N = %d: %s\n", r.n, strings.Join(r.deviceLists, " "))
		}
	}
}

// maxListedLists is how many list times are still worth printing.
const maxListedLists = 40

func sum(m map[string]float64) float64 {
	total := 0.0
	for _, v := range m {
		total += v
	}
	return total
}
