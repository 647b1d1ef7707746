package scope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

// machineWriter writes a PacketMachine in as few requests as the API server allows: one merge
// patch of metadata and spec, one update of the status with its conditions, each only when it
// changed.
//
// Cluster API's patch helper, which the PacketCluster's scope uses, patches conditions in a
// request of their own — a conflict-aware merge, for objects whose conditions several
// controllers write — and then the rest of the status: two status writes whenever both change,
// which is most reconciles of a machine being provisioned or deleted. Nothing but this
// controller writes a PacketMachine's status (Cluster API only reads it), so one write of the
// whole status is as correct and costs the API server one request instead of two; with a
// thousand machines behind one client rate limit, those requests are what bounds the wall time
// (docs/performance.md).
type machineWriter struct {
	client client.Client
	// before is the PacketMachine as the API server has it, as far as this reconcile knows.
	before *infrav1.PacketMachine
}

func newMachineWriter(c client.Client, pm *infrav1.PacketMachine) *machineWriter {
	return &machineWriter{client: c, before: pm.DeepCopy()}
}

// writeObject patches pm's metadata and spec if they changed. pm takes the API server's answer
// (its new resourceVersion and generation, which conditions set from here on observe) and keeps
// the status this reconcile has not written yet.
func (w *machineWriter) writeObject(ctx context.Context, pm *infrav1.PacketMachine) error {
	if equality.Semantic.DeepEqual(w.before.ObjectMeta, pm.ObjectMeta) && equality.Semantic.DeepEqual(w.before.Spec, pm.Spec) {
		return nil // most reconciles: cheaper than computing an empty patch from two encodings
	}
	base := w.before.DeepCopy()
	base.Status = *pm.Status.DeepCopy() // the status is written by writeStatus only
	data, err := client.MergeFrom(base).Data(pm)
	if err != nil || bytes.Equal(data, []byte("{}")) {
		return err
	}
	pending := pm.Status.DeepCopy()
	observed, ownSpecChange := pm.Generation, !equality.Semantic.DeepEqual(base.Spec, pm.Spec)
	if err := w.client.Patch(ctx, pm, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	w.before = pm.DeepCopy()
	if ownSpecChange && pm.Generation == observed+1 {
		// The one new generation is this write's own spec change (a recorded provider ID), which
		// changes nothing the conditions observed. Saying so now saves a status write next time.
		for i := range pending.Conditions {
			if pending.Conditions[i].ObservedGeneration == observed {
				pending.Conditions[i].ObservedGeneration = pm.Generation
			}
		}
	}
	pm.Status = *pending
	return nil
}

// writeStatus writes pm's status, conditions included, if it changed: the whole status, in an
// update of the status subresource. Nothing but this controller writes a PacketMachine's status,
// so there is nothing of anyone else's to merge with, and an update costs less than a merge
// patch at both ends: no patch to compute here (two encodings of the object and a diff), none to
// apply to the stored object in the API server, where applying patches (of metadata and status
// together) was an eighth of its CPU at ten thousand machines (docs/performance.md).
//
// The update carries the resourceVersion this reconcile started from: a reconcile that started
// from a cached copy older than the status this process last wrote would put back the older
// conditions (a create's lost answer, say). The API server refuses it with a conflict, and the
// reconcile is retried from a newer copy.
func (w *machineWriter) writeStatus(ctx context.Context, pm *infrav1.PacketMachine) error {
	if equality.Semantic.DeepEqual(w.before.Status, pm.Status) || sameJSON(w.before.Status, pm.Status) {
		return nil
	}
	if err := w.client.Status().Update(ctx, pm); err != nil {
		return err
	}
	w.before = pm.DeepCopy()
	return nil
}

// sameJSON reports whether a and b encode alike: a status that differs only in what its encoding
// drops (times finer than a second, say) is not written.
func sameJSON(a, b infrav1.PacketMachineStatus) bool {
	ea, errA := json.Marshal(a)
	eb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
}

// write writes what changed. A PacketMachine whose last finalizer comes off is about to vanish:
// its status is not written.
func (w *machineWriter) write(ctx context.Context, pm *infrav1.PacketMachine) error {
	objectErr := w.writeObject(ctx, pm)
	if !pm.DeletionTimestamp.IsZero() && len(pm.Finalizers) == 0 {
		if apierrors.IsNotFound(objectErr) {
			return nil
		}
		return objectErr
	}
	return errors.Join(objectErr, w.writeStatus(ctx, pm)) // keeps a conflict recognisable
}
