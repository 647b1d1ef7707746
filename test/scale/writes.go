package main

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// writeVerbs are the apiserver_request_total verbs that change an existing object (the metric
// names an update by its HTTP method, PUT). Creates and deletes of PacketMachines are the
// workload's (Cluster API's part), not the manager's.
var writeVerbs = []string{`verb="PATCH"`, `verb="PUT"`, `verb="APPLY"`}

// apiserverRequests reads, from the kube-apiserver's own request metrics, how many times so far
// PacketMachines (and their status) were patched or updated, and Secrets were read
// (countRequests). It counts on the server's side, so nothing the manager does unseen — a
// retried conflict, a second client — escapes it.
func apiserverRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return countRequests(raw)
}

// countRequests sums the apiserver_request_total lines of metrics that write PacketMachines,
// keyed "packetmachines <verb> [subresource]" (with the code when it was refused: "... (409)"),
// and those that read Secrets, keyed "secrets GET".
func countRequests(metrics []byte) (map[string]float64, error) {
	counts := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		machineWrite := strings.Contains(line, `resource="packetmachines"`) && containsAny(line, writeVerbs)
		secretRead := strings.Contains(line, `resource="secrets"`) && strings.Contains(line, `verb="GET"`)
		if !machineWrite && !secretRead {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			key := strings.TrimSpace(label(line, "resource") + " " + label(line, "verb") + " " + label(line, "subresource"))
			if code := label(line, "code"); !strings.HasPrefix(code, "2") {
				key += " (" + code + ")" // refused: a conflict, say
			}
			counts[key] += v
		}
	}
	return counts, sc.Err()
}

// label returns the value of a metric line's label, "" when it has none.
func label(line, name string) string {
	_, rest, found := strings.Cut(line, name+`="`)
	if !found {
		return ""
	}
	value, _, _ := strings.Cut(rest, `"`)
	return value
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
