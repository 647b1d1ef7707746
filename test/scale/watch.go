package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// waitMachines waits until done reports true for the workload's PacketMachines (by name), and
// asks it again at every change, naming the machines that changed (all of them after a list,
// the one an event is about after that, so a wait over ten thousand machines does not look at
// every one of them per event). With a watcher it lists once and then follows a watch: a run
// of ten thousand machines whose waits listed every PacketMachine twice a second spent half the
// kube-apiserver's CPU encoding those lists (docs/performance.md). Without one it lists every
// half second.
func (w *workload) waitMachines(ctx context.Context, timeout time.Duration, what string, done func(machines map[string]*infrav1.PacketMachine, changed []*infrav1.PacketMachine) bool) error {
	if w.watcher == nil {
		return waitFor(ctx, timeout, what, func() (bool, error) {
			list, err := w.machines(ctx)
			machines := byName(list)
			return err == nil && done(machines, values(machines)), err
		})
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for ctx.Err() == nil {
		list := &infrav1.PacketMachineList{}
		if err := w.c.List(ctx, list, client.InNamespace(w.namespace)); err != nil {
			return err
		}
		machines := byName(list.Items)
		if done(machines, values(machines)) {
			return nil
		}
		events, err := w.watcher.Watch(ctx, &infrav1.PacketMachineList{}, client.InNamespace(w.namespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			return err
		}
		if follow(events, machines, done) {
			return nil
		}
		// The watch ended (the server closes them now and then): list again and go on.
	}
	return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
}

// follow applies a watch's events to machines until done reports true (true) or the watch ends.
func follow(events watch.Interface, machines map[string]*infrav1.PacketMachine, done func(map[string]*infrav1.PacketMachine, []*infrav1.PacketMachine) bool) bool {
	defer events.Stop()
	for ev := range events.ResultChan() {
		pm, ok := ev.Object.(*infrav1.PacketMachine)
		switch {
		case !ok:
			return false // an error event: start over from a list
		case ev.Type == watch.Deleted:
			delete(machines, pm.Name)
		default:
			machines[pm.Name] = pm
		}
		if done(machines, []*infrav1.PacketMachine{pm}) {
			return true
		}
	}
	return false
}

func byName(list []infrav1.PacketMachine) map[string]*infrav1.PacketMachine {
	out := make(map[string]*infrav1.PacketMachine, len(list))
	for i := range list {
		out[list[i].Name] = &list[i]
	}
	return out
}

func values(machines map[string]*infrav1.PacketMachine) []*infrav1.PacketMachine {
	out := make([]*infrav1.PacketMachine, 0, len(machines))
	for _, m := range machines {
		out = append(out, m)
	}
	return out
}
