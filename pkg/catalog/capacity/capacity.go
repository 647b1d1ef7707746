// Package capacity describes what a machine of a plan offers — CPUs, memory, GPUs and CPU
// architecture — from Packet's plan catalogue, for the cluster autoscaler to scale node groups
// up from zero.
package capacity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

// GPUResource is the resource name GPUs are reported under.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// ErrUnknownPlan says the catalogue has no such plan for the project.
type ErrUnknownPlan struct{ Plan string }

func (e *ErrUnknownPlan) Error() string {
	return fmt.Sprintf("plan %q is not in the project's plan catalogue", e.Plan)
}

// Machine is what a machine of a plan offers.
type Machine struct {
	Capacity corev1.ResourceList
	NodeInfo infrav1.NodeInfo
	// Drives is how many disks it has, for a storage layout to name at most.
	Drives int
}

// ForPlan returns what a machine of plan offers, from the project's plan catalogue.
func ForPlan(ctx context.Context, c packet.Client, projectID, plan string) (Machine, error) {
	plans, err := c.ListPlans(ctx, projectID)
	if err != nil {
		return Machine{}, err
	}
	for _, p := range plans {
		if p.Slug != plan {
			continue
		}
		list := corev1.ResourceList{}
		if p.CPUs > 0 {
			list[corev1.ResourceCPU] = *resource.NewQuantity(int64(p.CPUs), resource.DecimalSI)
		}
		if p.MemoryBytes > 0 {
			list[corev1.ResourceMemory] = *resource.NewQuantity(p.MemoryBytes, resource.BinarySI)
		}
		if p.GPUs > 0 {
			list[GPUResource] = *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI)
		}
		info := infrav1.NodeInfo{Architecture: infrav1.Architecture(p.Architecture), OperatingSystem: "linux"}
		return Machine{Capacity: list, NodeInfo: info, Drives: p.Drives}, nil
	}
	return Machine{}, &ErrUnknownPlan{Plan: plan}
}
