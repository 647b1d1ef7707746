package bootemu

import (
	"net/http"
	"strings"
)

// statusSubresource serves writes to an object's status subresource (PUT or PATCH
// .../<resource>/<name>/status) as writes to the object. Cluster API's in-memory API server keeps
// objects whole and has no subresource routes, so it answers them 404; clients that set a Node's
// conditions (a MachineHealthCheck test, a node-problem-detector) write through /status.
func statusSubresource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.HasSuffix(r.URL.Path, "/status") {
			whole := r.Clone(r.Context())
			whole.URL.Path = strings.TrimSuffix(r.URL.Path, "/status")
			whole.URL.RawPath = ""
			next.ServeHTTP(w, whole)
			return
		}
		next.ServeHTTP(w, r)
	})
}
