package webhooks

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
)

const validSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRY me@example.com"

func machineSpec(mutate ...func(*infrav1.PacketMachineSpec)) infrav1.PacketMachineSpec {
	s := infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", BillingCycle: "hourly"}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

func packetMachine(mutate ...func(*infrav1.PacketMachineSpec)) *infrav1.PacketMachine {
	return &infrav1.PacketMachine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "ns"}, Spec: machineSpec(mutate...)}
}

// machineSpecCases are the create-time rules, shared by the PacketMachine and (under
// spec.template.spec) the PacketMachineTemplate tests.
var machineSpecCases = []struct {
	name    string
	spec    func(*infrav1.PacketMachineSpec)
	want    want // field relative to the spec
	warning string
}{
	{name: "valid", spec: func(*infrav1.PacketMachineSpec) {}},
	{name: "no os", spec: func(s *infrav1.PacketMachineSpec) { s.OS = "" }, want: want{"os", "set the operating system slug"}},
	{name: "no machineType", spec: func(s *infrav1.PacketMachineSpec) { s.MachineType = "" }, want: want{"machineType", "set the Packet plan"}},
	{name: "metro override", spec: func(s *infrav1.PacketMachineSpec) { s.Metro = "sv" }},
	{name: "facility override warns", spec: func(s *infrav1.PacketMachineSpec) { s.Facility = "sv15" }, warning: "facility is deprecated"},
	{name: "metro and facility", spec: func(s *infrav1.PacketMachineSpec) { s.Metro, s.Facility = "sv", "sv15" },
		want: want{"facility", "metro and facility are mutually exclusive"}},
	{name: "custom_ipxe with ipxeURL", spec: func(s *infrav1.PacketMachineSpec) {
		s.OS, s.IPXEUrl = "custom_ipxe", "https://boot.example.com/talos.ipxe"
	}},
	{name: "ipxeURL without custom_ipxe", spec: func(s *infrav1.PacketMachineSpec) { s.IPXEUrl = "https://boot.example.com/x.ipxe" },
		want: want{"ipxeURL", `is only used with os "custom_ipxe" (os is "ubuntu_24_04")`}},
	{name: "custom_ipxe without ipxeURL", spec: func(s *infrav1.PacketMachineSpec) { s.OS = "custom_ipxe" },
		want: want{"ipxeURL", `os "custom_ipxe" boots the iPXE script at ipxeURL`}},
	{name: "ipxeURL not http", spec: func(s *infrav1.PacketMachineSpec) { s.OS, s.IPXEUrl = "custom_ipxe", "ftp://boot/x" },
		want: want{"ipxeURL", "must be an absolute http:// or https:// URL"}},
	{name: "ipxeURL relative", spec: func(s *infrav1.PacketMachineSpec) { s.OS, s.IPXEUrl = "custom_ipxe", "/x.ipxe" },
		want: want{"ipxeURL", "must be an absolute"}},
	{name: "alwaysPXE without custom_ipxe warns", spec: func(s *infrav1.PacketMachineSpec) { s.AlwaysPXE = true },
		warning: "alwaysPXE only has an effect"},
	{name: "billing cycles", spec: func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "yearly" }},
	{name: "no billing cycle", spec: func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "" }},
	{name: "unknown billing cycle", spec: func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "weekly" },
		want: want{"billingCycle", `supported values: "hourly", "daily", "monthly", "yearly"`}},
	{name: "one reservation", spec: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resA }},
	{name: "reservation list", spec: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resA + "," + resB }},
	{name: "next-available", spec: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = "next-available" }},
	{name: "malformed reservation", spec: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = "res-1" },
		want: want{"hardwareReservationID", `entry 1 ("res-1") is not a hardware reservation UUID`}},
	{name: "reservation list with an empty entry", spec: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resA + ",," + resB },
		want: want{"hardwareReservationID", "entry 2 of the list is empty"}},
	{name: "next-available in a list", spec: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resA + ",next-available" },
		want: want{"hardwareReservationID", `"next-available" cannot be combined`}},
	{name: "tags", spec: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"a", strings.Repeat("t", 255)} }},
	{name: "tag too long", spec: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"a", strings.Repeat("t", 256)} },
		want: want{"tags[1]", "may not be more than 255 bytes"}},
	{name: "empty tag", spec: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{" "} }, want: want{"tags[0]", "tags must not be empty"}},
	{name: "duplicate tag", spec: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"a", "a"} }, want: want{"tags[1]", "Duplicate value"}},
	{name: "tag with the provider's prefix", spec: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"ok", "capp:machine-uid:1234"} },
		want: want{"tags[1]", "the prefixes capp: and cluster-api-provider-packet: are the provider's own"}},
	{name: "tag with the previous provider's prefix", spec: func(s *infrav1.PacketMachineSpec) {
		s.Tags = []string{"cluster-api-provider-packet:cluster-id:other"}
	}, want: want{"tags[0]", "are the provider's own"}},
	{name: "tag with a comma", spec: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"team:a,b"} },
		want: want{"tags[0]", "must not contain a comma: Packet splits tag filters on commas"}},
	{name: "metro is not a code", spec: func(s *infrav1.PacketMachineSpec) { s.Metro = "silicon valley" },
		want: want{"metro", "must be a Packet metro code"}},
	{name: "facility is not a code", spec: func(s *infrav1.PacketMachineSpec) { s.Facility = "sv" },
		want: want{"facility", "must be a Packet facility code"}},
	{name: "empty ssh key", spec: func(s *infrav1.PacketMachineSpec) { s.SSHKeys = []string{validSSHKey, ""} },
		want: want{"sshKeys[1]", "not empty"}},
	{name: "providerID", spec: func(s *infrav1.PacketMachineSpec) { s.ProviderID = "equinixmetal://" + deviceUUID }},
	{name: "legacy providerID", spec: func(s *infrav1.PacketMachineSpec) { s.ProviderID = "packet://" + deviceUUID }},
	{name: "malformed providerID", spec: func(s *infrav1.PacketMachineSpec) { s.ProviderID = "aws:///i-123" },
		want: want{"providerID", "must be equinixmetal://<device UUID>"}},
	{name: "customData", spec: func(s *infrav1.PacketMachineSpec) { s.CustomData = &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)} }},
	{name: "spot with a bid", spec: func(s *infrav1.PacketMachineSpec) {
		s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("0.5"))
	}},
	{name: "spot without a bid", spec: func(s *infrav1.PacketMachineSpec) { s.SpotInstance = true },
		want: want{"spotPriceMax", "a spot device needs a bid"}},
	{name: "spot with a zero bid", spec: func(s *infrav1.PacketMachineSpec) {
		s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("0"))
	},
		want: want{"spotPriceMax", "must be more than 0"}},
	{name: "spot with a negative bid", spec: func(s *infrav1.PacketMachineSpec) {
		s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("-1"))
	},
		want: want{"spotPriceMax", "must be more than 0"}},
	{name: "a bid without spot", spec: func(s *infrav1.PacketMachineSpec) { s.SpotPriceMax = ptr.To(resource.MustParse("0.5")) },
		want: want{"spotPriceMax", "set spotInstance: true"}},
	{name: "spot on a hardware reservation", spec: func(s *infrav1.PacketMachineSpec) {
		s.SpotInstance, s.SpotPriceMax, s.HardwareReservationID = true, ptr.To(resource.MustParse("0.5")), "next-available"
	}, want: want{"spotInstance", "cannot be a spot device"}},
	{name: "hybrid-bonded on the cluster VLAN without public IPv4", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeHybridBonded,
		VLANs: []infrav1.MachineVLAN{{Cluster: true}}, PublicIPv4: ptr.To(false)})},
	{name: "layer2-individual on two ports", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeLayer2Individual,
		VLANs: []infrav1.MachineVLAN{{Cluster: true}, {VLANReference: infrav1.VLANReference{VXLAN: 1001}, Port: "eth1"}}})},
	{name: "VLANs on layer3 ports", spec: network(&infrav1.MachineNetwork{VLANs: []infrav1.MachineVLAN{{Cluster: true}}}),
		want: want{"network.vlans", "layer3 ports carry no VLANs"}},
	{name: "layer2-bonded without a VLAN", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeLayer2Bonded}),
		want: want{"network.vlans", "without a VLAN it would be unreachable"}},
	{name: "a VLAN entry naming none", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeHybrid, VLANs: []infrav1.MachineVLAN{{}}}),
		want: want{"network.vlans[0]", "name exactly one VLAN"}},
	{name: "a VLAN entry naming two", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeHybrid,
		VLANs: []infrav1.MachineVLAN{{Cluster: true, VLANReference: infrav1.VLANReference{VXLAN: 1001}}}}),
		want: want{"network.vlans[0]", "name exactly one VLAN"}},
	{name: "hybrid VLAN on bond0", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeHybrid,
		VLANs: []infrav1.MachineVLAN{{Cluster: true, Port: "bond0"}}}),
		want: want{"network.vlans[0].port", `supported values: "eth1"`}},
	{name: "hybrid-bonded VLAN on eth1", spec: network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeHybridBonded,
		VLANs: []infrav1.MachineVLAN{{Cluster: true, Port: "eth1"}}}),
		want: want{"network.vlans[0].port", `supported values: "bond0"`}},
	{name: "unknown port mode", spec: network(&infrav1.MachineNetwork{PortMode: "layer4"}),
		want: want{"network.portMode", `supported values: "layer3", "hybrid"`}},
}

func network(n *infrav1.MachineNetwork) func(*infrav1.PacketMachineSpec) {
	return func(s *infrav1.PacketMachineSpec) { s.Network = n }
}

func TestPacketMachineSSHKeysAreUUIDsOrPublicKeys(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
		want want
	}{
		{name: "a UUID and a public key", keys: []string{resA, validSSHKey}},
		{name: "neither", keys: []string{resA, "my laptop key"}, want: want{"spec.sshKeys[1]", "must be a project SSH key UUID or an OpenSSH public key"}},
		{name: "broken key data", keys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBx me"}, want: want{"spec.sshKeys[0]", "OpenSSH public key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&PacketMachine{}).ValidateCreate(context.Background(), packetMachine(func(s *infrav1.PacketMachineSpec) { s.SSHKeys = tt.keys }))
			checkErr(t, err, tt.want)
		})
	}
	// A ClusterClass's template holds a placeholder its patches replace: not checked there.
	tmpl := &infrav1.PacketMachineTemplate{Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{
		Spec: machineSpec(func(s *infrav1.PacketMachineSpec) { s.SSHKeys = []string{"set-by-the-sshKey-variable"} })}}}
	if _, err := (&PacketMachineTemplate{}).ValidateCreate(context.Background(), tmpl); err != nil {
		t.Fatalf("template with a placeholder key refused: %v", err)
	}
}

func TestPacketMachineSpotControlPlanesNeedConsent(t *testing.T) {
	spot := func(s *infrav1.PacketMachineSpec) {
		s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("0.5"))
	}
	worker := packetMachine(spot)
	if _, err := (&PacketMachine{}).ValidateCreate(context.Background(), worker); err != nil {
		t.Fatalf("spot worker refused: %v", err)
	}
	cp := packetMachine(spot)
	cp.Labels = map[string]string{"cluster.x-k8s.io/control-plane": ""}
	_, err := (&PacketMachine{}).ValidateCreate(context.Background(), cp)
	checkErr(t, err, want{"spec.spotInstance", "control planes are not spot devices by default"})

	cp.Annotations = map[string]string{infrav1.AllowSpotControlPlaneAnnotation: "true"}
	if _, err := (&PacketMachine{}).ValidateCreate(context.Background(), cp); err != nil {
		t.Fatalf("spot control plane with the annotation refused: %v", err)
	}
}

func TestPacketMachineControlPlanesKeepLayer3(t *testing.T) {
	cp := packetMachine(network(&infrav1.MachineNetwork{PortMode: infrav1.PortModeLayer2Bonded, VLANs: []infrav1.MachineVLAN{{Cluster: true}}}))
	cp.Labels = map[string]string{"cluster.x-k8s.io/control-plane": ""}
	_, err := (&PacketMachine{}).ValidateCreate(context.Background(), cp)
	checkErr(t, err, want{"spec.network.portMode", "a control plane needs layer 3"})

	cp.Spec.Network.PortMode = infrav1.PortModeHybridBonded
	if _, err := (&PacketMachine{}).ValidateCreate(context.Background(), cp); err != nil {
		t.Fatalf("hybrid-bonded control plane refused: %v", err)
	}
}

func TestPacketMachineValidateCreate(t *testing.T) {
	for _, tt := range machineSpecCases {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := (&PacketMachine{}).ValidateCreate(context.Background(), packetMachine(tt.spec))
			w := tt.want
			if w.field != "" {
				w.field = "spec." + w.field
			}
			checkErr(t, err, w)
			if tt.warning != "" && !hasWarning(warnings, tt.warning) {
				t.Fatalf("expected a warning containing %q, got %v", tt.warning, warnings)
			}
		})
	}
}

func TestPacketMachineDefault(t *testing.T) {
	m := packetMachine(func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "" })
	if err := (&PacketMachine{}).Default(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.BillingCycle != "hourly" {
		t.Fatalf("billingCycle = %q, want hourly", m.Spec.BillingCycle)
	}
	m.Spec.BillingCycle = "monthly"
	_ = (&PacketMachine{}).Default(context.Background(), m)
	if m.Spec.BillingCycle != "monthly" {
		t.Fatalf("billingCycle = %q, want monthly kept", m.Spec.BillingCycle)
	}
}

func TestPacketMachineValidateUpdate(t *testing.T) {
	immutable := "cannot change once the PacketMachine exists"
	tests := []struct {
		name string
		old  func(*infrav1.PacketMachineSpec)
		new  func(*infrav1.PacketMachineSpec)
		want want
	}{
		{name: "no change", old: func(*infrav1.PacketMachineSpec) {}, new: func(*infrav1.PacketMachineSpec) {}},
		{name: "controller sets providerID", old: func(*infrav1.PacketMachineSpec) {},
			new: func(s *infrav1.PacketMachineSpec) { s.ProviderID = "equinixmetal://" + deviceUUID }},
		{name: "malformed providerID", old: func(*infrav1.PacketMachineSpec) {},
			new:  func(s *infrav1.PacketMachineSpec) { s.ProviderID = "equinixmetal://" },
			want: want{"spec.providerID", "must be equinixmetal://<device UUID>"}},
		{name: "providerID changed once set", old: func(s *infrav1.PacketMachineSpec) { s.ProviderID = "equinixmetal://" + deviceUUID },
			new:  func(s *infrav1.PacketMachineSpec) { s.ProviderID = "equinixmetal://" + resA },
			want: want{"spec.providerID", "cannot change once set"}},
		{name: "providerID removed", old: func(s *infrav1.PacketMachineSpec) { s.ProviderID = "equinixmetal://" + deviceUUID },
			new:  func(s *infrav1.PacketMachineSpec) { s.ProviderID = "" },
			want: want{"spec.providerID", "cannot change once set"}},
		{name: "tags change (sent with the create, never updated on the device)", old: func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"a"} },
			new:  func(s *infrav1.PacketMachineSpec) { s.Tags = []string{"a", "b"} },
			want: want{"spec.tags", immutable}},
		{name: "tag too long on update", old: func(*infrav1.PacketMachineSpec) {},
			new:  func(s *infrav1.PacketMachineSpec) { s.Tags = []string{strings.Repeat("x", 300)} },
			want: want{"spec.tags[0]", "may not be more than 255 bytes"}},
		{name: "facility to metro migration", old: func(s *infrav1.PacketMachineSpec) { s.Facility = "sv15" },
			new: func(s *infrav1.PacketMachineSpec) { s.Metro = "sv" }},
		{name: "facility+metro to metro only", old: func(s *infrav1.PacketMachineSpec) { s.Facility, s.Metro = "sv15", "sv" },
			new: func(s *infrav1.PacketMachineSpec) { s.Metro = "sv" }},
		{name: "facility+metro to another metro", old: func(s *infrav1.PacketMachineSpec) { s.Facility, s.Metro = "sv15", "sv" },
			new:  func(s *infrav1.PacketMachineSpec) { s.Metro = "da" },
			want: want{"spec.metro", `a machine's location cannot change`}},
		{name: "metro change", old: func(s *infrav1.PacketMachineSpec) { s.Metro = "sv" },
			new:  func(s *infrav1.PacketMachineSpec) { s.Metro = "da" },
			want: want{"spec.metro", `set metro to the facility's metro (was "sv")`}},
		{name: "metro back to facility", old: func(s *infrav1.PacketMachineSpec) { s.Metro = "sv" },
			new:  func(s *infrav1.PacketMachineSpec) { s.Facility = "sv15" },
			want: want{"spec.facility", "a machine's location cannot change"}},
		{name: "facility to facility", old: func(s *infrav1.PacketMachineSpec) { s.Facility = "sv15" },
			new:  func(s *infrav1.PacketMachineSpec) { s.Facility = "sv16" },
			want: want{"spec.facility", "a machine's location cannot change"}},
		{name: "adding both metro and facility", old: func(s *infrav1.PacketMachineSpec) { s.Facility = "sv15" },
			new:  func(s *infrav1.PacketMachineSpec) { s.Facility, s.Metro = "sv15", "sv" },
			want: want{"spec.facility", "mutually exclusive"}},
		{name: "os", old: func(*infrav1.PacketMachineSpec) {}, new: func(s *infrav1.PacketMachineSpec) { s.OS = "ubuntu_22_04" },
			want: want{"spec.os", immutable + `, its device is created from it: change the machine template instead and let Cluster API roll out new machines (was "ubuntu_24_04")`}},
		{name: "machineType", old: func(*infrav1.PacketMachineSpec) {}, new: func(s *infrav1.PacketMachineSpec) { s.MachineType = "m3.large.x86" },
			want: want{"spec.machineType", immutable}},
		{name: "billingCycle", old: func(*infrav1.PacketMachineSpec) {}, new: func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "monthly" },
			want: want{"spec.billingCycle", immutable}},
		{name: "billingCycle empty to its default hourly is no change", old: func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "" },
			new: func(s *infrav1.PacketMachineSpec) { s.BillingCycle = "hourly" }},
		{name: "ipxeURL", old: func(s *infrav1.PacketMachineSpec) { s.OS, s.IPXEUrl = "custom_ipxe", "https://a/x" },
			new:  func(s *infrav1.PacketMachineSpec) { s.OS, s.IPXEUrl = "custom_ipxe", "https://b/x" },
			want: want{"spec.ipxeURL", immutable}},
		{name: "alwaysPXE", old: func(*infrav1.PacketMachineSpec) {}, new: func(s *infrav1.PacketMachineSpec) { s.AlwaysPXE = true },
			want: want{"spec.alwaysPXE", immutable}},
		{name: "hardwareReservationID", old: func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resA },
			new:  func(s *infrav1.PacketMachineSpec) { s.HardwareReservationID = resB },
			want: want{"spec.hardwareReservationID", immutable}},
		{name: "sshKeys", old: func(*infrav1.PacketMachineSpec) {}, new: func(s *infrav1.PacketMachineSpec) { s.SSHKeys = []string{"ssh-ed25519 AAAA"} },
			want: want{"spec.sshKeys", immutable}},
		{name: "customData", old: func(s *infrav1.PacketMachineSpec) { s.CustomData = &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)} },
			new:  func(s *infrav1.PacketMachineSpec) { s.CustomData = &apiextensionsv1.JSON{Raw: []byte(`{"a":2}`)} },
			want: want{"spec.customData", immutable}},
		{name: "customData reformatted is no change", old: func(s *infrav1.PacketMachineSpec) {
			s.CustomData = &apiextensionsv1.JSON{Raw: []byte(`{"a":1,"b":[1]}`)}
		},
			new: func(s *infrav1.PacketMachineSpec) {
				s.CustomData = &apiextensionsv1.JSON{Raw: []byte(`{ "b": [1], "a": 1 }`)}
			}},
		{name: "spotInstance", old: func(*infrav1.PacketMachineSpec) {},
			new: func(s *infrav1.PacketMachineSpec) {
				s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("1"))
			},
			want: want{"spec.spotInstance", immutable}},
		{name: "spotPriceMax", old: func(s *infrav1.PacketMachineSpec) {
			s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("1"))
		},
			new: func(s *infrav1.PacketMachineSpec) {
				s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("2"))
			},
			want: want{"spec.spotPriceMax", immutable}},
		{name: "spotPriceMax written differently is no change",
			old: func(s *infrav1.PacketMachineSpec) {
				s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("0.5"))
			},
			new: func(s *infrav1.PacketMachineSpec) {
				s.SpotInstance, s.SpotPriceMax = true, ptr.To(resource.MustParse("500m"))
			}},
		{name: "old object already invalid: finalizer-only update passes (ratchet)",
			old: func(s *infrav1.PacketMachineSpec) { s.Facility, s.Metro, s.BillingCycle = "sv15", "sv", "weekly" },
			new: func(s *infrav1.PacketMachineSpec) { s.Facility, s.Metro, s.BillingCycle = "sv15", "sv", "weekly" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&PacketMachine{}).ValidateUpdate(context.Background(), packetMachine(tt.old), packetMachine(tt.new))
			checkErr(t, err, tt.want)
		})
	}
}

func TestPacketMachineDeviceIdentityIsSetOnce(t *testing.T) {
	withIdentity := func(id string) *infrav1.PacketMachine {
		m := packetMachine()
		if id != "" {
			m.Annotations = map[string]string{infrav1.MachineIdentityAnnotation: id}
		}
		return m
	}
	key := "metadata.annotations[" + infrav1.MachineIdentityAnnotation + "]"
	for _, tt := range []struct {
		name     string
		old, new string
		want     want
	}{
		{name: "the controller sets it", old: "", new: "id-1"},
		{name: "unchanged", old: "id-1", new: "id-1"},
		{name: "changed", old: "id-1", new: "id-2", want: want{key, `is immutable once set ("id-1")`}},
		{name: "removed", old: "id-1", new: "", want: want{key, "is immutable once set"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&PacketMachine{}).ValidateUpdate(context.Background(), withIdentity(tt.old), withIdentity(tt.new))
			checkErr(t, err, tt.want)
		})
	}
	// clusterctl move: a JSON patch sets the source copy's annotations to delete-for-move alone.
	movedAway := packetMachine()
	movedAway.Annotations = map[string]string{clusterctlv1.DeleteForMoveAnnotation: ""}
	if _, err := (&PacketMachine{}).ValidateUpdate(context.Background(), withIdentity("id-1"), movedAway); err != nil {
		t.Fatalf("clusterctl move must be able to mark the source copy for deletion: %v", err)
	}
	if _, err := (&PacketMachine{}).ValidateCreate(context.Background(), withIdentity("id-1")); err != nil {
		t.Fatalf("clusterctl move creates PacketMachines with their identity: %v", err)
	}
}

// FuzzValidatePacketMachineSpec feeds arbitrary specs (and updates between two of them) through
// the defaulting and validation code: nothing may panic, every rejection must be an Invalid error
// whose causes name a field under spec, and a spec is never rejected for changing into itself.
func FuzzValidatePacketMachineSpec(f *testing.F) {
	f.Add("ubuntu_24_04", "c3.small.x86", "hourly", "da", "", "", resA+","+resB, "tag", "{}", "ubuntu_24_04", "sv15", "", false)
	f.Add("custom_ipxe", "m3.large.x86", "weekly", "", "da11", "https://boot/x", "next-available", "", "", "custom_ipxe", "", "da", true)
	f.Add("", "", "", "sv", "sv15", "ftp://x", ",,", strings.Repeat("t", 300), "{", "x", "sv", "", false)
	f.Fuzz(func(t *testing.T, os, plan, billing, metro, facility, ipxe, hwres, tag, customData, os2, metro2, facility2 string, alwaysPXE bool) {
		spec := infrav1.PacketMachineSpec{
			OS: os, MachineType: plan, BillingCycle: billing, Metro: metro, Facility: facility,
			IPXEUrl: ipxe, HardwareReservationID: hwres, Tags: []string{tag}, SSHKeys: []string{tag},
			AlwaysPXE: alwaysPXE, ProviderID: tag,
		}
		if customData != "" {
			spec.CustomData = &apiextensionsv1.JSON{Raw: []byte(customData)}
		}
		updated := *spec.DeepCopy()
		updated.OS, updated.Metro, updated.Facility = os2, metro2, facility2

		check := func(errs field.ErrorList) {
			t.Helper()
			if err := invalid("PacketMachine", "m", errs); err != nil && !apierrors.IsInvalid(err) {
				t.Fatalf("not an Invalid error: %v", err)
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Field, "spec") {
					t.Fatalf("cause without a spec field path: %v", e)
				}
			}
		}
		errs, _ := ValidatePacketMachineSpec(&spec, field.NewPath("spec"))
		check(errs)
		errs, _ = ValidatePacketMachineUpdate(&spec, &updated, field.NewPath("spec"))
		check(errs)
		if errs, _ := ValidatePacketMachineUpdate(&spec, &spec, field.NewPath("spec")); len(errs) != 0 {
			t.Fatalf("unchanged spec rejected on update: %v", errs)
		}
		defaulted := spec.DeepCopy()
		DefaultPacketMachineSpec(defaulted)
		if errs, _ := ValidatePacketMachineUpdate(&spec, defaulted, field.NewPath("spec")); len(errs) != 0 {
			t.Fatalf("defaulting alone rejected on update: %v", errs)
		}
		tmpl := &infrav1.PacketMachineTemplate{Spec: infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{Spec: spec}}}
		if _, err := (&PacketMachineTemplate{}).ValidateCreate(context.Background(), tmpl); err != nil && !apierrors.IsInvalid(err) {
			t.Fatalf("template: not an Invalid error: %v", err)
		}
	})
}
