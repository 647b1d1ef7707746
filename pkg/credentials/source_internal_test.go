package credentials

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
)

type anyKey struct{}

func (anyKey) ClientFor(_, _ string) (packet.Client, error) { return nil, nil }

func TestTheCredentialsOfADeletedSecretAreForgotten(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	used := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "used"}, Data: map[string][]byte{"apiKey": []byte("k1")}}
	gone := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}, Data: map[string][]byte{"apiKey": []byte("k2")}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(used, gone).Build()
	source := &Source{Reader: c, Clients: anyKey{}, Metadata: c}
	for _, name := range []string{"used", "gone"} {
		pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: infrav1.PacketClusterSpec{CredentialsRef: &infrav1.SecretReference{Name: name}}}
		if _, _, err := source.Connect(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	source.Observe(ctx, used)
	source.Observe(ctx, gone)
	if _, ok := source.secrets[client.ObjectKeyFromObject(gone)]; ok {
		t.Error("the deleted Secret's credentials are still kept")
	}
	if _, ok := source.secrets[client.ObjectKeyFromObject(used)]; !ok {
		t.Error("the credentials of a Secret that still exists were dropped")
	}
}
