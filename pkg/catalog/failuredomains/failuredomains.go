// Package failuredomains tells Cluster API where a cluster's machines may be spread: the
// facilities of the cluster's metro that offer the plans its machines use.
package failuredomains

import (
	"context"
	"slices"
	"sort"
	"time"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// RefreshAfter is how long a cluster's failure domains stand before they are computed again: a
// metro gains or retires facilities, and the templates of a cluster, whose plans narrow its
// facilities, come and go after it was provisioned.
const RefreshAfter = time.Hour

// ComputedAtAnnotation records on the PacketCluster when its failure domains were computed.
const ComputedAtAnnotation = "packetcluster.infrastructure.cluster.x-k8s.io/failure-domains-computed-at"

// Due reports whether the cluster's failure domains are to be computed now and, if not, how long
// until they are.
func Due(pc *infrav1.PacketCluster, now time.Time) (bool, time.Duration) {
	at, err := time.Parse(time.RFC3339, pc.Annotations[ComputedAtAnnotation])
	if err != nil || len(pc.Status.FailureDomains) == 0 {
		return true, 0
	}
	if left := at.Add(RefreshAfter).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// Computed records that the cluster's failure domains were computed at now.
func Computed(pc *infrav1.PacketCluster, now time.Time) {
	if pc.Annotations == nil {
		pc.Annotations = map[string]string{}
	}
	pc.Annotations[ComputedAtAnnotation] = now.UTC().Format(time.RFC3339)
}

// Compute returns the failure domains of the cluster. A facility-pinned cluster has one: its
// facility. A metro cluster has the metro's facilities, narrowed to those offering every plan
// its PacketMachines and PacketMachineTemplates (labelled with the cluster name) use.
func Compute(ctx context.Context, s *scope.ClusterScope) ([]clusterv1.FailureDomain, error) {
	pc := s.PacketCluster
	if pc.Spec.Metro == "" {
		if pc.Spec.Facility == "" {
			return nil, nil
		}
		return []clusterv1.FailureDomain{domain(pc.Spec.Facility, pc.Spec.Facility)}, nil
	}
	facilities, err := s.Packet.ListFacilities(ctx)
	if err != nil {
		return nil, err
	}
	var codes []string
	for _, f := range facilities {
		if f.Metro == pc.Spec.Metro {
			codes = append(codes, f.Code)
		}
	}
	plans, err := plansInUse(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(plans) > 0 {
		catalog, err := s.Packet.ListPlans(ctx, pc.Spec.ProjectID)
		if err != nil {
			return nil, err
		}
		for _, p := range catalog {
			if slices.Contains(plans, p.Slug) {
				codes = slices.DeleteFunc(codes, func(code string) bool { return !slices.Contains(p.AvailableInFacilities, code) })
			}
		}
	}
	sort.Strings(codes)
	out := make([]clusterv1.FailureDomain, 0, len(codes))
	for _, code := range codes {
		out = append(out, domain(code, pc.Spec.Metro))
	}
	return out, nil
}

func domain(facility, metro string) clusterv1.FailureDomain {
	return clusterv1.FailureDomain{Name: facility, ControlPlane: ptr.To(true),
		Attributes: map[string]string{"metro": metro}}
}

// plansInUse lists the plans of the cluster's PacketMachines and PacketMachineTemplates.
func plansInUse(ctx context.Context, s *scope.ClusterScope) ([]string, error) {
	selector := client.MatchingLabels{clusterv1.ClusterNameLabel: s.Cluster.Name}
	inNamespace := client.InNamespace(s.Cluster.Namespace)
	var plans []string
	machines := &infrav1.PacketMachineList{}
	if err := s.List(ctx, machines, inNamespace, selector); err != nil {
		return nil, err
	}
	for _, m := range machines.Items {
		plans = appendUnique(plans, m.Spec.MachineType)
	}
	templates := &infrav1.PacketMachineTemplateList{}
	if err := s.List(ctx, templates, inNamespace, selector); err != nil {
		return nil, err
	}
	for _, t := range templates.Items {
		plans = appendUnique(plans, t.Spec.Template.Spec.MachineType)
	}
	return plans, nil
}

func appendUnique(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
