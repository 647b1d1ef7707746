package sandbox_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

// The README's commands and the sandbox's clusterctl.yaml must name one Kubernetes version, or a
// user who follows the README on the sandbox gets a different cluster than the docs describe.
func TestReadmeAndSandboxNameTheSameKubernetesVersion(t *testing.T) {
	want := sandbox.Variables()["KUBERNETES_VERSION"]
	for _, doc := range []string{"README.md", "docs/clusterctl.md", "docs/spot-workers.md", "docs/networking.md"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		found := regexp.MustCompile(`--kubernetes-version (v[0-9.]+)`).FindAllStringSubmatch(string(data), -1)
		if len(found) == 0 {
			t.Fatalf("%s names no --kubernetes-version", doc)
		}
		for _, m := range found {
			if m[1] != want {
				t.Errorf("%s says --kubernetes-version %s, the sandbox's clusterctl.yaml KUBERNETES_VERSION %s", doc, m[1], want)
			}
		}
	}
}
