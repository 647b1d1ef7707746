package scope

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConditionsObject is a PacketCluster or a PacketMachine.
type ConditionsObject interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// DropInvalidConditions removes from obj's status, at the API server, the conditions this
// provider's CRDs refuse. The previous provider (v0.9.0) wrote
// Cluster API v1beta1 conditions into the same field of the same API version: one that is True
// has no reason there, and none needs a message. Its CRDs allowed that; ours (metav1.Condition)
// require both. Every status write sends the whole list back, Cluster API's patch helper's too
// (it merges into the list it reads, then sends that), so a single such condition gets every
// status write of a taken-over object refused, the Paused condition's first of all. Hence a write
// of its own, before any other of the reconcile; it happens once per object, and a reconcile
// that finds nothing to drop sends nothing.
//
// They are dropped, not converted as Cluster API's own v1beta2 types keep v1beta1 conditions in
// status.deprecated.v1beta1: those are one controller's conditions in two shapes, kept for
// clients of the older API. These are another controller's, about work it no longer does
// (InstanceReady, NetworkInfrastructureReady), that nothing would update again: kept, they
// would pass for current. The reconcile that follows sets this provider's own, Ready among them.
// Conditions the schema accepts are kept, whoever wrote them.
func DropInvalidConditions(ctx context.Context, c client.Client, obj ConditionsObject) error {
	all := obj.GetConditions()
	valid := make([]metav1.Condition, 0, len(all))
	for _, cond := range all {
		if len(metav1validation.ValidateCondition(cond, nil)) == 0 {
			valid = append(valid, cond)
		}
	}
	if len(valid) == len(all) {
		return nil
	}
	// The optimistic lock keeps a newer status from being overwritten by this copy's; a
	// conflict retries the reconcile from the newer one.
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	if len(valid) == 0 {
		valid = nil // omitted, so the patch removes the field
	}
	obj.SetConditions(valid)
	if err := c.Status().Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("removing %d conditions the previous provider wrote without a reason: %w", len(all)-len(valid), err)
	}
	return nil
}
