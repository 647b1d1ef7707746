package credentials_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// keyClients hands out a nil client for any key, recording the keys it was asked for.
type keyClients struct{ keys []string }

func (k *keyClients) ClientFor(_, apiKey string) (packet.Client, error) {
	k.keys = append(k.keys, apiKey)
	return nil, nil
}

func TestCredentialsAreReadAgainOnlyWhenTheirSecretChanges(t *testing.T) {
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "packet"}, Data: map[string][]byte{"apiKey": []byte("key-1")}}
	base := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret).Build()
	reads := 0
	clients := &keyClients{}
	reader := interceptor.NewClient(base, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, whole := obj.(*corev1.Secret); whole {
			reads++
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	source := &credentials.Source{Reader: reader, Clients: clients, Metadata: base}
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec: infrav1.PacketClusterSpec{CredentialsRef: &infrav1.SecretReference{Name: "packet"}}}
	connect := func() {
		t.Helper()
		if _, _, err := source.Connect(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}

	connect()
	connect()
	if reads != 1 {
		t.Errorf("two connects with the Secret unchanged read it %d times, want once", reads)
	}
	secret.Data["apiKey"] = []byte("key-2")
	if err := base.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	connect()
	if reads != 2 || clients.keys[len(clients.keys)-1] != "key-2" {
		t.Errorf("after the Secret changed: %d reads, keys used %v; want a second read and key-2", reads, clients.keys)
	}
	if err := base.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, _, err := source.Connect(ctx, pc); err == nil {
		t.Error("the Secret is gone, yet credentials were returned")
	}
}
