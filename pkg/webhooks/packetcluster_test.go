package webhooks

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

func packetCluster(mutate ...func(*infrav1.PacketClusterSpec)) *infrav1.PacketCluster {
	c := &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"},
		Spec:       infrav1.PacketClusterSpec{ProjectID: projectUUID, Metro: "da"},
	}
	for _, m := range mutate {
		m(&c.Spec)
	}
	return c
}

func TestPacketClusterDefault(t *testing.T) {
	tests := []struct {
		name string
		in   infrav1.PacketClusterSpec
		want infrav1.PacketClusterSpec
	}{
		{
			name: "empty spec gets CPEM and Delete, no endpoint",
			in:   infrav1.PacketClusterSpec{},
			want: infrav1.PacketClusterSpec{VIPManager: "CPEM", ElasticIPReclaimPolicy: "Delete"},
		},
		{
			name: "host without port gets 6443",
			in:   infrav1.PacketClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "203.0.113.10"}},
			want: infrav1.PacketClusterSpec{VIPManager: "CPEM", ElasticIPReclaimPolicy: "Delete",
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 6443}},
		},
		{
			name: "explicit values are kept",
			in: infrav1.PacketClusterSpec{VIPManager: "KUBE_VIP", ElasticIPReclaimPolicy: "Retain",
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "api.example.com", Port: 443}},
			want: infrav1.PacketClusterSpec{VIPManager: "KUBE_VIP", ElasticIPReclaimPolicy: "Retain",
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "api.example.com", Port: 443}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &infrav1.PacketCluster{Spec: tt.in}
			if err := (&PacketCluster{}).Default(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if c.Spec != tt.want {
				t.Fatalf("defaulted spec = %+v, want %+v", c.Spec, tt.want)
			}
			tmpl := &infrav1.PacketClusterTemplate{Spec: infrav1.PacketClusterTemplateSpec{Template: infrav1.PacketClusterTemplateResource{Spec: tt.in}}}
			if err := (&PacketClusterTemplate{}).Default(context.Background(), tmpl); err != nil {
				t.Fatal(err)
			}
			if tmpl.Spec.Template.Spec != tt.want {
				t.Fatalf("defaulted template spec = %+v, want %+v", tmpl.Spec.Template.Spec, tt.want)
			}
		})
	}
}

func TestPacketClusterValidateCreate(t *testing.T) {
	tests := []struct {
		name    string
		spec    func(*infrav1.PacketClusterSpec)
		want    want
		warning string
	}{
		{name: "metro only", spec: func(*infrav1.PacketClusterSpec) {}},
		{name: "no location", spec: func(s *infrav1.PacketClusterSpec) { s.Metro = "" },
			want: want{"spec.metro", "set the Packet metro"}},
		{name: "facility only is accepted with a deprecation warning",
			spec: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da11" }, warning: "spec.facility is deprecated"},
		{name: "metro and facility", spec: func(s *infrav1.PacketClusterSpec) { s.Facility = "da11" },
			want: want{"spec.facility", "metro and facility are mutually exclusive"}},
		{name: "no projectID", spec: func(s *infrav1.PacketClusterSpec) { s.ProjectID = "" },
			want: want{"spec.projectID", "set the UUID of the Packet project"}},
		{name: "projectID is a name", spec: func(s *infrav1.PacketClusterSpec) { s.ProjectID = "my-project" },
			want: want{"spec.projectID", "must be the UUID of the Packet project"}},
		{name: "metro is a name", spec: func(s *infrav1.PacketClusterSpec) { s.Metro = "dallas" },
			want: want{"spec.metro", "must be a Packet metro code, two letters"}},
		{name: "metro in capitals", spec: func(s *infrav1.PacketClusterSpec) { s.Metro = "DA" }},
		{name: "facility is not a code", spec: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da-11" },
			want: want{"spec.facility", "must be a Packet facility code"}},
		{name: "legacy facility code", spec: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "ewr1" },
			warning: "spec.facility is deprecated"},
		{name: "CPEM", spec: func(s *infrav1.PacketClusterSpec) { s.VIPManager = "CPEM" }},
		{name: "KUBE_VIP", spec: func(s *infrav1.PacketClusterSpec) { s.VIPManager = "KUBE_VIP" }},
		{name: "EMLB in a metro with load balancers", spec: func(s *infrav1.PacketClusterSpec) { s.VIPManager, s.Metro = "EMLB", "SV" }},
		{name: "EMLB in a metro without", spec: func(s *infrav1.PacketClusterSpec) { s.VIPManager, s.Metro = "EMLB", "fr" },
			want: want{"spec.metro", `Unsupported value: "fr": supported values: "am", "da", "dc", "ny", "sg", "sv"`}},
		{name: "EMLB in a facility", spec: func(s *infrav1.PacketClusterSpec) { s.VIPManager, s.Metro, s.Facility = "EMLB", "", "sv15" },
			want: want{"spec.metro", "vipManager EMLB needs a metro (load balancers live in metros, not facilities); metros with load balancers: am, da"}},
		{name: "unknown VIP manager", spec: func(s *infrav1.PacketClusterSpec) { s.VIPManager = "METALLB" },
			want: want{"spec.vipManager", `supported values: "CPEM", "KUBE_VIP", "EMLB"`}},
		{name: "endpoint IPv4", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 6443}
		}},
		{name: "endpoint IPv6", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "2001:db8::1", Port: 6443}
		}},
		{name: "endpoint DNS name", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "api.example.com", Port: 443}
		}},
		{name: "endpoint DNS name in upper case", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "API.Example.com", Port: 443}
		}},
		{name: "endpoint host with scheme", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "https://api.example.com", Port: 443}
		}, want: want{"spec.controlPlaneEndpoint.host", "must be an IP address or a DNS name"}},
		{name: "endpoint host with port", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10:6443", Port: 6443}
		}, want: want{"spec.controlPlaneEndpoint.host", "without scheme or port"}},
		{name: "endpoint port without host", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Port: 6443}
		}, want: want{"spec.controlPlaneEndpoint.host", "a port needs a host"}},
		{name: "endpoint port too large", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 70000}
		}, want: want{"spec.controlPlaneEndpoint.port", "between 1 and 65535"}},
		{name: "endpoint port negative", spec: func(s *infrav1.PacketClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: -1}
		}, want: want{"spec.controlPlaneEndpoint.port", "between 1 and 65535"}},
		{name: "reclaim Retain", spec: func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Retain" }},
		{name: "reclaim policy unknown", spec: func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Keep" },
			want: want{"spec.elasticIPReclaimPolicy", `supported values: "Delete", "Retain"`}},
		{name: "Retain with a user endpoint warns that nothing is reserved", spec: func(s *infrav1.PacketClusterSpec) {
			s.ElasticIPReclaimPolicy = "Retain"
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 6443}
		}, warning: "elasticIPReclaimPolicy has no effect"},
		{name: "credentialsRef bad name", spec: func(s *infrav1.PacketClusterSpec) {
			s.CredentialsRef = &infrav1.SecretReference{Name: "Not_A_Name"}
		}, want: want{"spec.credentialsRef.name", "must name a Secret"}},
		{name: "bgp without KUBE_VIP warns", spec: func(s *infrav1.PacketClusterSpec) {
			s.VIPManager, s.BGP = "CPEM", &infrav1.BGPSpec{LocalASN: 65000}
		}, warning: "spec.bgp is only used with vipManager KUBE_VIP"},
		{name: "exposeAPIKeyInUserData with the cluster's own key warns", spec: func(s *infrav1.PacketClusterSpec) {
			s.ExposeAPIKeyInUserData, s.CredentialsRef = true, &infrav1.SecretReference{Name: "creds"}
		}, warning: "puts the Packet API key in the devices' user-data"},
		{name: "exposeAPIKeyInUserData with the manager's key", spec: func(s *infrav1.PacketClusterSpec) { s.ExposeAPIKeyInUserData = true },
			want: want{"spec.exposeAPIKeyInUserData", "only the key of the cluster's own credentialsRef Secret can be put in user-data, never the manager's"}},
		{name: "a VLAN the provider creates", spec: func(s *infrav1.PacketClusterSpec) { s.Network = &infrav1.ClusterNetwork{} }},
		{name: "an existing VLAN by VXLAN", spec: func(s *infrav1.PacketClusterSpec) {
			s.Network = &infrav1.ClusterNetwork{VLAN: infrav1.VLANReference{VXLAN: 1001}}
		}},
		{name: "a VLAN by id and VXLAN", spec: func(s *infrav1.PacketClusterSpec) {
			s.Network = &infrav1.ClusterNetwork{VLAN: infrav1.VLANReference{ID: "b3b8c1d2-0000-4000-8000-000000000002", VXLAN: 1001}}
		}, want: want{"spec.network.vlan", "name the existing VLAN by id or by vxlan, not both"}},
		{name: "a VLAN without a metro", spec: func(s *infrav1.PacketClusterSpec) {
			s.Metro, s.Facility, s.Network = "", "da11", &infrav1.ClusterNetwork{}
		}, want: want{"spec.metro", "a VLAN belongs to a metro"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := packetCluster(tt.spec)
			warnings, err := (&PacketCluster{}).ValidateCreate(context.Background(), c)
			checkErr(t, err, tt.want)
			if tt.warning != "" && !hasWarning(warnings, tt.warning) {
				t.Fatalf("expected a warning containing %q, got %v", tt.warning, warnings)
			}
		})
	}
}

func TestPacketClusterValidateUpdate(t *testing.T) {
	withEndpoint := func(s *infrav1.PacketClusterSpec) {
		s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.10", Port: 6443}
	}
	tests := []struct {
		name     string
		old      func(*infrav1.PacketClusterSpec)
		new      func(*infrav1.PacketClusterSpec)
		deleting bool
		want     want
		warning  string
	}{
		{name: "no change", old: func(*infrav1.PacketClusterSpec) {}, new: func(*infrav1.PacketClusterSpec) {}},
		{name: "network added", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.Network = &infrav1.ClusterNetwork{} },
			want: want{"spec.network", "cannot change once the cluster exists: its machines' ports carry the VLAN"}},
		{name: "projectID change", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.ProjectID = "b3b8c1d2-0000-4000-8000-000000000002" },
			want: want{"spec.projectID", "cannot change: the cluster's devices and elastic IP live in project"}},
		{name: "credentialsRef set before the endpoint", old: func(*infrav1.PacketClusterSpec) {},
			new: func(s *infrav1.PacketClusterSpec) { s.CredentialsRef = &infrav1.SecretReference{Name: "creds"} }},
		{name: "credentialsRef removed once the endpoint exists", old: func(s *infrav1.PacketClusterSpec) {
			withEndpoint(s)
			s.CredentialsRef = &infrav1.SecretReference{Name: "creds"}
		}, new: withEndpoint, want: want{"spec.credentialsRef", "would silently move the cluster onto the manager's key"}},
		{name: "credentialsRef renamed once the endpoint exists", old: func(s *infrav1.PacketClusterSpec) {
			withEndpoint(s)
			s.CredentialsRef = &infrav1.SecretReference{Name: "creds"}
		}, new: func(s *infrav1.PacketClusterSpec) {
			withEndpoint(s)
			s.CredentialsRef = &infrav1.SecretReference{Name: "creds-2"}
		}, want: want{"spec.credentialsRef", `cannot change once the cluster has its endpoint (it is "creds"`}},
		{name: "metro change", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.Metro = "sv" },
			want: want{"spec.metro", `a cluster's location cannot change: its elastic IP and devices stay where they were created; the only allowed change is migrating from facility to metro: remove facility and set metro to the facility's metro (was "da")`}},
		{name: "facility change", old: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da11" },
			new:  func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da12" },
			want: want{"spec.facility", "a cluster's location cannot change"}},
		{name: "facility to metro migration", old: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da11" },
			new: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "da", "" }},
		{name: "metro back to a facility", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da11" },
			want: want{"spec.facility", "a cluster's location cannot change"}},
		{name: "vipManager change", old: func(s *infrav1.PacketClusterSpec) { s.VIPManager = "CPEM" },
			new:  func(s *infrav1.PacketClusterSpec) { s.VIPManager = "KUBE_VIP" },
			want: want{"spec.vipManager", "cannot change from CPEM"}},
		{name: "vipManager empty to its default CPEM is no change", old: func(*infrav1.PacketClusterSpec) {},
			new: func(s *infrav1.PacketClusterSpec) { s.VIPManager = "CPEM" }},
		{name: "vipManager changed to EMLB", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.VIPManager = "EMLB" },
			want: want{"spec.vipManager", "cannot change from CPEM"}},
		{name: "controller sets the endpoint", old: func(*infrav1.PacketClusterSpec) {}, new: withEndpoint},
		{name: "endpoint change once set", old: withEndpoint,
			new: func(s *infrav1.PacketClusterSpec) {
				s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "203.0.113.11", Port: 6443}
			},
			want: want{"spec.controlPlaneEndpoint", "cannot change once set (it is 203.0.113.10:6443)"}},
		{name: "endpoint removed once set", old: withEndpoint, new: func(*infrav1.PacketClusterSpec) {},
			want: want{"spec.controlPlaneEndpoint", "cannot change once set"}},
		{name: "malformed endpoint on update", old: func(*infrav1.PacketClusterSpec) {},
			new: func(s *infrav1.PacketClusterSpec) {
				s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "not a host", Port: 6443}
			},
			want: want{"spec.controlPlaneEndpoint.host", "must be an IP address or a DNS name"}},
		{name: "both metro and facility on update", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.Facility = "da11" },
			want: want{"spec.facility", "mutually exclusive"}},
		{name: "location removed on update", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.Metro = "" },
			want: want{"spec.metro", "set the Packet metro"}},
		{name: "facility to metro migration", old: func(s *infrav1.PacketClusterSpec) { s.Metro, s.Facility = "", "da11" },
			new: func(*infrav1.PacketClusterSpec) {}},
		{name: "old object already had both: unrelated update passes (ratchet)",
			old: func(s *infrav1.PacketClusterSpec) { s.Facility = "da11" },
			new: func(s *infrav1.PacketClusterSpec) { s.Facility = "da11" }},
		{name: "reclaim Retain to Delete", old: func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Retain" },
			new: func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Delete" }},
		{name: "reclaim Delete to Retain warns about the kept IP", old: func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Delete" },
			new: func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Retain" }, warning: "stays reserved (and billed)"},
		{name: "reclaim change while deleting", deleting: true,
			old:  func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Retain" },
			new:  func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Delete" },
			want: want{"spec.elasticIPReclaimPolicy", "cannot change while the PacketCluster is being deleted"}},
		{name: "other updates while deleting pass", deleting: true, old: withEndpoint, new: withEndpoint},
		{name: "reclaim invalid value", old: func(*infrav1.PacketClusterSpec) {},
			new:  func(s *infrav1.PacketClusterSpec) { s.ElasticIPReclaimPolicy = "Orphan" },
			want: want{"spec.elasticIPReclaimPolicy", "supported values"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldC, newC := packetCluster(tt.old), packetCluster(tt.new)
			if tt.deleting {
				now := metav1.Now()
				oldC.DeletionTimestamp, newC.DeletionTimestamp = &now, &now
			}
			warnings, err := (&PacketCluster{}).ValidateUpdate(context.Background(), oldC, newC)
			checkErr(t, err, tt.want)
			if tt.warning != "" && !hasWarning(warnings, tt.warning) {
				t.Fatalf("expected a warning containing %q, got %v", tt.warning, warnings)
			}
		})
	}
}

func TestPacketClusterValidateDelete(t *testing.T) {
	if _, err := (&PacketCluster{}).ValidateDelete(context.Background(), packetCluster(func(s *infrav1.PacketClusterSpec) { s.Metro = "" })); err != nil {
		t.Fatal(err)
	}
}
