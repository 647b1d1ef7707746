package bootemu

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/cluster-api/util/certs"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryapi "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/api"
	inmemoryetcd "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/etcd"
)

// workloadCluster is one emulated Kubernetes control plane: a resource group of Cluster API's
// in-memory runtime (the cluster's objects), and the TLS endpoint that serves them and the etcd
// members, on the control-plane endpoint itself.
type workloadCluster struct {
	// endpoint is host:port, as the bootstrap data names it; it also names the resource group.
	endpoint string
	ca       *x509.Certificate
	caKey    *rsa.PrivateKey
	etcdCA   *x509.Certificate
	etcdKey  *rsa.PrivateKey
	// kubeVIP and cloudProvider say who routes the endpoint (see routing.go).
	kubeVIP, cloudProvider bool
	// everServed is set once the endpoint answered: the cluster came up, and whatever its
	// bootstrap installed in it (CPEM) runs from then on.
	everServed bool
	// lastMove is when the emulated CPEM last tried to move the elastic IP (see MoveRetry).
	lastMove time.Time
	// cpemSaid is what the emulated CPEM last said on a console about a move it could not make.
	cpemSaid string

	handler http.Handler
	log     logr.Logger

	mu        sync.Mutex
	apiCert   *tls.Certificate
	etcdCerts map[string]*tls.Certificate // by etcd pod name, which is the TLS server name KCP uses
	server    *http.Server                // nil while the endpoint does not answer
	// listener is the server's: stop closes it itself, because Server.Close only closes the
	// listeners Serve has started on, and Serve runs in a goroutine that may not have yet.
	listener net.Listener
}

func newWorkloadCluster(mgr inmemoryruntime.Manager, b *Boot, log logr.Logger) (*workloadCluster, error) {
	ca, caKey, err := decodeKeyPair(b.CA)
	if err != nil {
		return nil, bootErrorf("kubeadm: [certs] cluster CA: %v", err)
	}
	etcdCA, etcdKey, err := decodeKeyPair(b.EtcdCA)
	if err != nil {
		return nil, bootErrorf("kubeadm: [certs] etcd CA: %v", err)
	}
	c := &workloadCluster{endpoint: b.Endpoint, ca: ca, caKey: caKey, etcdCA: etcdCA, etcdKey: etcdKey,
		kubeVIP: b.KubeVIP, cloudProvider: b.CloudProvider, etcdCerts: map[string]*tls.Certificate{}, log: log}
	host := c.host()
	apiCert, err := signedCertificate(ca, caKey, &certs.Config{
		CommonName: "kube-apiserver",
		AltNames: certs.AltNames{
			DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
			IPs:      ipsOf(host, "127.0.0.1"),
		},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, host)
	if err != nil {
		return nil, err
	}
	c.apiCert = apiCert
	mgr.AddResourceGroup(c.endpoint)
	resolve := func(string) (string, error) { return c.endpoint, nil }
	api := inmemoryapi.NewAPIServerHandler(mgr, log, resolve)
	etcd := inmemoryetcd.NewEtcdServerHandler(mgr, log, resolve)
	// One listener carries the API server and every etcd member, as Cluster API's in-memory
	// mux does: KCP reaches etcd by a port-forward that the API handler dials back to this
	// same address, with the etcd pod's name as TLS server name.
	api = statusSubresource(nodeTables(api))
	c.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			etcd.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
	return c, nil
}

func (c *workloadCluster) host() string {
	h, _, _ := net.SplitHostPort(c.endpoint)
	return h
}

// sameCA reports whether a joining control plane carries this cluster's CA.
func (c *workloadCluster) sameCA(kp KeyPair) bool {
	cert, err := certs.DecodeCertPEM(kp.Cert)
	return err == nil && cert != nil && bytes.Equal(cert.Raw, c.ca.Raw)
}

// caHash is kubeadm's discovery hash of the cluster CA: sha256 of its public key info.
func (c *workloadCluster) caHash() string {
	sum := sha256.Sum256(c.ca.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// addEtcdMember issues the serving certificate of an etcd member, signed by the etcd CA.
func (c *workloadCluster) addEtcdMember(podName string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcdCerts[podName] != nil {
		return nil
	}
	cert, err := signedCertificate(c.etcdCA, c.etcdKey, &certs.Config{
		CommonName: podName,
		AltNames:   certs.AltNames{DNSNames: []string{podName, "localhost"}, IPs: ipsOf(c.host(), "127.0.0.1")},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, c.host())
	if err != nil {
		return err
	}
	c.etcdCerts[podName] = cert
	return nil
}

func (c *workloadCluster) removeEtcdMember(podName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.etcdCerts, podName)
}

// serving reports whether the endpoint answers.
func (c *workloadCluster) serving() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server != nil
}

// serve starts answering on the endpoint (idempotent).
func (c *workloadCluster) serve() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server != nil {
		return nil
	}
	l, err := net.Listen("tcp", c.endpoint) //nolint:noctx // a listener for the life of the route
	if err != nil {
		return fmt.Errorf("listening on the control-plane endpoint %s: %w", c.endpoint, err)
	}
	srv := &http.Server{Handler: c.handler, ReadHeaderTimeout: 10 * time.Second,
		// go-restful writes headers twice on some errors; net/http would log each of those.
		ErrorLog:  log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.certificate}}
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error(err, "Serving the control-plane endpoint", "endpoint", c.endpoint)
		}
	}()
	c.server, c.listener, c.everServed = srv, l, true
	c.log.Info("Control-plane endpoint answers", "endpoint", c.endpoint)
	return nil
}

// stop closes the endpoint and every open connection, as a route withdrawn from Packet's
// network does.
func (c *workloadCluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server == nil {
		return
	}
	_ = c.server.Close()
	_ = c.listener.Close()
	c.server, c.listener = nil, nil
	c.log.Info("Control-plane endpoint no longer answers", "endpoint", c.endpoint)
}

func (c *workloadCluster) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cert := c.etcdCerts[hello.ServerName]; cert != nil {
		return cert, nil
	}
	return c.apiCert, nil
}

func decodeKeyPair(kp KeyPair) (*x509.Certificate, *rsa.PrivateKey, error) {
	cert, err := certs.DecodeCertPEM(kp.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate is not PEM: %w", err)
	}
	if cert == nil {
		return nil, nil, errors.New("no PEM certificate")
	}
	key, err := certs.DecodePrivateKeyPEM(kp.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("key is not PEM: %w", err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("key is %T, not RSA", key)
	}
	return cert, rsaKey, nil
}

// servingKey is one key for every serving certificate the emulation issues: generating an RSA key
// per certificate would cost more than the rest of a boot.
var servingKey = sync.OnceValues(certs.NewPrivateKey)

func signedCertificate(ca *x509.Certificate, caKey *rsa.PrivateKey, cfg *certs.Config, host string) (*tls.Certificate, error) {
	key, err := servingKey()
	if err != nil {
		return nil, err
	}
	cert, err := cfg.NewSignedCert(key, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate of %s: %w", host, err)
	}
	pair, err := tls.X509KeyPair(certs.EncodeCertPEM(cert), certs.EncodePrivateKeyPEM(key))
	if err != nil {
		return nil, err
	}
	return &pair, nil
}

func ipsOf(addrs ...string) []net.IP {
	var out []net.IP
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil {
			out = append(out, ip)
		}
	}
	return out
}
