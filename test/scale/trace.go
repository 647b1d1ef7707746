package main

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"
)

// writeTrace records what each stored change of one PacketMachine changed, as a watch of the
// kube-apiserver sees it (the tally's, tallyWrites): the itemised form of the write count in the
// table. A write that changed nothing is counted by the metrics but stores nothing, so it does
// not show here.
type writeTrace struct {
	mu      sync.Mutex
	start   time.Time
	entries []string
}

func (t *writeTrace) add(change string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = append(t.entries, fmt.Sprintf("%6.1fs  %s", time.Since(t.start).Seconds(), change))
}

// Entries returns one line per stored change so far.
func (t *writeTrace) Entries() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.entries)
}

// changedPaths names what differs between two versions of an object: metadata, spec and
// status fields one level down (resourceVersion, generation and managedFields left out), and
// for conditions the types that changed with their new reason.
func changedPaths(before, after map[string]any) []string {
	var out []string
	for _, part := range []string{"metadata", "spec", "status"} {
		b, _ := before[part].(map[string]any)
		a, _ := after[part].(map[string]any)
		for _, key := range slices.Sorted(maps.Keys(union(a, b))) {
			switch {
			case part == "metadata" && (key == "resourceVersion" || key == "generation" || key == "managedFields"):
			case reflect.DeepEqual(a[key], b[key]):
			case part == "status" && key == "conditions":
				out = append(out, changedConditions(b[key], a[key])...)
			default:
				out = append(out, part+"."+key)
			}
		}
	}
	return out
}

func changedConditions(before, after any) []string {
	byType := func(v any) map[string]map[string]any {
		m := map[string]map[string]any{}
		list, _ := v.([]any)
		for _, c := range list {
			if cond, ok := c.(map[string]any); ok {
				m[fmt.Sprint(cond["type"])] = cond
			}
		}
		return m
	}
	b, a := byType(before), byType(after)
	var out []string
	for _, typ := range slices.Sorted(maps.Keys(a)) {
		if !reflect.DeepEqual(a[typ], b[typ]) {
			what := fmt.Sprintf("%s=%v", a[typ]["reason"], a[typ]["status"])
			if b[typ] != nil && reflect.DeepEqual(a[typ]["reason"], b[typ]["reason"]) {
				what = "message/observedGeneration"
			}
			out = append(out, "condition "+typ+" "+what)
		}
	}
	return out
}

func union(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, b)
	return out
}
