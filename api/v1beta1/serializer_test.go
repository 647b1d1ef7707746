package v1beta1_test

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// clientNegotiatedSerializer lets a bare REST client read raw responses such as server-side tables.
func clientNegotiatedSerializer() runtime.NegotiatedSerializer {
	return serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
}
