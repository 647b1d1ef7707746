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
		if (r.Method == http.MethodPatch || r.Method == http.MethodPut) && isStatusSubresource(r.URL.Path) {
			whole := r.Clone(r.Context())
			whole.URL.Path = strings.TrimSuffix(r.URL.Path, "/status")
			whole.URL.RawPath = ""
			next.ServeHTTP(w, whole)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isStatusSubresource reports whether path names a status subresource, by its shape: an object
// named "status" (/api/v1/namespaces/ns/configmaps/status) is not one.
func isStatusSubresource(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if parts[len(parts)-1] != "status" {
		return false
	}
	// api/v1/<resource>/<name>/status (5 parts) or apis/<group>/<version>/<resource>/<name>/status
	// (6), with namespaces/<namespace> after the version for namespaced objects.
	want, version := 5, 1
	if parts[0] == "apis" {
		want, version = 6, 2
	} else if parts[0] != "api" {
		return false
	}
	if len(parts) > version+1 && parts[version+1] == "namespaces" {
		want += 2
	}
	return len(parts) == want
}
