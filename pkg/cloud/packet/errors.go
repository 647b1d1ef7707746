package packet

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/packethost/packngo"
)

// ErrorKind says what the caller should do about a failed Packet API call.
type ErrorKind string

const (
	// KindNotFound: the object does not exist (404).
	KindNotFound ErrorKind = "NotFound"
	// KindUnauthorized: the API key is missing, wrong or lacks access (401, 403).
	KindUnauthorized ErrorKind = "Unauthorized"
	// KindInvalid: Packet refused the request as it stands (422 and other 4xx). Retrying the same
	// request will not help; the API's messages say what to change.
	KindInvalid ErrorKind = "Invalid"
	// KindRateLimited: too many requests (429); retry after RetryAfter.
	KindRateLimited ErrorKind = "RateLimited"
	// KindCapacity: no server or hardware reservation is free right now; retry with backoff.
	KindCapacity ErrorKind = "Capacity"
	// KindQuota: the project is at a limit (devices, IP addresses); retry slowly, until someone
	// raises the limit or frees what counts against it.
	KindQuota ErrorKind = "Quota"
	// KindTransient: a server error, an HTML error page, a timeout or a cut-off response; retry
	// with backoff. The request may have been carried out.
	KindTransient ErrorKind = "Transient"
)

// Error is a classified Packet API error. Its message carries the API's own text.
type Error struct {
	Kind ErrorKind
	// Operation is the API call, e.g. "POST /projects/{id}/devices".
	Operation string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// Messages are the API's error texts.
	Messages []string
	// RetryAfter is how long to wait before calling again (rate limits).
	RetryAfter time.Duration
	err        error
}

func (e *Error) Error() string {
	msg := strings.Join(e.Messages, ", ")
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s: %s", e.Operation, msg)
	}
	return fmt.Sprintf("%s: %d %s", e.Operation, e.StatusCode, msg)
}

// maxMessageLen bounds the API text carried into conditions and events: an error page from a
// proxy in front of the API can be kilobytes of HTML.
const maxMessageLen = 512

// Message is the API's own text with the HTTP status, for conditions and events, e.g.
// "There aren't available servers in that metro (HTTP 503)". Packet's error texts name fields
// and resources, never the request's credentials or user-data, and neither does this.
func (e *Error) Message() string {
	msg := strings.Join(e.Messages, ", ")
	if len(msg) > maxMessageLen {
		msg = strings.ToValidUTF8(msg[:maxMessageLen], "") + "…"
	}
	if e.StatusCode == 0 {
		return msg
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.StatusCode)
}

func (e *Error) Unwrap() error { return e.err }

// KindOf returns the kind of a Packet API error, or "" for other errors.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return KindOf(err) == KindNotFound }

// IsAlreadyTaken reports Packet's 422 "... has already been taken": what was asked for exists
// already (an SSH key with that fingerprint, an address assignment).
func IsAlreadyTaken(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindInvalid && strings.Contains(e.Message(), "already been taken")
}

// IsAlreadyAssigned reports Packet's 422 for a VLAN the port carries already: an attachment
// whose answer was lost went through.
func IsAlreadyAssigned(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindInvalid && strings.Contains(e.Message(), "already assigned")
}

// IsForbidden reports whether Packet answered 403. For one device that is the device's own
// state (Packet answers it for some failed devices), not necessarily bad credentials.
func IsForbidden(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusForbidden
}

// Refused reports whether a failed create or reserve certainly created nothing: Packet refused
// it (invalid, over quota, no capacity, rate limited, bad credentials, not found). After any
// other error (a timeout, a 5xx, a cut-off answer) the object may exist anyway.
func Refused(err error) bool {
	switch KindOf(err) {
	case KindInvalid, KindQuota, KindNotFound, KindCapacity, KindRateLimited, KindUnauthorized:
		return true
	}
	return false
}

// RetryAfter returns how long a rate-limited caller should wait, 0 for other errors.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.Kind == KindRateLimited {
		return e.RetryAfter
	}
	return 0
}

// Texts Packet uses where the status alone does not tell the cause.
var capacityTexts = []string{
	"no available hardware reservations",
	"aren't available servers",
	// "Server is not provisionable": a reservation still wiped, or taken. Not the "Operating
	// system ... is not provisionable on plan ..." of a spec error.
	"server is not provisionable",
}

// quotaTexts mark a refusal for a project's limit, not for the request itself.
var quotaTexts = []string{"quota", "device limit", "limit reached", "reached its"}

// defaultRetryAfter is used when a 429 carries neither Retry-After nor X-RateLimit-Reset.
const defaultRetryAfter = 30 * time.Second

// classify turns whatever packngo returned into an *Error. The HTTP status decides the kind;
// message texts only separate capacity shortages from other 422/503 answers.
func classify(operation string, err error, now time.Time) *Error {
	if err == nil {
		return nil
	}
	var own *Error
	if errors.As(err, &own) { // the pipeline's: Packet's 429 pause still applies
		e := *own
		e.Operation = operation
		return &e
	}
	var apiErr *packngo.ErrorResponse
	if !errors.As(err, &apiErr) || apiErr.Response == nil {
		// No usable response: connection errors, timeouts, truncated or non-JSON bodies.
		return &Error{Kind: KindTransient, Operation: operation, Messages: []string{err.Error()}, err: err}
	}
	status := apiErr.Response.StatusCode
	messages := append([]string(nil), apiErr.Errors...)
	if apiErr.SingleError != "" {
		messages = append(messages, apiErr.SingleError)
	}
	return classifyStatus(operation, status, messages, apiErr.Response.Header, now, err)
}

// classifyStatus builds the *Error of an answer with this status and these API texts; the
// Metal API (through packngo) and the load-balancer API share it.
func classifyStatus(operation string, status int, messages []string, header http.Header, now time.Time, err error) *Error {
	if len(messages) == 0 {
		messages = []string{http.StatusText(status)}
	}
	e := &Error{Operation: operation, StatusCode: status, Messages: messages, err: err}
	switch {
	case status == http.StatusNotFound:
		e.Kind = KindNotFound
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindUnauthorized
	case status == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
		e.RetryAfter = retryAfter(header, now)
	case (status == http.StatusUnprocessableEntity || status == http.StatusServiceUnavailable) && mentions(messages, capacityTexts):
		e.Kind = KindCapacity
	case status == http.StatusUnprocessableEntity && mentions(messages, quotaTexts):
		e.Kind = KindQuota
	case status >= 500:
		e.Kind = KindTransient
	default:
		e.Kind = KindInvalid
	}
	return e
}

func mentions(messages, texts []string) bool {
	for _, m := range messages {
		lower := strings.ToLower(m)
		for _, t := range texts {
			if strings.Contains(lower, t) {
				return true
			}
		}
	}
	return false
}

// retryAfter reads the server's wait: Retry-After (seconds or an HTTP date), else
// X-RateLimit-Reset (Unix seconds), else a default.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After"); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second
		}
		if at, err := http.ParseTime(v); err == nil && at.After(now) {
			return at.Sub(now)
		}
	}
	if v := h.Get("X-RateLimit-Reset"); v != "" {
		if epoch, err := strconv.ParseInt(v, 10, 64); err == nil {
			if d := time.Unix(epoch, 0).Sub(now); d > 0 {
				return d
			}
		}
	}
	return defaultRetryAfter
}

// redactError takes the secrets out of the texts of e, which an answer may have echoed, and
// returns it as an error (nil when e is nil).
func redactError(e *Error, secrets ...string) error {
	if e == nil {
		return nil
	}
	for i, m := range e.Messages {
		e.Messages[i] = redact(m, secrets...)
	}
	return e
}
