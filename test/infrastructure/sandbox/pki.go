package sandbox

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
)

// pki is the sandbox's own certificate authority and the files signed by it. Everything lives in
// <state>/pki and is reused across restarts, so a kubeconfig handed out once keeps working.
//
// Key and certificate generation is Cluster API's util/certs and client-go's util/cert; this file
// only decides what is issued, where it is written, and when an existing file is still good.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
}

// minRemainingValidity is how long a certificate found on disk must still be valid to be reused
// rather than issued again.
const minRemainingValidity = 24 * time.Hour

func loadOrCreatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if certPEM, err := os.ReadFile(certFile); err == nil {
		keyPEM, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("reading the sandbox CA key: %w", err)
		}
		cert, key, err := parsePair(certPEM, keyPEM)
		if err == nil && time.Until(cert.NotAfter) > minRemainingValidity {
			p.caCert, p.caKey, p.caPEM = cert, key, certPEM
			return p, nil
		}
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	// NotBefore an hour back tolerates a little clock skew between the processes that check it.
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{
		CommonName: "cluster-api-provider-packet sandbox CA",
		NotBefore:  time.Now().Add(-time.Hour),
	}, key)
	if err != nil {
		return nil, err
	}
	keyPEM, err := certs.EncodePrivateKeyPEMFromSigner(key)
	if err != nil {
		return nil, err
	}
	p.caCert, p.caKey, p.caPEM = cert, key, certs.EncodeCertPEM(cert)
	// A new CA invalidates every certificate signed by the old one.
	_ = os.RemoveAll(filepath.Join(dir, "issued"))
	if err := writeFile(certFile, p.caPEM, 0o644); err != nil {
		return nil, err
	}
	return p, writeFile(keyFile, keyPEM, 0o600)
}

// serving writes (once) a serving certificate for 127.0.0.1 and localhost into dir as tls.crt and
// tls.key, the names controller-runtime's webhook server and kube-apiserver are given.
func (p *pki) serving(dir, cn string) error {
	return p.issue(dir, &certs.Config{
		CommonName: cn,
		AltNames:   certs.AltNames{DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// client writes (once) a client certificate for user cn in the given groups.
func (p *pki) client(dir, cn string, groups ...string) error {
	return p.issue(dir, &certs.Config{
		CommonName:   cn,
		Organization: groups,
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (p *pki) issue(dir string, cfg *certs.Config) error {
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if p.stillValid(certFile, keyFile) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	cert, err := cfg.NewSignedCert(key, p.caCert, p.caKey)
	if err != nil {
		return err
	}
	keyPEM, err := certs.EncodePrivateKeyPEMFromSigner(key)
	if err != nil {
		return err
	}
	if err := writeFile(certFile, certs.EncodeCertPEM(cert), 0o644); err != nil {
		return err
	}
	return writeFile(keyFile, keyPEM, 0o600)
}

// stillValid reports whether certFile and keyFile hold a pair this CA signed that does not expire
// within minRemainingValidity.
func (p *pki) stillValid(certFile, keyFile string) bool {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return false
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return false
	}
	cert, _, err := parsePair(certPEM, keyPEM)
	return err == nil && cert.CheckSignatureFrom(p.caCert) == nil && time.Until(cert.NotAfter) > minRemainingValidity
}

// serviceAccountKey writes (once) the RSA key pair kube-apiserver signs service account tokens with,
// as sa.pub and sa.key.
func (p *pki) serviceAccountKey() error {
	pubFile, keyFile := filepath.Join(p.dir, "sa.pub"), filepath.Join(p.dir, "sa.key")
	if _, err := os.Stat(keyFile); err == nil {
		if _, err := os.Stat(pubFile); err == nil {
			return nil
		}
	}
	key, err := certs.NewPrivateKey()
	if err != nil {
		return err
	}
	pubPEM, err := certs.EncodePublicKeyPEM(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writeFile(pubFile, pubPEM, 0o644); err != nil {
		return err
	}
	return writeFile(keyFile, certs.EncodePrivateKeyPEM(key), 0o600)
}

// certPool is a pool holding just the sandbox CA, for clients of the servers it signed.
func (p *pki) certPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	return pool
}

// newKey makes the ECDSA P-256 key every sandbox certificate (CA and leaves) is issued for.
func newKey() (crypto.Signer, error) {
	return certs.NewSigner(bootstrapv1.EncryptionAlgorithmECDSAP256)
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	cert, err := certs.DecodeCertPEM(certPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := certs.DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	if key == nil {
		return nil, nil, errors.New("no private key in PEM")
	}
	return cert, key, nil
}

// writeFile writes atomically, so a crash never leaves half a key behind.
func writeFile(name string, data []byte, mode os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
