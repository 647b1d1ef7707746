package webhooks

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

func packetMachineTemplate(mutate ...func(*infrav1.PacketMachineTemplateResource)) *infrav1.PacketMachineTemplate {
	t := &infrav1.PacketMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t1", Namespace: "ns"},
		Spec:       infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{Spec: machineSpec()}},
	}
	for _, m := range mutate {
		m(&t.Spec.Template)
	}
	return t
}

func TestPacketMachineTemplateValidateCreate(t *testing.T) {
	// Every machine rule applies to the template's spec, under spec.template.spec.
	for _, tt := range machineSpecCases {
		if tt.name == "providerID" || tt.name == "legacy providerID" {
			continue // a template never has a providerID, see below
		}
		t.Run(tt.name, func(t *testing.T) {
			tmpl := packetMachineTemplate(func(r *infrav1.PacketMachineTemplateResource) { tt.spec(&r.Spec) })
			warnings, err := (&PacketMachineTemplate{}).ValidateCreate(context.Background(), tmpl)
			w := tt.want
			if w.field != "" {
				w.field = "spec.template.spec." + w.field
			}
			checkErr(t, err, w)
			if tt.warning != "" && !hasWarning(warnings, tt.warning) {
				t.Fatalf("expected a warning containing %q, got %v", tt.warning, warnings)
			}
		})
	}
	for name, tt := range map[string]struct {
		mutate func(*infrav1.PacketMachineTemplateResource)
		want   want
	}{
		"providerID in a template": {
			mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.ProviderID = "equinixmetal://" + deviceUUID },
			want:   want{"spec.template.spec.providerID", "must be empty in a template"},
		},
		"metadata with labels and annotations": {
			mutate: func(r *infrav1.PacketMachineTemplateResource) {
				r.ObjectMeta.Labels = map[string]string{"example.com/role": "worker"}
				r.ObjectMeta.Annotations = map[string]string{"example.com/note": "anything goes here"}
			},
		},
		"a device identity in the template's metadata": {
			mutate: func(r *infrav1.PacketMachineTemplateResource) {
				r.ObjectMeta.Annotations = map[string]string{infrav1.MachineIdentityAnnotation: "shared"}
			},
			want: want{"spec.template.metadata.annotations[" + infrav1.MachineIdentityAnnotation + "]", "every machine cloned from the template would share it"},
		},
		"metadata with a bad label value": {
			mutate: func(r *infrav1.PacketMachineTemplateResource) {
				r.ObjectMeta.Labels = map[string]string{"role": "not valid!"}
			},
			want: want{"spec.template.metadata.labels", "a valid label must be"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (&PacketMachineTemplate{}).ValidateCreate(context.Background(), packetMachineTemplate(tt.mutate))
			checkErr(t, err, tt.want)
		})
	}
}

func TestPacketMachineTemplateDefault(t *testing.T) {
	tmpl := packetMachineTemplate(func(r *infrav1.PacketMachineTemplateResource) { r.Spec.BillingCycle = "" })
	if err := (&PacketMachineTemplate{}).Default(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Spec.Template.Spec.BillingCycle; got != "hourly" {
		t.Fatalf("billingCycle = %q, want hourly", got)
	}
}

func TestPacketMachineTemplateValidateUpdate(t *testing.T) {
	const immutable = "PacketMachineTemplate spec.template.spec is immutable: create a new PacketMachineTemplate"
	tests := []struct {
		name        string
		mutate      func(*infrav1.PacketMachineTemplateResource)
		dryRun      bool
		annotations map[string]string
		want        want
	}{
		{name: "no change", mutate: func(*infrav1.PacketMachineTemplateResource) {}},
		{name: "metadata may change", mutate: func(r *infrav1.PacketMachineTemplateResource) {
			r.ObjectMeta.Labels = map[string]string{"team": "a"}
		}},
		{name: "billingCycle default is no change", mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.BillingCycle = "" }},
		{name: "machineType", mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.MachineType = "m3.large.x86" },
			want: want{"spec.template.spec.machineType", immutable}},
		{name: "tags are immutable in a template too", mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.Tags = []string{"x"} },
			want: want{"spec.template.spec.tags", immutable}},
		{name: "metro is immutable in a template", mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.Metro = "sv" },
			want: want{"spec.template.spec.metro", immutable}},
		{name: "plain dry run", dryRun: true, mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.OS = "flatcar_stable" },
			want: want{"spec.template.spec.os", immutable}},
		{name: "topology annotation without dry run", annotations: topologyDryRunAnnotations,
			mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.OS = "flatcar_stable" },
			want:   want{"spec.template.spec.os", immutable}},
		{name: "topology dry run may change the spec", dryRun: true, annotations: topologyDryRunAnnotations,
			mutate: func(r *infrav1.PacketMachineTemplateResource) {
				r.Spec.OS, r.Spec.Tags = "flatcar_stable", []string{"x"}
			}},
		{name: "topology dry run still validates", dryRun: true, annotations: topologyDryRunAnnotations,
			mutate: func(r *infrav1.PacketMachineTemplateResource) { r.Spec.BillingCycle = "weekly" },
			want:   want{"spec.template.spec.billingCycle", "supported values"}},
		{name: "bad metadata on update", mutate: func(r *infrav1.PacketMachineTemplateResource) {
			r.ObjectMeta.Annotations = map[string]string{"bad key!": "v"}
		}, want: want{"spec.template.metadata.annotations", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldT, newT := packetMachineTemplate(), packetMachineTemplate(tt.mutate)
			newT.Annotations = tt.annotations
			_, err := (&PacketMachineTemplate{}).ValidateUpdate(requestCtx(tt.dryRun), oldT, newT)
			checkErr(t, err, tt.want)
		})
	}
}

func TestValidateDeleteAlwaysAllowed(t *testing.T) {
	ctx := context.Background()
	if _, err := (&PacketMachine{}).ValidateDelete(ctx, packetMachine(func(s *infrav1.PacketMachineSpec) { s.OS = "" })); err != nil {
		t.Fatal(err)
	}
	if _, err := (&PacketMachineTemplate{}).ValidateDelete(ctx, packetMachineTemplate()); err != nil {
		t.Fatal(err)
	}
	if _, err := (&PacketClusterTemplate{}).ValidateDelete(ctx, packetClusterTemplate()); err != nil {
		t.Fatal(err)
	}
}
