package bootemu

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// nodeTables answers `kubectl get nodes` with the columns a real API server prints (NAME, STATUS,
// ROLES, AGE, VERSION). Cluster API's in-memory API server answers every list as a plain list,
// which kubectl can only print as names; nodes are what a person looks at first.
func nodeTables(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || strings.TrimSuffix(r.URL.Path, "/") != "/api/v1/nodes" ||
			!strings.Contains(r.Header.Get("Accept"), "as=Table") || r.URL.Query().Get("watch") == "true" {
			next.ServeHTTP(w, r)
			return
		}
		plain := r.Clone(r.Context())
		plain.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, plain)
		var nodes corev1.NodeList
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &nodes) != nil {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(nodeTable(nodes, time.Now()))
	})
}

func nodeTable(nodes corev1.NodeList, now time.Time) *metav1.Table {
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ListMeta: nodes.ListMeta,
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name"}, {Name: "Status", Type: "string"},
			{Name: "Roles", Type: "string"}, {Name: "Age", Type: "string"}, {Name: "Version", Type: "string"},
		},
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = map[corev1.ConditionStatus]string{corev1.ConditionTrue: "Ready"}[c.Status]
				if status == "" {
					status = "NotReady"
				}
			}
		}
		var roles []string
		for l := range n.Labels {
			if role, ok := strings.CutPrefix(l, "node-role.kubernetes.io/"); ok {
				roles = append(roles, role)
			}
		}
		if len(roles) == 0 {
			roles = []string{"<none>"}
		}
		meta, _ := json.Marshal(metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: n.ObjectMeta})
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{n.Name, status, strings.Join(roles, ","), duration.HumanDuration(now.Sub(n.CreationTimestamp.Time)), n.Status.NodeInfo.KubeletVersion},
			Object: runtime.RawExtension{Raw: meta},
		})
	}
	return t
}
