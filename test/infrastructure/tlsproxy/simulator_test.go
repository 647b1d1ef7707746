package tlsproxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// TestThroughTheSimulator runs the previous provider's three hosts against a real simulator:
// the Metal API with its token, the token exchange, and the load-balancer service with the
// exchanged token, proving the prefixes are the ones packetsim serves.
func TestThroughTheSimulator(t *testing.T) {
	sim, err := packetsim.New(packetsim.Options{NoSpecCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	c := client(t, startProxy(t, srv.URL))

	project := "https://api.equinix.com/metal/v1/projects/" + packetsim.DefaultProjectID
	req := newRequest(t, http.MethodGet, project, "")
	req.Header.Set("X-Auth-Token", "wrong-token")
	if code, _ := do(t, c, req); code != http.StatusUnauthorized {
		t.Errorf("GET project with a wrong token: got %d, want 401", code)
	}
	req = newRequest(t, http.MethodGet, project, "")
	req.Header.Set("X-Auth-Token", packetsim.DefaultToken)
	code, body := do(t, c, req)
	var got struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil || got.ID != packetsim.DefaultProjectID {
		t.Fatalf("GET project: got %d %s, want 200 with id %s", code, body, packetsim.DefaultProjectID)
	}

	req = newRequest(t, http.MethodPost, "https://iam.metalctrl.io/api-keys/exchange", "")
	req.Header.Set("Authorization", "Bearer "+packetsim.DefaultToken)
	code, body = do(t, c, req)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(body), &tok); code != http.StatusOK || err != nil || tok.AccessToken == "" {
		t.Fatalf("token exchange: got %d, want 200 with an access token", code)
	}

	req = newRequest(t, http.MethodGet, "https://lb.metalctrl.io/v1/projects/"+packetsim.DefaultProjectID+"/loadbalancers", "")
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	if code, body := do(t, c, req); code != http.StatusOK {
		t.Errorf("list load balancers: got %d %s, want 200", code, body)
	}
}
