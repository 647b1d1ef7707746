package tlsproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// handshakeTimeout bounds a tunnel's TLS handshake, so a client that opens a tunnel and says
// nothing holds no goroutine for long.
const handshakeTimeout = 10 * time.Second

// serveConnect answers the front listener: a CONNECT to a routed host on port 443 becomes a
// TLS tunnel served by the back server; anything else is refused.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		p.logf("tlsproxy: refused %s %s: not a CONNECT", r.Method, r.URL.Path)
		http.Error(w, "tlsproxy: only CONNECT is served (HTTPS_PROXY, not HTTP_PROXY)", http.StatusMethodNotAllowed)
		return
	}
	host, err := p.connectHost(r.Host)
	if err != nil {
		p.logf("%v", err)
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "tlsproxy: cannot take over the connection", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		p.logf("tlsproxy: CONNECT %s: %v", host, err)
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		_ = conn.Close()
		return
	}
	p.terminate(&bufferedConn{Conn: conn, r: rw.Reader}, host)
}

// connectHost checks a CONNECT target ("host:port") against the routes and returns its
// folded host name. Only port 443 is taken, the one the hard-coded https:// URLs mean.
func (p *Proxy) connectHost(target string) (string, error) {
	name, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", fmt.Errorf("tlsproxy: CONNECT %q refused: not host:port", target)
	}
	host := normalizeHost(name)
	if _, ok := p.routes[host]; !ok {
		return "", fmt.Errorf("tlsproxy: CONNECT %s refused: not a host the simulator stands in for (%s); nothing leaves this machine",
			target, strings.Join(routedHosts(p.routes), ", "))
	}
	if port != "443" {
		return "", fmt.Errorf("tlsproxy: CONNECT %s refused: only port 443 is intercepted", target)
	}
	return host, nil
}

// terminate does the server side of the tunnel's TLS handshake and hands the connection to the
// back server. The certificate is the CONNECT host's whatever name the client asks for (SNI), so
// a client that verifies another name fails, as it would against the real host.
func (p *Proxy) terminate(raw net.Conn, host string) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// HTTP/1.1 only: the back server takes the tunnels as plain net.Conns, which it cannot
		// serve HTTP/2 on, and the client under test needs nothing more.
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.ca.leaf(host)
		},
	}
	conn := tls.Server(raw, cfg)
	ctx, cancel := context.WithTimeout(p.ctx, handshakeTimeout)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		p.logf("tlsproxy: TLS handshake for %s failed: %v", host, err)
		_ = conn.Close()
		return
	}
	p.tunnels.push(&routedConn{Conn: conn, host: host})
}

// bufferedConn reads first what the front server read past the CONNECT request's head. A Go
// client sends nothing before the 200, but another client may start its handshake early.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// routedConn is a decrypted tunnel and the host it was opened for. The back server routes its
// requests by that host rather than by their Host header, which the client may set freely.
type routedConn struct {
	net.Conn
	host string
}

// connListener feeds the tunnels to the back server, which serves them as a listener's.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{conns: make(chan net.Conn), done: make(chan struct{}), addr: addr}
}

// push hands over a tunnel, or closes it once the listener is closed.
func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// Accept implements net.Listener.
func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *connListener) Addr() net.Addr { return l.addr }
