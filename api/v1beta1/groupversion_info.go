// Package v1beta1 contains the infrastructure.cluster.x-k8s.io/v1beta1 API of the Packet provider.
//
// The version name is kept from the previous Packet provider so that its manifests apply unchanged;
// the types implement the Cluster API v1beta2 contract (see the cluster.x-k8s.io/v1beta2 label on
// the CRDs).
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = schemeBuilder.AddToScheme

	// objectTypes are the kinds of this package; each types file appends its own.
	objectTypes = []runtime.Object{}
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, objectTypes...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
