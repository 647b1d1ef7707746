package sandbox

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/cluster-api/util/certs"
)

// The certificates kube-apiserver, etcd and the webhooks are given must verify against the sandbox
// CA for 127.0.0.1 and localhost, and a second start must reuse what the first one wrote.
func TestPKIIssuesVerifiableCertificatesAndReusesThem(t *testing.T) {
	dir := t.TempDir()
	p, err := loadOrCreatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	serving, admin := filepath.Join(dir, "issued", "etcd"), filepath.Join(dir, "issued", "admin")
	if err := p.serving(serving, "etcd"); err != nil {
		t.Fatal(err)
	}
	if err := p.client(admin, "sandbox-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	if err := p.serviceAccountKey(); err != nil {
		t.Fatal(err)
	}

	leaf := loadPair(t, serving)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: p.certPool(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	user := loadPair(t, admin)
	if _, err := user.Verify(x509.VerifyOptions{Roots: p.certPool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if user.Subject.CommonName != "sandbox-admin" || !slices.Equal(user.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client certificate subject %v", user.Subject)
	}

	before := readAll(t, dir, "ca.crt", "issued/etcd/tls.crt", "issued/admin/tls.key", "sa.key", "sa.pub")
	again, err := loadOrCreatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.serving(serving, "etcd"); err != nil {
		t.Fatal(err)
	}
	if err := again.client(admin, "sandbox-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	if err := again.serviceAccountKey(); err != nil {
		t.Fatal(err)
	}
	if after := readAll(t, dir, "ca.crt", "issued/etcd/tls.crt", "issued/admin/tls.key", "sa.key", "sa.pub"); !slices.EqualFunc(before, after, bytes.Equal) {
		t.Error("a second start issued new files instead of reusing the first start's")
	}
}

func loadPair(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certs.DecodeCertPEM(readAll(t, dir, "tls.crt")[0])
	if err != nil || !bytes.Equal(cert.Raw, pair.Certificate[0]) {
		t.Fatalf("decoding %s/tls.crt: %v", dir, err)
	}
	return cert
}

func readAll(t *testing.T, dir string, names ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}
