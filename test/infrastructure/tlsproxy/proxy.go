// Package tlsproxy lets a program with hard-coded HTTPS hosts talk to the offline Packet API
// simulator (packetsim). It is a loopback HTTP CONNECT proxy: for the hosts of its route table
// it terminates TLS with certificates minted by its own CA and forwards each request over
// plain HTTP to the simulator, with the path mapped onto the prefix the simulator serves that
// host under. A CONNECT to any other host is refused, so nothing leaves the machine.
//
// The program under test must honour HTTPS_PROXY and SSL_CERT_FILE, as Go's
// http.DefaultTransport does; Env gives the variables to start it with.
package tlsproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Config configures a Proxy.
type Config struct {
	// Upstream is the simulator's base URL, such as "http://127.0.0.1:17401".
	Upstream string
	// Routes maps each intercepted host name to its paths on the simulator; nil means
	// PreviousProviderRoutes().
	Routes map[string]Route
	// Addr is the address to listen on (default "127.0.0.1:0"); it must be a loopback one,
	// since the proxy holds a CA key that every client pointed at it trusts.
	Addr string
	// Log, when set, receives one line per request or refusal: method, host, path and status.
	// Header values, tokens, query strings and bodies are never logged.
	Log func(format string, args ...any)
}

// Proxy is a running proxy. Its methods are safe for concurrent use.
type Proxy struct {
	upstream  *url.URL
	routes    map[string]Route
	ca        *authority
	log       func(format string, args ...any)
	ln        net.Listener
	front     *http.Server // answers CONNECT on ln
	back      *http.Server // serves the decrypted requests of the tunnels
	tunnels   *connListener
	reverse   *httputil.ReverseProxy
	transport *http.Transport
	ctx       context.Context // cancelled by Close; bounds the TLS handshakes
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the Serve goroutines

	// Close waits for the handlers too: http.Server.Close does not, and a hijacked tunnel is
	// no longer the server's at all. A handler that logs after Close returned would call a
	// finished test's t.Logf, which panics.
	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
}

// Start listens and serves in the background until Close.
func Start(cfg Config) (*Proxy, error) {
	upstream, err := url.Parse(cfg.Upstream)
	if err != nil || (upstream.Scheme != "http" && upstream.Scheme != "https") || upstream.Host == "" {
		return nil, fmt.Errorf("tlsproxy: upstream %q is not an http:// or https:// base URL", cfg.Upstream)
	}
	routes := cfg.Routes
	if routes == nil {
		routes = PreviousProviderRoutes()
	}
	if len(routes) == 0 {
		return nil, errors.New("tlsproxy: no routes")
	}
	ca, err := newAuthority(time.Now())
	if err != nil {
		return nil, err
	}
	ln, err := listenLoopback(cfg.Addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, routes: normalizeRoutes(routes), ca: ca, log: cfg.Log, ln: ln}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.tunnels = newConnListener(ln.Addr())
	p.front = &http.Server{Handler: p.tracked(p.serveConnect), ReadHeaderTimeout: 10 * time.Second}
	p.back = p.newBackServer()
	p.serve(p.front, ln)
	p.serve(p.back, p.tunnels)
	return p, nil
}

// listenLoopback listens on addr and refuses any address that is not a loopback one.
func listenLoopback(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: listen: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("tlsproxy: %s is not a loopback address", ln.Addr())
	}
	return ln, nil
}

// serve runs srv on ln in a goroutine that Close waits for.
func (p *Proxy) serve(srv *http.Server, ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logf("tlsproxy: serving stopped: %v", err)
		}
	}()
}

// URL is the proxy's address as HTTPS_PROXY takes it: "http://127.0.0.1:PORT".
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// CAPEM is the PEM certificate of the proxy's CA, what SSL_CERT_FILE must hold.
func (p *Proxy) CAPEM() []byte { return append([]byte(nil), p.ca.pem...) }

// WriteCAFile writes CAPEM to path, for SSL_CERT_FILE.
func (p *Proxy) WriteCAFile(path string) error {
	if err := os.WriteFile(path, p.ca.pem, 0o600); err != nil {
		return fmt.Errorf("tlsproxy: %w", err)
	}
	return nil
}

// Env returns the variables that send a child process's HTTPS requests through the proxy and
// make it trust the proxy's CA (written to caFile, see WriteCAFile) instead of the system's.
// Append them after os.Environ(): exec.Cmd keeps the last value of a duplicate, and both
// spellings are set because Go reads the lower-case one when the upper-case one is empty.
// HTTP_PROXY is emptied so an inherited proxy sees no plain-HTTP request either. noProxy lists
// hosts to reach directly (NO_PROXY syntax); Go never proxies loopback addresses anyway, so an
// apiserver on 127.0.0.1 needs no entry, but one on another address does, or it is refused.
func (p *Proxy) Env(caFile string, noProxy ...string) []string {
	np := strings.Join(noProxy, ",")
	return []string{
		"HTTPS_PROXY=" + p.URL(), "https_proxy=" + p.URL(),
		"HTTP_PROXY=", "http_proxy=",
		"NO_PROXY=" + np, "no_proxy=" + np,
		"SSL_CERT_FILE=" + caFile,
	}
}

// Close stops listening, closes the tunnels and waits for the serving goroutines and handlers.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	err := errors.Join(p.front.Close(), p.back.Close())
	p.handlers.Wait()
	p.transport.CloseIdleConnections()
	p.wg.Wait()
	return err
}

// tracked runs h as a handler Close waits for; once Close has begun, it answers 503 instead.
func (p *Proxy) tracked(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			http.Error(w, "tlsproxy: closing", http.StatusServiceUnavailable)
			return
		}
		p.handlers.Add(1)
		p.mu.Unlock()
		defer p.handlers.Done()
		h(w, r)
	})
}

// logf logs through Config.Log, if set.
func (p *Proxy) logf(format string, args ...any) {
	if p.log != nil {
		p.log(format, args...)
	}
}
