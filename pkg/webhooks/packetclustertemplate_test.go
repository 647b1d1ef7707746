package webhooks

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

func packetClusterTemplate(mutate ...func(*infrav1.PacketClusterTemplateResource)) *infrav1.PacketClusterTemplate {
	t := &infrav1.PacketClusterTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t1", Namespace: "ns"},
		Spec: infrav1.PacketClusterTemplateSpec{Template: infrav1.PacketClusterTemplateResource{
			Spec: infrav1.PacketClusterSpec{ProjectID: projectUUID, Metro: "da"},
		}},
	}
	for _, m := range mutate {
		m(&t.Spec.Template)
	}
	return t
}

func TestPacketClusterTemplateValidateCreate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*infrav1.PacketClusterTemplateResource)
		want    want
		warning string
	}{
		{name: "valid", mutate: func(*infrav1.PacketClusterTemplateResource) {}},
		{name: "no location is fine in a template (the ClusterClass patches it)",
			mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.Metro = "" }},
		{name: "placeholders a ClusterClass patch replaces are not checked for format", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.Spec.ProjectID, r.Spec.Metro = "set-by-the-projectID-variable", "set-by-the-metro-variable"
		}},
		{name: "metro and facility", mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.Facility = "da11" },
			want: want{"spec.template.spec.facility", "mutually exclusive"}},
		{name: "EMLB with its metro left to the ClusterClass", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.Spec.VIPManager, r.Spec.Metro = "EMLB", "set-by-the-metro-variable"
		}},
		{name: "an unknown VIP manager", mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.VIPManager = "METALLB" },
			want: want{"spec.template.spec.vipManager", `supported values: "CPEM", "KUBE_VIP", "EMLB"`}},
		{name: "malformed endpoint", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Port: 6443}
		}, want: want{"spec.template.spec.controlPlaneEndpoint.host", "a port needs a host"}},
		{name: "endpoint in a template warns", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 6443}
		}, warning: "every cluster created from this template gets the same endpoint"},
		{name: "metadata with a bad label", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.ObjectMeta.Labels = map[string]string{"bad key!": "v"}
		}, want: want{"spec.template.metadata.labels", "name part must consist of"}},
		{name: "metadata with a bad annotation", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.ObjectMeta.Annotations = map[string]string{"/x": "v"}
		}, want: want{"spec.template.metadata.annotations", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := (&PacketClusterTemplate{}).ValidateCreate(context.Background(), packetClusterTemplate(tt.mutate))
			checkErr(t, err, tt.want)
			if tt.warning != "" && !hasWarning(warnings, tt.warning) {
				t.Fatalf("expected a warning containing %q, got %v", tt.warning, warnings)
			}
		})
	}
}

func TestPacketClusterTemplateValidateUpdate(t *testing.T) {
	tests := []struct {
		name        string
		mutate      func(*infrav1.PacketClusterTemplateResource)
		dryRun      bool
		annotations map[string]string
		want        want
	}{
		{name: "no change", mutate: func(*infrav1.PacketClusterTemplateResource) {}},
		{name: "metadata may change", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.ObjectMeta.Labels = map[string]string{"team": "a"}
		}},
		{name: "defaults are no change", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.Spec.VIPManager, r.Spec.ElasticIPReclaimPolicy = "CPEM", "Delete"
		}},
		{name: "spec change", mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.Metro = "sv" },
			want: want{"spec.template.spec", "PacketClusterTemplate spec.template.spec is immutable"}},
		{name: "spec change in a plain dry run", dryRun: true, mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.Metro = "sv" },
			want: want{"spec.template.spec", "is immutable"}},
		{name: "annotation without dry run is not a topology dry run", annotations: topologyDryRunAnnotations,
			mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.Metro = "sv" },
			want:   want{"spec.template.spec", "is immutable"}},
		{name: "spec change in a topology dry run", dryRun: true, annotations: topologyDryRunAnnotations,
			mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.Metro = "sv" }},
		{name: "topology dry run still validates the spec", dryRun: true, annotations: topologyDryRunAnnotations,
			mutate: func(r *infrav1.PacketClusterTemplateResource) { r.Spec.VIPManager = "METALLB" },
			want:   want{"spec.template.spec.vipManager", "Unsupported value"}},
		{name: "bad metadata on update", mutate: func(r *infrav1.PacketClusterTemplateResource) {
			r.ObjectMeta.Labels = map[string]string{"x": "not a valid value!"}
		}, want: want{"spec.template.metadata.labels", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldT, newT := packetClusterTemplate(), packetClusterTemplate(tt.mutate)
			newT.Annotations = tt.annotations
			_, err := (&PacketClusterTemplate{}).ValidateUpdate(requestCtx(tt.dryRun), oldT, newT)
			checkErr(t, err, tt.want)
		})
	}
}

func TestPacketClusterTemplateNeedsARequest(t *testing.T) {
	if _, err := (&PacketClusterTemplate{}).ValidateUpdate(context.Background(), packetClusterTemplate(), packetClusterTemplate()); err == nil {
		t.Fatal("expected an error without an admission request in the context")
	}
}
