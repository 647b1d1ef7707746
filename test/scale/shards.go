package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// shard is one --watch-filter value with its own manager, Packet project and API key. The key
// is accepted by the simulator in the shard's project only, so a call a manager made for a
// machine of another shard would be refused (403) and counted.
type shard struct{ name, projectID, apiKey string }

// newShards names n shards shard-a, shard-b, … with a project and a random key each.
func newShards(n int) []shard { return newProjects("shard", n) }

// newProjects names n projects prefix-a, prefix-b, … (then prefix-26, …), each with a random
// key the simulator accepts in it only.
func newProjects(prefix string, n int) []shard {
	out := make([]shard, n)
	for i := range out {
		name := fmt.Sprintf("%s-%c", prefix, 'a'+i)
		if i >= 26 {
			name = fmt.Sprintf("%s-%d", prefix, i)
		}
		out[i] = shard{name: name, projectID: fmt.Sprintf("00000000-0000-4000-8000-0000000005%02d", i), apiKey: randomToken()}
	}
	return out
}

// shardResult is what one shard's manager did.
type shardResult struct {
	shard                     shard
	machines                  int
	provisionWall, deleteWall time.Duration
	// ownReconciles and otherReconciles count the manager's reconciles (any controller) of
	// objects in its own shard's namespace and in another's.
	ownReconciles, otherReconciles int
	// creates are the device creates Packet accepted in the shard's project.
	creates int
}

// shardsResult is a sharded run.
type shardsResult struct {
	shards []*shardResult
	// refused counts Packet's 401 and 403 answers: with keys valid in one shard's project only,
	// any call for another shard's machine.
	refused    int
	violations []string
}

// reconcilingLine matches controller-runtime's "Reconciling" line (-v=5) and captures the
// controller and the object's namespace.
var reconcilingLine = regexp.MustCompile(`"Reconciling" controller="([^"]+)".* namespace="([^"]+)"`)

// runShards provisions and deletes perShard machines in one cluster per shard, all at once, each
// cluster labelled for its shard and reconciled by that shard's manager alone.
func runShards(ctx context.Context, h *harness, perShard int) (*shardsResult, error) {
	res := &shardsResult{}
	for i, sh := range h.opts.shards {
		// Each shard elects its own leader; on a lease shared by all only one would lead.
		if err := waitFor(ctx, time.Minute, sh.name+"'s manager holding its lease", func() (bool, error) {
			return h.managers[i].isLeader(ctx), nil
		}); err != nil {
			return nil, err
		}
	}
	stamp := time.Now().Unix()
	results := make([]*shardResult, len(h.opts.shards))
	errs := make([]error, len(h.opts.shards))
	var wg sync.WaitGroup
	for i, sh := range h.opts.shards {
		w := &workload{c: h.env.Client, namespace: fmt.Sprintf("%s-%d", sh.name, stamp), cluster: "scale", n: perShard,
			projectID: sh.projectID, labels: map[string]string{clusterv1.WatchLabel: sh.name}}
		wg.Go(func() { results[i], errs[i] = provisionAndDelete(ctx, h, w, sh) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.opts.shards[i].name, err)
		}
	}
	res.shards = results

	for _, r := range h.sim.Requests() {
		if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			res.refused++
		}
		for _, sr := range res.shards {
			if r.Method == http.MethodPost && r.Status == http.StatusCreated && strings.HasSuffix(r.Path, "/projects/"+sr.shard.projectID+"/devices") {
				sr.creates++
			}
		}
	}
	for i, sr := range res.shards {
		if err := countReconciles(h.managerLogs[i], sr); err != nil {
			return nil, err
		}
		if sr.otherReconciles > 0 {
			res.violations = append(res.violations, fmt.Sprintf("%s's manager reconciled %d objects of other shards", sr.shard.name, sr.otherReconciles))
		}
		if sr.ownReconciles == 0 {
			res.violations = append(res.violations, fmt.Sprintf("%s's manager logged no reconcile (is -v=5 passed?)", sr.shard.name))
		}
		if sr.creates != sr.machines {
			res.violations = append(res.violations, fmt.Sprintf("%s: %d devices created for %d machines", sr.shard.name, sr.creates, sr.machines))
		}
	}
	if res.refused > 0 {
		res.violations = append(res.violations, fmt.Sprintf("Packet refused %d calls: a manager called for another shard's machines", res.refused))
	}
	return res, nil
}

// provisionAndDelete creates the shard's workload, waits until its machines are provisioned,
// deletes it and waits until it is gone.
func provisionAndDelete(ctx context.Context, h *harness, w *workload, sh shard) (*shardResult, error) {
	r := &shardResult{shard: sh, machines: w.n}
	start := time.Now()
	if err := w.create(ctx); err != nil {
		return nil, err
	}
	if _, err := waitProvisioned(ctx, h, w); err != nil {
		return nil, err
	}
	r.provisionWall = time.Since(start)
	deleteStart := time.Now()
	if err := w.deleteAll(ctx, 4*time.Hour); err != nil {
		return nil, err
	}
	r.deleteWall = time.Since(deleteStart)
	return r, nil
}

// countReconciles reads a manager's log for the namespaces it reconciled objects in.
func countReconciles(logPath string, r *shardResult) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	own := r.shard.name + "-"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := reconcilingLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if strings.HasPrefix(m[2], own) {
			r.ownReconciles++
		} else {
			r.otherReconciles++
		}
	}
	return sc.Err()
}

func (res *shardsResult) print(w io.Writer) {
	fmt.Fprintf(w, "\nShards: %d managers, each with --watch-filter=<shard>, leader election on its own lease, and an API key valid in its shard's project only\n\n", len(res.shards))
	fmt.Fprintln(w, "| shard | machines | provisioned in | deleted in | reconciles of its own shard | of other shards | devices created |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range res.shards {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %d | %d | %d |\n", r.shard.name, r.machines, r.provisionWall.Round(time.Second),
			r.deleteWall.Round(time.Second), r.ownReconciles, r.otherReconciles, r.creates)
	}
	fmt.Fprintf(w, "\nPacket calls refused (401/403): %d\n", res.refused)
	fmt.Fprintf(w, "violations: %d\n", len(res.violations))
	for _, v := range res.violations {
		fmt.Fprintf(w, "  - %s\n", v)
	}
}
