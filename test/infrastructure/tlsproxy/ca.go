package tlsproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// certLifetime outlasts any test run; the CA lives only in the proxy's memory and in the file
// the child process is pointed at, so a short life limits nothing worth limiting.
const certLifetime = 7 * 24 * time.Hour

// authority is the proxy's own certificate authority. Each Proxy makes a fresh one, so no key
// is ever written to disk and a CA trusted by one test run is worthless to the next.
type authority struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	pem      []byte
	notAfter time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // by host, minted on the first handshake for it
}

// newAuthority makes a self-signed CA that may sign leaves only (MaxPathLen 0).
func newAuthority(now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "cluster-api-provider-packet test TLS proxy CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: CA certificate: %w", err)
	}
	return &authority{
		cert: cert, key: key, notAfter: tmpl.NotAfter,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{},
	}, nil
}

// leaf returns the certificate for host, minting it on first use. Callers pass only routed
// hosts, so the cache stays as small as the route table.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[host]; ok {
		return c, nil
	}
	c, err := a.mint(host, time.Now())
	if err != nil {
		return nil, err
	}
	a.leaves[host] = c
	return c, nil
}

// mint signs a server certificate valid for host alone, with a key of its own.
func (a *authority) mint(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: key for %s: %w", host, err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     a.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// serialNumber draws a random 128-bit serial, as RFC 5280 asks of a CA.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: serial number: %w", err)
	}
	return n, nil
}
