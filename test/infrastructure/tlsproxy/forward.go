package tlsproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"time"
)

// hostKey carries a tunnel's CONNECT host into its requests' contexts.
type hostKey struct{}

// newBackServer builds the server of the decrypted requests and the reverse proxy behind it.
func (p *Proxy) newBackServer() *http.Server {
	p.transport = &http.Transport{
		// No Proxy: the simulator is local, and a proxy inherited from the environment (maybe
		// this very one) must not see its requests.
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	p.reverse = &httputil.ReverseProxy{
		// SetURL puts the upstream's scheme, host and base path in front; the headers, the
		// credentials among them, pass as they came, and no X-Forwarded-* is added.
		Rewrite:      func(pr *httputil.ProxyRequest) { pr.SetURL(p.upstream) },
		Transport:    p.transport,
		ErrorHandler: p.upstreamFailed,
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	return &http.Server{
		Handler:           p.tracked(p.serveForward),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if rc, ok := c.(*routedConn); ok {
				ctx = context.WithValue(ctx, hostKey{}, rc.host)
			}
			return ctx
		},
	}
}

// serveForward maps a decrypted request onto the simulator and forwards it.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request) {
	host, _ := r.Context().Value(hostKey{}).(string)
	route, ok := p.routes[host]
	if !ok {
		http.Error(w, "tlsproxy: request outside a tunnel", http.StatusBadRequest)
		return
	}
	if normalizeHost(hostOf(r.Host)) != host {
		// The tunnel was opened for another host: answer as a server that is not that one.
		p.logf("tlsproxy: %s https://%s%s: Host header names another host", r.Method, host, r.URL.Path)
		http.Error(w, "tlsproxy: this connection serves "+host+" only", http.StatusMisdirectedRequest)
		return
	}
	orig := r.URL.Path
	path, ok := route.rewrite(orig)
	if !ok {
		p.logf("tlsproxy: %s https://%s%s -> 404 (outside %s)", r.Method, host, orig, route.From)
		http.Error(w, fmt.Sprintf("tlsproxy: %s: only paths under %s are forwarded", host, route.From), http.StatusNotFound)
		return
	}
	r.URL.Path = path
	if r.URL.RawPath != "" {
		r.URL.RawPath, _ = route.rewrite(r.URL.RawPath) // "" if escaping moved the prefix: Path alone then
	}
	sw := &statusWriter{ResponseWriter: w}
	p.reverse.ServeHTTP(sw, r)
	p.logf("tlsproxy: %s https://%s%s -> %s %d", r.Method, host, orig, path, sw.code())
}

// hostOf drops the port, if any, from a Host header.
func hostOf(hostport string) string {
	if name, _, err := net.SplitHostPort(hostport); err == nil {
		return name
	}
	return hostport
}

// upstreamFailed answers 502 when the simulator cannot be reached.
func (p *Proxy) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	p.logf("tlsproxy: %s %s: upstream %s: %v", r.Method, r.URL.Path, p.upstream.Host, err)
	http.Error(w, fmt.Sprintf("tlsproxy: the simulator at %s did not answer", p.upstream.Host), http.StatusBadGateway)
}

// statusWriter remembers the status of the answer for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= http.StatusOK { // 1xx answers come first and are not the status
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (which ReverseProxy flushes through) reach the writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
