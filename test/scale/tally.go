package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// writeTally counts the stored changes of every PacketMachine of a namespace by kind (writeKind),
// as a watch of the kube-apiserver sees them, and traces one machine's changes in order. The
// trace shows one machine; the tally shows where the fleet's writes go, such as how many machines
// had a first look that found their device still provisioning.
type writeTally struct {
	mu     sync.Mutex
	counts map[string]int
	// trace is the traced machine's stored changes, in order.
	trace *writeTrace
	stop  context.CancelFunc
}

// tallyWrites starts watching the PacketMachines of namespace, tracing the one named traced.
func tallyWrites(ctx context.Context, cfg *rest.Config, namespace, traced string) (*writeTally, error) {
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(infrav1.GroupVersion.WithKind("PacketMachineList"))
	ctx, cancel := context.WithCancel(ctx)
	w, err := c.Watch(ctx, list, client.InNamespace(namespace))
	if err != nil {
		cancel()
		return nil, err
	}
	t := &writeTally{counts: map[string]int{}, trace: &writeTrace{start: time.Now()}, stop: cancel}
	go func() {
		defer w.Stop()
		last := map[string]map[string]any{}
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			name := obj.GetName()
			switch {
			case ev.Type == watch.Deleted:
				delete(last, name)
				continue
			case ev.Type == watch.Modified && last[name] != nil:
				t.add(writeKind(last[name], obj.Object))
				if name == traced {
					t.trace.add(strings.Join(changedPaths(last[name], obj.Object), ", "))
				}
			}
			last[name] = obj.Object
		}
	}()
	return t, nil
}

func (t *writeTally) add(kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[kind]++
}

// Stop ends the watch and returns one line per kind of change, the most frequent first (then by
// name), with how many there were per machine of the n the namespace held.
func (t *writeTally) Stop(n int) []string {
	t.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	kinds := slices.SortedFunc(maps.Keys(t.counts), func(a, b string) int {
		if d := t.counts[b] - t.counts[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	out := make([]string, 0, len(kinds))
	for _, kind := range kinds {
		out = append(out, fmt.Sprintf("%6.2f  %s", float64(t.counts[kind])/float64(n), kind))
	}
	return out
}

// writeKind names a stored change: the metadata and spec fields it changed, or, for a status
// write, how it moved status.instanceStatus and DeviceReady's reason (a status write that moved
// neither changed something else: a message, another condition, an address).
func writeKind(before, after map[string]any) string {
	var fields []string
	for _, path := range changedPaths(before, after) {
		if strings.HasPrefix(path, "metadata.") || strings.HasPrefix(path, "spec.") {
			fields = append(fields, path)
		}
	}
	if len(fields) > 0 {
		return strings.Join(fields, ", ")
	}
	return fmt.Sprintf("status: instanceStatus %s, DeviceReady %s",
		transition(instanceStatus(before), instanceStatus(after)), transition(deviceReadyReason(before), deviceReadyReason(after)))
}

func transition(from, to string) string {
	if from == to {
		return "unchanged (" + to + ")"
	}
	return fmt.Sprintf("%q → %q", from, to)
}

func instanceStatus(obj map[string]any) string {
	s, _, _ := unstructured.NestedString(obj, "status", "instanceStatus")
	return s
}

func deviceReadyReason(obj map[string]any) string {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		if cond, ok := c.(map[string]any); ok && cond["type"] == infrav1.DeviceReadyCondition {
			return fmt.Sprint(cond["reason"])
		}
	}
	return ""
}
