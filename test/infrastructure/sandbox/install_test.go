package sandbox_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

func TestDecodeYAMLSkipsEmptyDocuments(t *testing.T) {
	objs, err := sandbox.DecodeYAML([]byte("---\n# a comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n{}\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	if strings.Join(names, ",") != "ConfigMap/a,Secret/b" {
		t.Fatalf("DecodeYAML = %v", names)
	}
	_, err = sandbox.DecodeYAML([]byte("apiVersion: v1\nkind: Secret\nstringData: {apiKey: s3cr3t}\nbad: [unclosed\n"))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("a document that does not parse is an error that does not quote it: %v", err)
	}
}
