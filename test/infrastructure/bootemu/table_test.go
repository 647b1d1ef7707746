package bootemu

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKubectlGetNodesGetsATable(t *testing.T) {
	list := corev1.NodeList{Items: []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "cp-0", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
			Status: corev1.NodeStatus{Conditions: nodeConditions(true), NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}, Status: corev1.NodeStatus{Conditions: nodeConditions(false)}},
	}}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "application/json" {
			t.Errorf("the inner handler was asked for %q", r.Header.Get("Accept"))
		}
		_ = json.NewEncoder(w).Encode(list)
	})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/nodes?limit=500", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	rec := httptest.NewRecorder()
	nodeTables(inner).ServeHTTP(rec, req)
	var table metav1.Table
	if err := json.Unmarshal(rec.Body.Bytes(), &table); err != nil || table.Kind != "Table" || len(table.Rows) != 2 {
		t.Fatalf("answer %s (%v), want a Table of two rows", rec.Body.String(), err)
	}
	if c := table.Rows[0].Cells; c[1] != "Ready" || c[2] != "control-plane" || c[4] != "v1.36.3" {
		t.Errorf("row 0 = %v, want Ready, control-plane, v1.36.3", c)
	}
	if c := table.Rows[1].Cells; c[1] != "NotReady" || c[2] != "<none>" {
		t.Errorf("row 1 = %v, want NotReady, <none>", c)
	}

	plain := httptest.NewRequest(http.MethodGet, "/api/v1/nodes", nil)
	plain.Header.Set("Accept", "application/json")
	rec = httptest.NewRecorder()
	nodeTables(inner).ServeHTTP(rec, plain)
	var got corev1.NodeList
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Items) != 2 {
		t.Errorf("a plain list request was changed: %s", rec.Body.String())
	}
}
