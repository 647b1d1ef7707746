// Package tilt_test checks tilt-provider.json against what Cluster API's Tiltfile reads (a Docker
// daemon and kind are not available to run Tilt itself in CI).
package tilt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

type tiltProvider struct {
	Name   string `json:"name"`
	Config struct {
		Image               string   `json:"image"`
		LiveReloadDeps      []string `json:"live_reload_deps"`
		Label               string   `json:"label"`
		GoMain              string   `json:"go_main"`
		KustomizeFolder     string   `json:"kustomize_folder"`
		AdditionalResources []string `json:"additional_resources"`
	} `json:"config"`
}

func TestTiltProvider(t *testing.T) {
	root := helpers.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, "tilt-provider.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p tiltProvider
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("tilt-provider.json: %v", err)
	}
	if p.Name != "packet" || p.Config.Label == "" {
		t.Fatalf("name %q / label %q: want packet and a label", p.Name, p.Config.Label)
	}

	// The image Tilt builds must be the one config/default gives the manager container, or Tilt
	// would not swap in its build.
	var kustomization struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
		} `json:"images"`
	}
	k, err := os.ReadFile(filepath.Join(root, p.Config.KustomizeFolder, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(k, &kustomization); err != nil {
		t.Fatal(err)
	}
	if len(kustomization.Images) != 1 || kustomization.Images[0].NewName != p.Config.Image {
		t.Fatalf("config.image %q is not the manager image of %s: %+v", p.Config.Image, p.Config.KustomizeFolder, kustomization.Images)
	}

	for _, dep := range append(p.Config.LiveReloadDeps, p.Config.GoMain) {
		if _, err := os.Stat(filepath.Join(root, dep)); err != nil {
			t.Errorf("live_reload_deps/go_main entry %q: %v", dep, err)
		}
	}

	var simulator bool
	for _, res := range p.Config.AdditionalResources {
		data, err := os.ReadFile(filepath.Join(root, res))
		if err != nil {
			t.Fatalf("additional_resources entry %q: %v", res, err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", res, err)
			}
			if u.GetNamespace() != "cluster-api-provider-packet-system" {
				t.Errorf("%s %s is not in the provider's namespace", u.GetKind(), u.GetName())
			}
			if u.GetLabels()["cluster.x-k8s.io/provider"] != "infrastructure-packet" {
				t.Errorf("%s %s lacks the provider label", u.GetKind(), u.GetName())
			}
			if u.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				c := c.(map[string]any)
				image, _ := c["image"].(string)
				if image == p.Config.Image || len(image) > len(p.Config.Image) && image[:len(p.Config.Image)+1] == p.Config.Image+":" {
					t.Errorf("%s uses the manager image, which Tilt replaces with its build", u.GetName())
				}
				if c["name"] == "packetsim" {
					simulator = true
				}
			}
		}
	}
	if !simulator {
		t.Fatal("additional_resources do not start the Packet API simulator")
	}
}
