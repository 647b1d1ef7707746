package packetsim

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Error texts the provider's controllers match on. Keep them exact; the
// reference (packet-api.md) marks which ones are observed from the real API.
const (
	msgInvalidToken        = "Invalid authentication token"
	msgNotFound            = "Not found"
	msgTooManyRequests     = "Too Many Requests"
	msgOhSnap              = "Oh snap, something went wrong! We've logged the error and will take a look - please reach out to us if you continue having trouble."
	msgFacilityBlank       = "Facility can't be blank"
	msgNoCapacity          = "There aren't available servers in that metro"
	msgNoHWReservations    = "There are no available hardware reservations for selected plan and "
	msgNotProvisionable    = "Server is not provisionable"
	msgUserdataFormat      = "Userdata unrecognized userdata format"
	msgUserdataTooLong     = "Userdata is too long"
	msgLockedDevice        = "Cannot delete a locked device"
	msgNotReserved         = "Address is not reserved for the project"
	msgAddressTaken        = "Address has already been taken"
	msgFacilityRequired    = "Facility is required"
	msgIPXEBoth            = "only ipxe_script_url or userdata may be used for custom ipxe."
	msgIPXENeither         = "ipxe_script_url or iPXE userdata is required for custom ipxe."
	msgBGPAlreadyHas       = "already has session"
	msgBGPNotEnabled       = "BGP is not enabled for this project"
	msgInsufficientIPSpace = "The specified project contains insufficient public IPv4 space to complete the request. Please e-mail support@equinixmetal.com."
	msgInvalidJSON         = "Invalid JSON in request body"
	msgLayer2              = "This device is not enabled for Layer 2. Please contact support for more details."
)

// apiError is a handler result that is not a success.
type apiError struct {
	status int
	msgs   []string
}

func (e *apiError) Error() string { return strconv.Itoa(e.status) + " " + strings.Join(e.msgs, ", ") }

func errorf(status int, msgs ...string) *apiError { return &apiError{status: status, msgs: msgs} }

func notFound() *apiError { return errorf(http.StatusNotFound, msgNotFound) }

// notAllowed refuses what a project API key may not do at all (create projects and
// organizations, delete organizations): a 401, the one refusal the spec gives those operations
// besides a bad body *(words unverified)*.
func notAllowed(kind string) *apiError {
	return errorf(http.StatusUnauthorized, "You are not authorized to manage this "+kind+" with a project API key")
}

func forbidden(kind string) *apiError {
	return errorf(http.StatusForbidden, "You are not authorized to view this "+kind)
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, errorf(http.StatusInternalServerError, msgOhSnap))
		return
	}
	s.writeBody(w, status, body)
}

func (s *Server) writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with the API's JSON error envelope.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = errorf(http.StatusInternalServerError, msgOhSnap)
	}
	var body []byte
	if s.opts.Knobs.SingleErrorField {
		body, _ = json.Marshal(map[string]string{"error": strings.Join(ae.msgs, ", ")})
	} else {
		body, _ = json.Marshal(map[string][]string{"errors": ae.msgs})
	}
	s.writeBody(w, ae.status, body)
}

// respond writes v (status) or err.
func (s *Server) respond(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		s.writeError(w, err)
		return
	}
	if status == http.StatusNoContent || status == http.StatusAccepted && v == nil {
		s.writeBody(w, status, nil)
		return
	}
	s.writeJSON(w, status, v)
}

// decodeBody reads a JSON request body into v. An empty body is fine (the
// API treats it as "no fields"); malformed JSON is a 422, the one refusal of a body the published
// spec gives its operations (none lists a 400).
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return errorf(http.StatusUnprocessableEntity, msgInvalidJSON)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return errorf(http.StatusUnprocessableEntity, typeErr.Field+" has an invalid type")
		}
		return errorf(http.StatusUnprocessableEntity, msgInvalidJSON)
	}
	return nil
}

// isUUID takes the canonical form only: uuid.Validate alone also takes the braced, urn: and
// undashed ones, which Packet answers with a 404 like any other non-UUID.
func isUUID(s string) bool { return len(s) == 36 && uuid.Validate(s) == nil }

// pathID returns the {name} path value, lower-cased. Non-UUIDs are answered
// with 404, as the API cannot find them.
func pathID(r *http.Request, name string) (string, error) {
	id := r.PathValue(name)
	if !isUUID(id) {
		return "", notFound()
	}
	return strings.ToLower(id), nil
}

// includes is the parsed include= list; only the first path segment of
// "a.b" counts for the simulator.
// includes are the nested objects a request asked for in full (include=) and, marked with a
// leading "!", those it asked to be collapsed to references (exclude=).
type includes map[string]bool

func (s *Server) parseIncludes(q url.Values) includes {
	inc := includes{}
	if s.opts.Knobs.ExpandAll {
		inc["*"] = true
	}
	for param, mark := range map[string]string{"include": "", "exclude": "!"} {
		for _, v := range q[param] {
			for _, part := range strings.Split(v, ",") {
				part = strings.TrimSpace(part)
				if i := strings.IndexByte(part, '.'); i >= 0 {
					part = part[:i]
				}
				if part != "" {
					inc[mark+part] = true
				}
			}
		}
	}
	return inc
}

// excludes reports whether the request asked for name as a reference only.
func (inc includes) excludes(name string) bool { return inc["!"+name] }

func (inc includes) has(name string) bool { return inc[name] || inc["*"] }

// page is a pagination window over a list of n items.
type page struct {
	number, perPage, total, last int
}

func (s *Server) parsePage(q url.Values, defaultPerPage int) page {
	p := page{number: 1, perPage: defaultPerPage}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n >= 1 {
		p.number = min(n, 100000)
	}
	if n, err := strconv.Atoi(q.Get("per_page")); err == nil && n >= 1 {
		p.perPage = min(n, 1000)
	}
	return p
}

// window sets the total and returns the [from, to) slice bounds of the page.
func (p *page) window(total int) (int, int) {
	p.total = total
	p.last = max(1, int(math.Ceil(float64(total)/float64(p.perPage))))
	from := min((p.number-1)*p.perPage, total)
	return from, min(from+p.perPage, total)
}

type href struct {
	Href string `json:"href"`
}

type meta struct {
	First       *href `json:"first"`
	Previous    *href `json:"previous,omitempty"`
	Self        *href `json:"self"`
	Next        *href `json:"next,omitempty"`
	Last        *href `json:"last"`
	Total       int   `json:"total"`
	CurrentPage int   `json:"current_page"`
	LastPage    int   `json:"last_page"`
}

// meta builds the pagination envelope. hrefs carry no /metal/v1 prefix by
// default, because packngo resolves them against its base URL (section 1.5).
func (s *Server) meta(r *http.Request, p page) meta {
	path := s.opts.Knobs.MetaHrefPrefix + strings.TrimPrefix(r.URL.Path, apiPrefix)
	link := func(n int) *href {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		return &href{Href: path + "?" + q.Encode()}
	}
	m := meta{First: link(1), Self: link(p.number), Last: link(p.last), Total: p.total, CurrentPage: p.number, LastPage: p.last}
	if p.number > 1 {
		m.Previous = link(p.number - 1)
	}
	if p.number < p.last {
		m.Next = link(p.number + 1)
	}
	return m
}
