package v1beta1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTagsIncludeNamespaceAndStayWithinTheLimit(t *testing.T) {
	if ClusterTag("a", "c1") == ClusterTag("b", "c1") {
		t.Fatal("same-named clusters in different namespaces must get different tags")
	}
	if got := ClusterTag("ns", "c1"); got != "capp:cluster:ns/c1" {
		t.Fatalf("ClusterTag = %q", got)
	}
	long := strings.Repeat("x", 253)
	a, b := ControlPlaneEndpointTag("ns", long), ControlPlaneEndpointTag("ns", long[:252]+"y")
	if len(a) > MaxTagLength || len(b) > MaxTagLength {
		t.Fatalf("tags longer than %d: %d, %d", MaxTagLength, len(a), len(b))
	}
	if a == b {
		t.Fatal("long names that differ only at the end must still give different tags")
	}
	if v, ok := TagValue(MachineUIDTag("u-1"), MachineUIDTagPrefix); !ok || v != "u-1" {
		t.Fatalf("TagValue = %q, %v", v, ok)
	}
	if _, ok := TagValue("other:u-1", MachineUIDTagPrefix); ok {
		t.Fatal("TagValue accepted a tag without the prefix")
	}
}

func TestMachineIdentityTagPrefersTheAnnotationOverTheUID(t *testing.T) {
	pm := &PacketMachine{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
	if got := MachineIdentityTag(pm); got != "capp:machine-uid:uid-1" {
		t.Fatalf("without the annotation: %q", got)
	}
	pm.Annotations = map[string]string{MachineIdentityAnnotation: "id-1"}
	if got := MachineIdentityTag(pm); got != "capp:machine:id-1" {
		t.Fatalf("with the annotation: %q", got)
	}
	if strings.HasPrefix(MachineUIDTag("x"), MachineTagPrefix) {
		t.Fatal("the two machine tag prefixes must not match each other's tags")
	}
}

func TestWithManagementClusterReplacesAnotherManagementClustersTag(t *testing.T) {
	before := []string{"team:db", ManagementClusterTag("source"), ClusterTag("ns", "c1")}
	got := WithManagementCluster(before, "target")
	want := []string{"team:db", ClusterTag("ns", "c1"), "capp:management-cluster:target"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("WithManagementCluster = %q, want %q", got, want)
	}
	if before[1] != ManagementClusterTag("source") {
		t.Fatal("WithManagementCluster modified its argument")
	}
	if got := WithManagementCluster(before, ""); len(got) != 2 || strings.Contains(strings.Join(got, ","), ManagementClusterTagPrefix) {
		t.Fatalf("without an identity the management-cluster tag must go: %q", got)
	}
}

func FuzzTags(f *testing.F) {
	f.Add("default", "my-cluster", "5a7c1f2e-0000-4000-8000-000000000001")
	f.Add("", "", "")
	f.Add(strings.Repeat("n", 63), strings.Repeat("c", 300), "uid")
	f.Fuzz(func(t *testing.T, namespace, name, uid string) {
		for _, tag := range []string{ClusterTag(namespace, name), ControlPlaneEndpointTag(namespace, name), MachineUIDTag(uid), MachineTag(uid), LegacyClusterTag(name)} {
			if len(tag) > MaxTagLength {
				t.Fatalf("tag longer than %d bytes: %d", MaxTagLength, len(tag))
			}
		}
		if v, ok := TagValue(MachineUIDTag(uid), MachineUIDTagPrefix); len(MachineUIDTagPrefix+uid) <= MaxTagLength && (!ok || v != uid) {
			t.Fatalf("MachineUIDTag(%q) does not parse back: %q", uid, v)
		}
	})
}
