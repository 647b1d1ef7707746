package clusterctl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

// Cluster API's topology controller (not running here) applies the ClusterClass's patches to its
// templates. This applies them the same way for a set of variable values - JSON patch "replace",
// which fails on a path that does not exist - and checks that the patched templates are what a
// cluster of the class gets, and that the kube-apiserver and the webhooks accept them.
var _ = Describe("ClusterClass packet", func() {
	It("has patches whose paths exist in its templates, and patched templates that are accepted", func() {
		data, err := os.ReadFile(filepath.Join(helpers.RepoRoot(), "templates", "clusterclass-packet.yaml"))
		Expect(err).NotTo(HaveOccurred())
		objs := decode(data)
		class := findKind(objs, "ClusterClass")
		variables := map[string]any{
			"projectID": project, "metro": "sv", "controlPlaneNodeType": "m3.large.x86",
			"workerNodeType": "c3.medium.x86", "nodeOS": "ubuntu_22_04", "sshKey": sshKey, "cpemVersion": "v3.9.0",
		}

		// Every variable the patches use is declared, and every declared one is used.
		declared := map[string]bool{}
		vars, _, _ := unstructured.NestedSlice(class.Object, "spec", "variables")
		for _, v := range vars {
			declared[v.(map[string]any)["name"].(string)] = true
		}
		Expect(declared).To(HaveLen(len(variables)))
		for name := range variables {
			Expect(declared).To(HaveKey(name))
		}

		// Which template each selector picks, by what the class references it as.
		refs := map[string]string{} // "controlPlane", "infrastructureCluster", "md:<class>" -> kind/name
		ref := func(path ...string) string {
			kind, _, _ := unstructured.NestedString(class.Object, append(path, "kind")...)
			name, _, _ := unstructured.NestedString(class.Object, append(path, "name")...)
			return kind + "/" + name
		}
		refs["infrastructureCluster"] = ref("spec", "infrastructure", "templateRef")
		refs["controlPlane"] = ref("spec", "controlPlane", "templateRef")
		refs["controlPlaneMachine"] = ref("spec", "controlPlane", "machineInfrastructure", "templateRef")
		mds, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
		for _, md := range mds {
			md := md.(map[string]any)
			u := &unstructured.Unstructured{Object: md}
			kind, _, _ := unstructured.NestedString(u.Object, "infrastructure", "templateRef", "kind")
			name, _, _ := unstructured.NestedString(u.Object, "infrastructure", "templateRef", "name")
			refs["md:"+md["class"].(string)] = kind + "/" + name
		}
		byRef := map[string]*unstructured.Unstructured{}
		for _, u := range objs {
			byRef[u.GetKind()+"/"+u.GetName()] = u
		}

		patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
		Expect(patches).NotTo(BeEmpty())
		for _, p := range patches {
			defs, _, _ := unstructured.NestedSlice(p.(map[string]any), "definitions")
			for _, d := range defs {
				def := d.(map[string]any)
				sel := &unstructured.Unstructured{Object: def["selector"].(map[string]any)}
				kind, _, _ := unstructured.NestedString(sel.Object, "kind")
				match, _, _ := unstructured.NestedMap(sel.Object, "matchResources")
				var targets []*unstructured.Unstructured
				for key, on := range match {
					switch key {
					case "infrastructureCluster":
						targets = append(targets, byRef[refs["infrastructureCluster"]])
					case "controlPlane":
						if on == true {
							for _, r := range []string{refs["controlPlane"], refs["controlPlaneMachine"]} {
								if strings.HasPrefix(r, kind+"/") {
									targets = append(targets, byRef[r])
								}
							}
						}
					case "machineDeploymentClass":
						names, _, _ := unstructured.NestedStringSlice(on.(map[string]any), "names")
						for _, n := range names {
							targets = append(targets, byRef[refs["md:"+n]])
						}
					}
				}
				Expect(targets).NotTo(BeEmpty(), "selector %v picks no template", sel.Object)
				jsonPatches, _, _ := unstructured.NestedSlice(def, "jsonPatches")
				for _, t := range targets {
					Expect(t).NotTo(BeNil())
					Expect(t.GetKind()).To(Equal(kind))
					for _, jp := range jsonPatches {
						Expect(applyReplace(t.Object, jp.(map[string]any), variables)).To(Succeed(), "%s %s", t.GetKind(), t.GetName())
					}
				}
			}
		}

		Expect(byRef[refs["infrastructureCluster"]].Object["spec"]).To(HaveKeyWithValue("template",
			HaveKeyWithValue("spec", And(HaveKeyWithValue("projectID", project), HaveKeyWithValue("metro", "sv")))))
		cpMachine, _, _ := unstructured.NestedMap(byRef[refs["controlPlaneMachine"]].Object, "spec", "template", "spec")
		Expect(cpMachine).To(And(HaveKeyWithValue("machineType", "m3.large.x86"), HaveKeyWithValue("os", "ubuntu_22_04"),
			HaveKeyWithValue("sshKeys", ConsistOf(sshKey))))
		worker, _, _ := unstructured.NestedMap(byRef[refs["md:default-worker"]].Object, "spec", "template", "spec")
		Expect(worker).To(HaveKeyWithValue("machineType", "c3.medium.x86"))
		post, _, _ := unstructured.NestedStringSlice(byRef[refs["controlPlane"]].Object, "spec", "template", "spec", "kubeadmConfigSpec", "postKubeadmCommands")
		Expect(post).To(ContainElement(ContainSubstring("/download/v3.9.0/deployment.yaml")))

		ensureNamespace("clusterclass")
		for _, u := range objs {
			u.SetNamespace("clusterclass")
		}
		Expect(dryRunApply(objs)).To(BeEmpty())
	})
})

// applyReplace applies one ClusterClass JSON patch with op "replace" (the only op the class
// uses): the path must exist, as in RFC 6902.
func applyReplace(obj map[string]any, patch map[string]any, variables map[string]any) error {
	if patch["op"] != "replace" {
		return fmt.Errorf("op %v: only replace is used by the class", patch["op"])
	}
	var value any
	switch from := patch["valueFrom"].(map[string]any); {
	case from["variable"] != nil:
		v, ok := variables[from["variable"].(string)]
		if !ok {
			return fmt.Errorf("undeclared variable %v", from["variable"])
		}
		value = v
	case from["template"] != nil:
		t, err := template.New("patch").Option("missingkey=error").Parse(from["template"].(string))
		if err != nil {
			return err
		}
		var out strings.Builder
		if err := t.Execute(&out, variables); err != nil {
			return err
		}
		// Cluster API reads a template's output as YAML, so it can produce lists and objects.
		if err := yaml.Unmarshal([]byte(out.String()), &value); err != nil {
			return fmt.Errorf("path %v: template output is not YAML: %w", patch["path"], err)
		}
	default:
		return fmt.Errorf("patch without a value: %v", patch)
	}
	parts := strings.Split(strings.TrimPrefix(patch["path"].(string), "/"), "/")
	var cur any = obj
	for i, part := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if _, ok := c[part]; !ok {
				return fmt.Errorf("path %v: %q does not exist", patch["path"], part)
			}
			if last {
				c[part] = value
				return nil
			}
			cur = c[part]
		case []any:
			// As in Cluster API's ClusterClass validation: patches replace whole lists only.
			return fmt.Errorf("path %v: %q indexes a list; Cluster API does not allow patching single list items", patch["path"], part)
		default:
			return fmt.Errorf("path %v: %q is not an object or list", patch["path"], part)
		}
	}
	return nil
}
