package tlsproxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMetalRequestKeepsPathQueryAndToken(t *testing.T) {
	rec, p := setup(t)
	req := newRequest(t, http.MethodGet, "https://api.equinix.com/metal/v1/projects/x/devices?page=2", "")
	req.Header.Set("X-Auth-Token", "secret-token")
	if code, body := do(t, client(t, p), req); code != http.StatusOK || body != "ok" {
		t.Fatalf("got %d %q, want 200 from the upstream", code, body)
	}
	got := rec.only(t)
	want := seen{method: http.MethodGet, path: "/metal/v1/projects/x/devices", rawQuery: "page=2", authToken: "secret-token"}
	if got != want {
		t.Errorf("upstream saw %+v, want %+v", got, want)
	}
}

func TestLBaaSPathGetsPrefix(t *testing.T) {
	rec, p := setup(t)
	req := newRequest(t, http.MethodGet, "https://lb.metalctrl.io/v1/loadbalancers/y", "")
	req.Header.Set("Authorization", "Bearer access")
	if code, _ := do(t, client(t, p), req); code != http.StatusOK {
		t.Fatalf("got %d, want 200", code)
	}
	if got := rec.only(t); got.path != "/lbaas/v1/loadbalancers/y" || got.authorization != "Bearer access" {
		t.Errorf("upstream saw path %q, Authorization %q; want /lbaas/v1/loadbalancers/y, Bearer access", got.path, got.authorization)
	}
}

func TestTokenExchangeKeepsBody(t *testing.T) {
	rec, p := setup(t)
	req := newRequest(t, http.MethodPost, "https://iam.metalctrl.io/api-keys/exchange", `{"k":"v"}`)
	req.Header.Set("Authorization", "Bearer api-key")
	if code, _ := do(t, client(t, p), req); code != http.StatusOK {
		t.Fatalf("got %d, want 200", code)
	}
	got := rec.only(t)
	want := seen{method: http.MethodPost, path: "/iam/api-keys/exchange", authorization: "Bearer api-key", body: `{"k":"v"}`}
	if got != want {
		t.Errorf("upstream saw %+v, want %+v", got, want)
	}
}

func TestRefusesOtherHosts(t *testing.T) {
	rec, p := setup(t)
	if resp, err := client(t, p).Get("https://example.com/"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET https://example.com/ through the proxy answered %s, want an error", resp.Status)
	}
	for _, target := range []string{"example.com:443", "api.equinix.com:8443"} {
		resp, _ := connect(t, p, target)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "refused") {
			t.Errorf("CONNECT %s: got %d %q, want 403 with a refusal", target, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(p.URL() + "/metal/v1/projects")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("plain GET to the proxy: got %d, want 405", resp.StatusCode)
	}
	if reqs := rec.all(); len(reqs) != 0 {
		t.Errorf("upstream saw %+v, want nothing", reqs)
	}
}

func TestLeafVerifiesOnlyItsHost(t *testing.T) {
	_, p := setup(t)
	handshake := func(serverName string, roots *x509.CertPool) (*tls.Conn, error) {
		resp, conn := connect(t, p, "api.equinix.com:443")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT api.equinix.com:443: got %d, want 200", resp.StatusCode)
		}
		tc := tls.Client(conn, &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12})
		return tc, tc.Handshake()
	}
	var hostErr x509.HostnameError
	if _, err := handshake("lb.metalctrl.io", caPool(t, p)); !errors.As(err, &hostErr) {
		t.Errorf("handshake as lb.metalctrl.io in a tunnel to api.equinix.com: got %v, want a host name error", err)
	}
	var authErr x509.UnknownAuthorityError
	if _, err := handshake("api.equinix.com", x509.NewCertPool()); !errors.As(err, &authErr) {
		t.Errorf("handshake without the proxy's CA: got %v, want an unknown authority error", err)
	}
	tc, err := handshake("api.equinix.com", caPool(t, p))
	if err != nil {
		t.Fatalf("handshake as api.equinix.com: %v", err)
	}
	if names := tc.ConnectionState().PeerCertificates[0].DNSNames; !slices.Equal(names, []string{"api.equinix.com"}) {
		t.Errorf("leaf names %v, want [api.equinix.com]", names)
	}
}

func TestMisdirectedHostHeader(t *testing.T) {
	rec, p := setup(t)
	resp, conn := connect(t, p, "api.equinix.com:443")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: got %d, want 200", resp.StatusCode)
	}
	tc := tls.Client(conn, &tls.Config{ServerName: "api.equinix.com", RootCAs: caPool(t, p), MinVersion: tls.VersionTLS12})
	if _, err := io.WriteString(tc, "GET /v1/loadbalancers/y HTTP/1.1\r\nHost: lb.metalctrl.io\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != http.StatusMisdirectedRequest || len(rec.all()) != 0 {
		t.Errorf("got %d and upstream requests %+v, want 421 and none", got.StatusCode, rec.all())
	}
}

func TestPathsOutsideTheRouteAreNotForwarded(t *testing.T) {
	rec, p := setup(t)
	c := client(t, p)
	for _, target := range []string{"https://api.equinix.com/_sim/reset", "https://lb.metalctrl.io/metal/v1/projects", "https://iam.metalctrl.io/v1/loadbalancers/y"} {
		if code, _ := do(t, c, newRequest(t, http.MethodPost, target, "")); code != http.StatusNotFound {
			t.Errorf("POST %s: got %d, want 404", target, code)
		}
	}
	if reqs := rec.all(); len(reqs) != 0 {
		t.Errorf("upstream saw %+v, want nothing", reqs)
	}
}

func TestUpstreamDownIs502(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	p := startProxy(t, srv.URL)
	code, _ := do(t, client(t, p), newRequest(t, http.MethodGet, "https://api.equinix.com/metal/v1/projects", ""))
	if code != http.StatusBadGateway {
		t.Errorf("got %d, want 502", code)
	}
}

func TestEnvAndCAFile(t *testing.T) {
	_, p := setup(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := p.WriteCAFile(caFile); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(caFile); err != nil || string(data) != string(p.CAPEM()) {
		t.Errorf("CA file holds %q (%v), want CAPEM", data, err)
	}
	env := p.Env(caFile, "10.0.0.1")
	for _, want := range []string{"HTTPS_PROXY=" + p.URL(), "https_proxy=" + p.URL(), "SSL_CERT_FILE=" + caFile, "NO_PROXY=10.0.0.1", "HTTP_PROXY="} {
		if !slices.Contains(env, want) {
			t.Errorf("Env() = %q, missing %q", env, want)
		}
	}
	if !strings.HasPrefix(p.URL(), "http://127.0.0.1:") {
		t.Errorf("URL() = %q, want a loopback http URL", p.URL())
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"upstream without scheme": {Upstream: "127.0.0.1:1"},
		"empty routes":            {Upstream: "http://127.0.0.1:1", Routes: map[string]Route{}},
		"non-loopback address":    {Upstream: "http://127.0.0.1:1", Addr: "0.0.0.0:0"},
	} {
		if p, err := Start(cfg); err == nil {
			_ = p.Close()
			t.Errorf("%s: Start succeeded, want an error", name)
		}
	}
}

func TestRouteRewrite(t *testing.T) {
	routes := PreviousProviderRoutes()
	for _, tc := range []struct {
		host, in, want string
		ok             bool
	}{
		{MetalAPIHost, "/metal/v1/projects", "/metal/v1/projects", true},
		{LBaaSHost, "/v1/loadbalancers/y", "/lbaas/v1/loadbalancers/y", true},
		{IAMHost, "/api-keys/exchange", "/iam/api-keys/exchange", true},
		{LBaaSHost, "/v10/x", "", false},
		{MetalAPIHost, "/metal/v1", "", false},
	} {
		if got, ok := routes[tc.host].rewrite(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: got %q %v, want %q %v", tc.host, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
