package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// secretsResult is what the manager costs next to many Secrets it has nothing to do with.
type secretsResult struct {
	machines, secrets, size int
	rss, peakRSS            int64
}

// runSecrets fills a namespace with count Secrets of size bytes each, none of them the
// provider's, then has the manager provision machines (reading their bootstrap Secrets, as
// it always does) and reports its memory: a manager that caches Secrets holds all of them.
func runSecrets(ctx context.Context, h *harness, machines, count, size int) (*secretsResult, error) {
	ns := fmt.Sprintf("unrelated-%d", time.Now().Unix())
	if err := h.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	data := []byte(strings.Repeat("x", size))
	var wg sync.WaitGroup
	errs := make(chan error, count)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-" + strconv.Itoa(i), Namespace: ns},
					Data: map[string][]byte{"blob": data}}
				if err := h.env.Client.Create(ctx, s); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range count {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("creating the unrelated Secrets: %w", err)
	}

	w := &workload{c: h.env.Client, namespace: ns + "-cluster", cluster: "secrets", n: machines}
	if err := w.create(ctx); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 10*time.Minute, "the machines provisioned", func() (bool, error) {
		machines, err := w.machines(ctx)
		if err != nil {
			return false, err
		}
		for _, m := range machines {
			if !ptr.Deref(m.Status.Initialization.Provisioned, false) {
				return false, nil
			}
		}
		return len(machines) == w.n, nil
	}); err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second) // let the manager settle
	res := &secretsResult{machines: machines, secrets: count, size: size, rss: currentRSS(h.managers[0].cmd.Process.Pid)}
	h.stopManager(syscall.SIGTERM)
	res.peakRSS = h.peakRSS
	return res, nil
}

// currentRSS reads a process's resident set size from /proc, 0 where there is none.
func currentRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (r *secretsResult) print(w io.Writer, manager string) {
	fmt.Fprintln(w, "| manager | unrelated Secrets | machines provisioned | RSS then | peak RSS |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	fmt.Fprintf(w, "| %s | %d × %d KiB | %d | %d MiB | %d MiB |\n", manager, r.secrets, r.size>>10, r.machines, r.rss>>20, r.peakRSS>>20)
}
