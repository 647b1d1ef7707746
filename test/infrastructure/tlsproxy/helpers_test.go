package tlsproxy

// The helpers of the tests: a recording upstream, a proxy in front of it, and a client that
// trusts only the proxy's CA.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is one request as the upstream received it.
type seen struct {
	method, path, rawQuery, authToken, authorization, body string
}

// recorder is an upstream that records what reaches it and answers 200.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, seen{
		method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, body: string(body),
		authToken: r.Header.Get("X-Auth-Token"), authorization: r.Header.Get("Authorization"),
	})
	rec.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (rec *recorder) all() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

// only returns the single request the upstream saw, failing the test otherwise.
func (rec *recorder) only(t *testing.T) seen {
	t.Helper()
	reqs := rec.all()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests, want 1: %+v", len(reqs), reqs)
	}
	return reqs[0]
}

func startProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := Start(Config{Upstream: upstream, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// setup starts a recording upstream and a proxy in front of it.
func setup(t *testing.T) (*recorder, *Proxy) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, startProxy(t, srv.URL)
}

func caPool(t *testing.T, p *Proxy) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CAPEM()) {
		t.Fatal("CAPEM holds no certificate")
	}
	return pool
}

// client goes through the proxy and trusts its CA only, as the child process would.
func client(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	proxyURL, err := url.Parse(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: caPool(t, p), MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func newRequest(t *testing.T, method, target, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// connect opens a tunnel by hand, to see the proxy's answer to CONNECT itself.
func connect(t *testing.T, p *Proxy, target string) (*http.Response, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp, conn
}
