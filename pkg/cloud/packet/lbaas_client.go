package packet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// lbaasClient speaks the load-balancer API for one Metal API key. Its http.Client's transport is
// a pipeline of its own (LBaaS is a separate service with separate limits), the same code as the
// Metal client's: the budget, the pause after a 429, the metrics. Its errors are classified into
// the same kinds, and neither the key nor a token is in any error or log line.
type lbaasClient struct {
	baseURL   string
	userAgent string
	http      *http.Client
	tokens    *tokenSource
	now       func() time.Time
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// do sends one request through the pipeline and decodes the answer into out (nil: ignore it). A
// 401 with a token that was cached is answered once more with a fresh token: LBaaS may end a
// token before its expires_in says, and the next exchange fixes that.
func (c *lbaasClient) do(ctx context.Context, method, path string, body, out any) error {
	op := lbaasOperation(method, path)
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("%s: encoding the request: %w", op, err)
		}
	}
	for attempt := 0; ; attempt++ {
		token, fresh, err := c.tokens.get(ctx)
		if err != nil {
			return err
		}
		status, header, answer, err := c.send(ctx, method, path, token, payload)
		if err != nil {
			e := classify(op, err, c.now())
			if e.Kind == KindTransient && ctx.Err() != nil {
				return ctx.Err()
			}
			return e
		}
		if status == http.StatusUnauthorized && !fresh && attempt == 0 {
			c.tokens.forget(token)
			continue
		}
		if status >= 300 {
			return redactError(classifyStatus(op, status, errorMessages(answer), header, c.now(), nil), token, c.tokens.apiKey)
		}
		if out == nil || len(bytes.TrimSpace(answer)) == 0 {
			return nil
		}
		if err := json.Unmarshal(answer, out); err != nil {
			return &Error{Kind: KindTransient, Operation: op, StatusCode: status,
				Messages: []string{"the answer is not the JSON expected: " + err.Error()}, err: err}
		}
		return nil
	}
}

func (c *lbaasClient) send(ctx context.Context, method, path, token string, payload []byte) (int, http.Header, []byte, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	limit := int64(maxErrorBody)
	if resp.StatusCode < 300 {
		limit = 32 << 20
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, resp.Header, answer, nil
}

// errorMessages reads the API's error texts: {"errors":[...]}, {"error":"..."} or
// {"message":"..."}. Anything else (an HTML page from a proxy) gives none, and the status text
// stands in.
func errorMessages(answer []byte) []string {
	var e struct {
		Errors  []string `json:"errors"`
		Error   string   `json:"error"`
		Message string   `json:"message"`
	}
	if json.Unmarshal(answer, &e) != nil {
		return nil
	}
	out := e.Errors
	for _, m := range []string{e.Error, e.Message} {
		if m != "" {
			out = append(out, m)
		}
	}
	return out
}

// lbaasOperation names a request for errors and metrics, e.g. "LBaaS GET /v1/loadbalancers/{id}".
func lbaasOperation(method, path string) string { return operation(method, "/"+path) }

// tokenSource exchanges the Metal API key for LBaaS bearer tokens and keeps one until shortly
// before it expires, so that a reconcile costs no exchange (the previous provider exchanged the
// key before every call).
type tokenSource struct {
	exchangeURL string
	apiKey      string
	userAgent   string
	http        *http.Client
	now         func() time.Time

	mu       sync.Mutex
	token    string
	renewAt  time.Time
	acquired int // exchanges done, for tests
}

// tokenRenewMargin is how long before its expiry a token is replaced: long enough that a
// request sent with it does not arrive after it ended.
const tokenRenewMargin = time.Minute

// get returns a valid token and whether it was just exchanged. Concurrent callers wait for one
// exchange rather than each doing their own.
func (t *tokenSource) get(ctx context.Context) (string, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.renewAt) {
		return t.token, false, nil
	}
	token, lifetime, err := t.exchange(ctx)
	if err != nil {
		return "", false, err
	}
	t.token, t.acquired = token, t.acquired+1
	t.renewAt = t.now().Add(lifetime - min(tokenRenewMargin, lifetime/10))
	return token, true, nil
}

// forget drops a token LBaaS refused, unless another caller replaced it already.
func (t *tokenSource) forget(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == token {
		t.token = ""
	}
}

const exchangeOperation = "POST /api-keys/exchange"

func (t *tokenSource) exchange(ctx context.Context) (string, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.exchangeURL, nil)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", exchangeOperation, err)
	}
	req.Header.Set("Authorization", "Bearer "+t.apiKey)
	req.Header.Set("Accept", "application/json")
	if t.userAgent != "" {
		req.Header.Set("User-Agent", t.userAgent)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return "", 0, &Error{Kind: KindTransient, Operation: exchangeOperation, Messages: []string{err.Error()}, err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return "", 0, &Error{Kind: KindTransient, Operation: exchangeOperation, Messages: []string{err.Error()}, err: err}
	}
	if resp.StatusCode >= 300 {
		return "", 0, classifyStatus(exchangeOperation, resp.StatusCode, errorMessages(answer), resp.Header, t.now(), nil)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(answer, &tok); err != nil || tok.AccessToken == "" {
		msg := "the answer holds no access_token"
		if err != nil {
			msg = "the answer is not the JSON expected: " + err.Error()
		}
		return "", 0, &Error{Kind: KindTransient, Operation: exchangeOperation, StatusCode: resp.StatusCode, Messages: []string{msg},
			err: errors.New(msg)}
	}
	lifetime := time.Duration(tok.ExpiresIn) * time.Second
	if lifetime <= 0 {
		lifetime = 5 * time.Minute // no expiry given: renew soon rather than never
	}
	return tok.AccessToken, lifetime, nil
}

// normalizeBaseURL returns u with exactly one trailing slash, so that paths append to it.
func normalizeBaseURL(u, def string) string {
	if u == "" {
		u = def
	}
	return strings.TrimRight(u, "/") + "/"
}
