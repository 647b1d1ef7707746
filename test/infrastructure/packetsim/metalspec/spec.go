// Package metalspec checks Metal API exchanges against the OpenAPI 3 document Equinix published
// for it: the patched copy that github.com/equinix/equinix-sdk-go is generated from, read from that
// Go module (never copied into this repository). The simulator runs every request and answer it
// serves through Check, so an answer that a real client generated from the spec could not decode
// is caught by the suite that got it, named by operation, status and field.
package metalspec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Module is the Go module that ships the spec; its version is the one go.mod requires.
const Module = "github.com/equinix/equinix-sdk-go"

// specFile is the spec's root document inside Module; its components/ and paths/ sit beside it.
const specFile = "spec/services/metalv1/oas3.patched/openapi3.yaml"

// EnvSpecFile names a spec root document to use instead of the module's (for a machine without
// the go command, or to try another version of the spec).
const EnvSpecFile = "PACKETSIM_METAL_SPEC"

// apiPrefix is where the simulator serves the Metal API; the spec's paths start after it.
const apiPrefix = "/metal/v1"

// Spec is a loaded Metal API document with its router.
type Spec struct {
	doc    *openapi3.T
	router routers.Router
	errSch *openapi3.SchemaRef
}

// Locate finds the spec's root document: EnvSpecFile if set, else Module's copy in the module
// cache, downloaded at the version of the enclosing module's go.mod if it is not there yet.
func Locate() (string, error) {
	if f := os.Getenv(EnvSpecFile); f != "" {
		return f, nil
	}
	out, err := exec.Command("go", "mod", "download", "-json", Module).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("locating %s (set %s to its %s): %w", Module, EnvSpecFile, specFile, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("locating %s: %w", Module, err)
	}
	if mod.Dir == "" {
		return "", fmt.Errorf("locating %s: %s", Module, mod.Error)
	}
	return filepath.Join(mod.Dir, specFile), nil
}

var (
	defaultOnce sync.Once
	defaultSpec *Spec
	defaultErr  error
)

// Default is the located spec, loaded once per process.
func Default() (*Spec, error) {
	defaultOnce.Do(func() {
		var file string
		if file, defaultErr = Locate(); defaultErr == nil {
			defaultSpec, defaultErr = Load(file)
		}
	})
	return defaultSpec, defaultErr
}

// Load reads the spec rooted at file, with the files it refers to.
func Load(file string) (*Spec, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	doc, err := loader.LoadFromFile(file)
	if err != nil {
		return nil, fmt.Errorf("loading the Metal API spec %s: %w", file, err)
	}
	// Paths are matched after the simulator's prefix, whatever host the spec names.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing the Metal API spec %s: %w", file, err)
	}
	errSch := doc.Components.Schemas["Error"]
	if errSch == nil {
		return nil, fmt.Errorf("the Metal API spec %s has no Error schema", file)
	}
	return &Spec{doc: doc, router: router, errSch: errSch}, nil
}

// Exchange is one request and its answer, as the simulator saw them.
type Exchange struct {
	Request *http.Request // its Body is not read: the bytes are in RequestBody
	// RequestBody is what the client sent.
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Finding is one way an exchange differs from the spec.
type Finding struct {
	// Operation is the spec's route and operation ID, e.g. "GET /devices/{id} (findDeviceById)",
	// or the request's method and path when the spec has no such route.
	Operation string `json:"operation"`
	Status    int    `json:"status"`
	// Request is true for what the client sent, false for the simulator's answer.
	Request bool `json:"request,omitempty"`
	// Field is the JSON pointer of the offending value ("" for the whole body or the status).
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	side := "answer"
	if f.Request {
		side = "request"
	}
	field := f.Field
	if field == "" {
		field = "(body)"
	}
	return fmt.Sprintf("%s %d %s %s: %s", f.Operation, f.Status, side, field, f.Message)
}

// genericStatus is true for the answers any HTTP API may give to any operation, whether or not the
// spec lists them there: rate limiting and server trouble. Their body must still be an Error.
func genericStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// Check validates the exchange. operation is "" when the path is not under the Metal API; ok
// reports whether the spec has the route.
func (s *Spec) Check(ctx context.Context, ex Exchange) (operation string, findings []Finding) {
	req := ex.Request
	if !strings.HasPrefix(req.URL.Path, apiPrefix+"/") {
		return "", nil
	}
	routed := req.Clone(ctx)
	routed.URL = &url.URL{Path: strings.TrimPrefix(req.URL.Path, apiPrefix), RawQuery: req.URL.RawQuery}
	routed.Body = io.NopCloser(bytes.NewReader(ex.RequestBody))
	route, params, err := s.router.FindRoute(routed)
	if err != nil {
		op := req.Method + " " + strings.TrimPrefix(req.URL.Path, apiPrefix)
		return op, []Finding{{Operation: op, Status: ex.Status, Request: true, Message: "not in the spec: " + err.Error()}}
	}
	operation = route.Method + " " + route.Path
	if route.Operation != nil && route.Operation.OperationID != "" {
		operation += " (" + route.Operation.OperationID + ")"
	}
	reqIn := &openapi3filter.RequestValidationInput{Request: routed, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(ctx, reqIn); err != nil {
		findings = append(findings, findingsOf(operation, ex.Status, true, err)...)
	}
	sent := map[string]bool{}
	for _, f := range findings {
		sent[f.Field] = true
	}
	for _, f := range s.checkAnswer(ctx, operation, reqIn, ex) {
		if f.Field != "" && sent[f.Field] {
			// The answer echoes what the client sent off the spec (packngo's integer quantity of a
			// capacity check, say): the client's deviation, not the simulator's.
			f.Request, f.Message = true, "echoed as sent: "+f.Message
		}
		findings = append(findings, f)
	}
	return operation, findings
}

func (s *Spec) checkAnswer(ctx context.Context, operation string, reqIn *openapi3filter.RequestValidationInput, ex Exchange) []Finding {
	header := ex.Header.Clone()
	if header.Get("Content-Type") == "" && len(ex.Body) > 0 {
		header.Set("Content-Type", "application/json")
	}
	listed := reqIn.Route.Operation.Responses.Status(ex.Status) != nil || reqIn.Route.Operation.Responses.Default() != nil
	if !listed {
		if !genericStatus(ex.Status) {
			return []Finding{{Operation: operation, Status: ex.Status, Message: fmt.Sprintf("status %d is not an answer of this operation", ex.Status)}}
		}
		return s.checkErrorBody(operation, ex)
	}
	in := &openapi3filter.ResponseValidationInput{RequestValidationInput: reqIn, Status: ex.Status, Header: header,
		Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true}}
	in.SetBodyBytes(ex.Body)
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		return findingsOf(operation, ex.Status, false, err)
	}
	return nil
}

// checkErrorBody validates an answer the operation does not list (429, 5xx) as the spec's Error.
func (s *Spec) checkErrorBody(operation string, ex Exchange) []Finding {
	if len(bytes.TrimSpace(ex.Body)) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(ex.Body, &v); err != nil {
		return []Finding{{Operation: operation, Status: ex.Status, Message: "not JSON: " + err.Error()}}
	}
	if err := s.errSch.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return findingsOf(operation, ex.Status, false, err)
	}
	return nil
}

// findingsOf flattens kin-openapi's errors into findings, one per offending field.
func findingsOf(operation string, status int, request bool, err error) []Finding {
	var out []Finding
	var walk func(error)
	walk = func(err error) {
		var multi openapi3.MultiError
		if errors.As(err, &multi) {
			for _, e := range multi {
				walk(e)
			}
			return
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			field := ""
			if p := se.JSONPointer(); len(p) > 0 {
				field = "/" + strings.Join(anyIndex(p), "/")
			}
			out = append(out, Finding{Operation: operation, Status: status, Request: request, Field: field, Message: se.Reason})
			return
		}
		var re *openapi3filter.RequestError
		if errors.As(err, &re) && re.Err != nil {
			var inner openapi3.MultiError
			if errors.As(re.Err, &inner) || errors.As(re.Err, &se) {
				walk(re.Err)
				return
			}
			field := ""
			if re.Parameter != nil {
				field = re.Parameter.In + " " + re.Parameter.Name
			}
			out = append(out, Finding{Operation: operation, Status: status, Request: request, Field: field, Message: re.Error()})
			return
		}
		var rse *openapi3filter.ResponseError
		if errors.As(err, &rse) && rse.Err != nil {
			walk(rse.Err)
			return
		}
		out = append(out, Finding{Operation: operation, Status: status, Request: request, Message: err.Error()})
	}
	walk(err)
	return out
}

// anyIndex writes array indices as "*": a finding is about a field of every item, and one line
// for /devices/*/description reads better than one for each device of a page.
func anyIndex(pointer []string) []string {
	out := make([]string, len(pointer))
	for i, p := range pointer {
		if _, err := strconv.Atoi(p); err == nil {
			p = "*"
		}
		out[i] = p
	}
	return out
}
