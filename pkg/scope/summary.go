package scope

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// setReadySummary summarises the step conditions of obj into Ready, the way Cluster API's
// summary does, except that a True Ready carries no message. Cluster API mirrors Ready into the
// Machine's and the Cluster's InfrastructureReady, and from there into their Ready and Available,
// where a message on a True condition reads as something to look at (Cluster API's e2e
// framework requires it empty). The step conditions keep their details ("Device … is active");
// Ready only says what is wrong.
//
// An object without any step condition is left as it is: a reconcile that looked at nothing (a
// copy from the informer cache older than this process's own writes, waited out) has nothing to
// summarise, and Cluster API's summary refuses an empty list with an error.
func setReadySummary(obj conditions.Setter, stepConditions []string) error {
	if !slices.ContainsFunc(stepConditions, func(t string) bool { return conditions.Has(obj, t) }) {
		return nil
	}
	return conditions.SetSummaryCondition(obj, obj, clusterv1.ReadyCondition,
		conditions.ForConditionTypes(stepConditions),
		conditions.IgnoreTypesIfMissing(stepConditions),
		conditions.CustomMergeStrategy{MergeStrategy: silentWhenTrue{conditions.DefaultMergeStrategy()}},
	)
}

// silentWhenTrue drops the message of a True merge result.
type silentWhenTrue struct{ conditions.MergeStrategy }

func (s silentWhenTrue) Merge(op conditions.MergeOperation, in []conditions.ConditionWithOwnerInfo, types []string) (metav1.ConditionStatus, string, string, error) {
	status, reason, message, err := s.MergeStrategy.Merge(op, in, types)
	if status == metav1.ConditionTrue {
		message = ""
	}
	return status, reason, message, err
}
