package bootemu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/packethost/packngo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

const (
	testToken = "abcdef.0123456789abcdef"
	// boot is long enough for a device of the "fast" timing to be active.
	boot = 30 * time.Second
)

// bootControlPlane creates the first control plane, waits for it to be active and routes the
// elastic IP to it, as the provider does.
func bootControlPlane(t *testing.T, e *env, c *cluster, eip string) (string, client.Client) {
	t.Helper()
	id := e.createDevice(c.name+"-cp-0", c.init(t, "v1.36.3"))
	e.settle(boot)
	e.assign(id, eip)
	e.settle(time.Second)
	if !answers(c.endpoint) {
		t.Fatalf("the endpoint does not answer with the elastic IP on the control plane; console:\n%s", e.console(id))
	}
	return id, c.client(t)
}

// runningCluster boots a cluster's first control plane behind its elastic IP and gives it the
// bootstrap token testToken, so that workers can join.
func runningCluster(t *testing.T, name string) (*env, *cluster, client.Client) {
	t.Helper()
	e := newEnv(t)
	eip := e.reserveElasticIP()
	c := newCluster(t, name, eip)
	_, wc := bootControlPlane(t, e, c, eip)
	createToken(t, wc)
	return e, c, wc
}

// rebootAndWait reboots a device through the Packet API and lets the emulated reboot (5 s in
// these tests) run its course.
func (e *env) rebootAndWait(id string) {
	e.t.Helper()
	if _, err := e.metal.Devices.Reboot(id); err != nil {
		e.t.Fatal(err)
	}
	e.settle(time.Second)
	e.settle(10 * time.Second)
}

func nodes(t testing.TB, wc client.Client) map[string]corev1.Node {
	t.Helper()
	list := &corev1.NodeList{}
	if err := wc.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range list.Items {
		out[n.Name] = n
	}
	return out
}

func ready(n corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func createToken(t testing.TB, wc client.Client) {
	t.Helper()
	id, sec, _ := strings.Cut(testToken, ".")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-" + id},
		Type: "bootstrap.kubernetes.io/token",
		Data: map[string][]byte{"token-id": []byte(id), "token-secret": []byte(sec), "usage-bootstrap-authentication": []byte("true"),
			"expiration": []byte(time.Now().Add(time.Hour).Format(time.RFC3339))}}
	if err := wc.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func TestInitAnswersOnlyOnceTheElasticIPIsRouted(t *testing.T) {
	e := newEnv(t)
	eip := e.reserveElasticIP()
	c := newCluster(t, "alpha", eip)
	id := e.createDevice("alpha-cp-0", c.init(t, "v1.36.3"))

	e.settle(time.Second)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers before the device is active")
	}
	e.settle(boot)
	if answers(c.endpoint) {
		t.Fatal("the endpoint answers while the elastic IP is assigned to no device: Packet would not route it")
	}
	if !strings.Contains(e.console(id), "initialized successfully") {
		t.Fatalf("kubeadm init did not run on the active device; console:\n%s", e.console(id))
	}

	e.assign(id, eip)
	e.settle(time.Second)
	wc := c.client(t)
	ns := nodes(t, wc)
	n, ok := ns["alpha-cp-0"]
	if !ok || len(ns) != 1 {
		t.Fatalf("nodes = %v, want alpha-cp-0 alone", ns)
	}
	if n.Spec.ProviderID != "equinixmetal://"+id || ready(n) != corev1.ConditionTrue {
		t.Errorf("node providerID %q ready %q, want equinixmetal://%s and True", n.Spec.ProviderID, ready(n), id)
	}
	if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp || len(n.Spec.Taints) != 1 {
		t.Errorf("control-plane node lacks kubeadm's label or taint: %v %v", n.Labels, n.Spec.Taints)
	}
	if n.Status.NodeInfo.KubeletVersion != "v1.36.3" {
		t.Errorf("kubelet version %q, want the ClusterConfiguration's v1.36.3", n.Status.NodeInfo.KubeletVersion)
	}
	pods := &corev1.PodList{}
	if err := wc.List(context.Background(), pods, client.InNamespace("kube-system")); err != nil || len(pods.Items) != 4 {
		t.Fatalf("static pods = %d (%v), want etcd, kube-apiserver, kube-scheduler, kube-controller-manager", len(pods.Items), err)
	}
	if err := wc.Get(context.Background(), client.ObjectKey{Name: "kube-system"}, &corev1.Namespace{}); err != nil {
		t.Errorf("kube-system namespace: %v (Cluster API's drain looks it up)", err)
	}
	cm := &corev1.ConfigMap{}
	if err := wc.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "kubeadm-config"}, cm); err != nil ||
		!strings.Contains(cm.Data["ClusterConfiguration"], "controlPlaneEndpoint: "+c.endpoint) {
		t.Fatalf("kubeadm-config = %v, %v; want the bootstrap data's ClusterConfiguration", cm.Data, err)
	}
}

func TestWorkersJoinWithTheRightTokenAndCAHashOnly(t *testing.T) {
	e := newEnv(t)
	eip := e.reserveElasticIP()
	c := newCluster(t, "beta", eip)
	_, wc := bootControlPlane(t, e, c, eip)
	createToken(t, wc)

	good := e.createDevice("beta-worker-good", c.worker(t, testToken, c.caHash()))
	badHash := e.createDevice("beta-worker-badhash", c.worker(t, testToken, "sha256:"+strings.Repeat("0", 64)))
	badToken := e.createDevice("beta-worker-badtoken", c.worker(t, "zzzzzz.0123456789abcdef", c.caHash()))
	e.settle(boot)

	ns := nodes(t, wc)
	if n, ok := ns["beta-worker-good"]; !ok || n.Spec.ProviderID != "equinixmetal://"+good || ready(n) != corev1.ConditionTrue {
		t.Fatalf("the worker with a valid token is not a Ready node with its providerID: %v; console:\n%s", ns, e.console(good))
	}
	if _, cp := ns["beta-worker-good"].Labels["node-role.kubernetes.io/control-plane"]; cp {
		t.Error("a worker carries the control-plane label")
	}
	if _, ok := ns["beta-worker-badhash"]; ok {
		t.Error("a worker pinning another CA joined")
	}
	if !strings.Contains(e.console(badHash), "none of the public keys") || !strings.Contains(e.deviceEvents(badHash), "boot.failed") {
		t.Errorf("the CA mismatch is not on the console and in the events:\n%s\n%s", e.console(badHash), e.deviceEvents(badHash))
	}
	if _, ok := ns["beta-worker-badtoken"]; ok || !strings.Contains(e.console(badToken), "invalid for this cluster") {
		t.Errorf("an unknown token joined or is not reported; console:\n%s", e.console(badToken))
	}
	e.settle(2 * time.Minute) // past the join timeout
	if !strings.Contains(e.deviceEvents(badToken), "gave up after") {
		t.Errorf("kubeadm join with an unknown token did not give up; events:\n%s", e.deviceEvents(badToken))
	}
	if _, ok := nodes(t, wc)["beta-worker-badtoken"]; ok {
		t.Error("the worker with an unknown token became a node")
	}
}

func TestNodesFollowPowerAndDeletion(t *testing.T) {
	e, c, wc := runningCluster(t, "gamma")
	w := e.createDevice("gamma-worker", c.worker(t, testToken, c.caHash()))
	e.settle(boot)

	if _, err := e.metal.Devices.PowerOff(w); err != nil {
		t.Fatal(err)
	}
	e.settle(10 * time.Second)
	if got := ready(nodes(t, wc)["gamma-worker"]); got != corev1.ConditionUnknown {
		t.Fatalf("powered-off worker's node Ready = %q, want Unknown", got)
	}
	if _, err := e.metal.Devices.PowerOn(w); err != nil {
		t.Fatal(err)
	}
	e.settle(10 * time.Second)
	if got := ready(nodes(t, wc)["gamma-worker"]); got != corev1.ConditionTrue {
		t.Fatalf("powered-on worker's node Ready = %q, want True", got)
	}
	if _, err := e.metal.Devices.Reboot(w); err != nil {
		t.Fatal(err)
	}
	e.settle(time.Second)
	if got := ready(nodes(t, wc)["gamma-worker"]); got != corev1.ConditionUnknown {
		t.Fatalf("rebooting worker's node Ready = %q, want Unknown", got)
	}
	e.settle(10 * time.Second)
	if got := ready(nodes(t, wc)["gamma-worker"]); got != corev1.ConditionTrue {
		t.Fatalf("rebooted worker's node Ready = %q, want True again", got)
	}
	if _, err := e.metal.Devices.Delete(w, false); err != nil {
		t.Fatal(err)
	}
	e.settle(time.Minute)
	if _, ok := nodes(t, wc)["gamma-worker"]; ok {
		t.Fatal("the deleted worker's node is still there")
	}
}

// Without CPEM (the emlb flavour) only the kubelet's provider-id gives a Node its providerID.
func TestWithoutCPEMTheProviderIDIsTheKubelets(t *testing.T) {
	e := newEnv(t)
	eip := e.reserveElasticIP() // the emulation has no load balancer: route the endpoint by elastic IP
	c := newCluster(t, "eta", eip)
	cp := e.createDevice("eta-cp-0", c.initRunning(t, "v1.36.3", "/usr/local/bin/capp-control-plane-endpoint.sh after-kubeadm"))
	e.settle(boot)
	e.assign(cp, eip)
	e.settle(time.Second)
	if !answers(c.endpoint) {
		t.Fatalf("the endpoint does not answer; console:\n%s", e.console(cp))
	}
	wc := c.client(t)
	createToken(t, wc)
	join := strings.Replace(c.joinConfiguration(testToken, c.caHash(), false),
		"  kubeletExtraArgs:\n    provider-id: equinixmetal://{{ ds.meta_data.instance_id }}\n", "", 1)
	out, err := cloudinit.NewNode(&cloudinit.NodeInput{JoinConfiguration: join})
	if err != nil {
		t.Fatal(err)
	}
	e.createDevice("eta-worker", string(out))
	e.settle(boot)

	ns := nodes(t, wc)
	if got := ns["eta-cp-0"].Spec.ProviderID; got != "equinixmetal://"+cp {
		t.Errorf("control plane providerID %q, want the kubelet's equinixmetal://%s", got, cp)
	}
	if n, ok := ns["eta-worker"]; !ok || n.Spec.ProviderID != "" {
		t.Errorf("worker without provider-id: node %v with providerID %q, want a node without one (no CPEM sets it)", ok, n.Spec.ProviderID)
	}
}

func TestCPEMMovesTheElasticIPToALiveControlPlane(t *testing.T) {
	e := newEnv(t)
	eip := e.reserveElasticIP()
	c := newCluster(t, "delta", eip)
	first, wc := bootControlPlane(t, e, c, eip)
	createToken(t, wc)
	second := e.createDevice("delta-cp-1", c.controlPlaneJoin(t, testToken))
	e.settle(boot)
	if got := len(nodes(t, wc)); got != 2 {
		t.Fatalf("%d nodes after the control-plane join, want 2; console:\n%s", got, e.console(second))
	}
	etcd := &corev1.PodList{}
	if err := wc.List(context.Background(), etcd, client.MatchingLabels{"component": "etcd"}); err != nil || len(etcd.Items) != 2 {
		t.Fatalf("etcd members = %d, %v; want 2", len(etcd.Items), err)
	}

	if _, err := e.metal.Devices.Delete(first, false); err != nil {
		t.Fatal(err)
	}
	e.settle(time.Minute) // deprovisioned: the elastic IP is released with the device
	e.settle(time.Second) // CPEM assigns it to the live control plane
	e.settle(time.Second)
	assignments, _, err := e.metal.DeviceIPs.List(second, &packngo.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	for _, a := range assignments {
		moved = moved || a.Address == eip
	}
	if !moved || !answers(c.endpoint) {
		t.Fatalf("the elastic IP did not move to the live control plane (assigned %v, answers %v)", moved, answers(c.endpoint))
	}
	if _, ok := nodes(t, wc)["delta-cp-0"]; ok {
		t.Error("the deleted control plane's node is still there")
	}
}

func TestBrokenUserDataBootsNoNodeAndSaysWhy(t *testing.T) {
	e := newEnv(t)
	for name, tc := range map[string]struct{ userData, reason string }{
		"invalid YAML":       {"#cloud-config\nwrite_files: [\n", "invalid cloud-config"},
		"unrendered key":     {"#cloud-config\nruncmd:\n- kubeadm init --config {{ .missing }}\n", "unrendered template expression {{ .missing }}"},
		"not cloud-config":   {"#!/bin/bash\necho hi\n", "unhandled non-multipart user-data"},
		"no kubeadm":         {"#cloud-config\nruncmd: [echo hi]\n", "neither kubeadm init nor kubeadm join"},
		"unknown jinja key":  {"## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.nope }}\n", `"ds.meta_data.nope" is not in the instance data`},
		"init without certs": {"#cloud-config\nruncmd: [kubeadm init]\nwrite_files:\n- path: /run/kubeadm/kubeadm.yaml\n  content: |\n    kind: ClusterConfiguration\n    controlPlaneEndpoint: 127.70.9.9:6443\n", "CA key pairs"},
	} {
		t.Run(name, func(t *testing.T) {
			id := e.createDevice("broken", tc.userData)
			e.settle(boot)
			if !strings.Contains(e.console(id), tc.reason) || !strings.Contains(e.deviceEvents(id), tc.reason) {
				t.Fatalf("want %q on the console and among the events; console:\n%s\nevents:\n%s", tc.reason, e.console(id), e.deviceEvents(id))
			}
			if d, _ := e.sim.Device(id); d.State != "active" {
				t.Errorf("device is %s, want active (a boot failure is the OS's, not Packet's)", d.State)
			}
		})
	}
	if n := len(e.emu.clusters); n != 0 {
		t.Errorf("%d clusters came up from broken user-data", n)
	}
}

// A host_down fault hangs the operating system of an active device; each boot counts against it,
// and the host answers again at the boot the fault's Count allows.
func TestAHungHostComesBackAtTheBootItsFaultAllows(t *testing.T) {
	e, c, wc := runningCluster(t, "delta")
	w := e.createDevice("delta-worker", c.worker(t, testToken, c.caHash()))
	e.settle(boot)

	e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHostDown, ResourceID: w, Count: 2})
	e.settle(time.Second)
	if got := ready(nodes(t, wc)["delta-worker"]); got != corev1.ConditionUnknown {
		t.Fatalf("hung worker's node Ready = %q, want Unknown", got)
	}
	if d, _ := e.sim.Device(w); d.State != packetsim.StateActive {
		t.Fatalf("a hung host's device is %s, want still active", d.State)
	}
	for boot, want := range []corev1.ConditionStatus{corev1.ConditionUnknown, corev1.ConditionTrue} {
		e.rebootAndWait(w)
		if got := ready(nodes(t, wc)["delta-worker"]); got != want {
			t.Fatalf("after reboot %d the worker's node Ready = %q, want %q; console:\n%s", boot+1, got, want, e.console(w))
		}
	}
}

// Packet's reinstall rewrites the disk: the boot after it reads the device's user-data again, so a
// device whose first user-data could not join joins with the user-data it was given since.
func TestReinstallBootsTheUserDataAgain(t *testing.T) {
	e, c, wc := runningCluster(t, "epsilon")
	w := e.createDevice("epsilon-worker", c.worker(t, testToken, "sha256:"+strings.Repeat("0", 64)))
	e.settle(boot)
	if _, ok := nodes(t, wc)["epsilon-worker"]; ok {
		t.Fatal("a worker pinning the wrong CA hash joined")
	}

	good := c.worker(t, testToken, c.caHash())
	if _, _, err := e.metal.Devices.Update(w, &packngo.DeviceUpdateRequest{UserData: &good}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.metal.Devices.Reinstall(w, &packngo.DeviceReinstallFields{DeprovisionFast: true}); err != nil {
		t.Fatal(err)
	}
	e.settle(time.Second)
	if _, ok := nodes(t, wc)["epsilon-worker"]; ok {
		t.Fatal("the worker joined before its reinstall finished")
	}
	e.settle(boot)
	if got := ready(nodes(t, wc)["epsilon-worker"]); got != corev1.ConditionTrue {
		t.Fatalf("reinstalled worker's node Ready = %q, want True; console:\n%s", got, e.console(w))
	}

	// A host that keeps failing (host_down without a count) stays down through a reinstall too.
	id := e.sim.InjectFault(packetsim.Fault{Kind: packetsim.FaultHostDown, ResourceID: w})
	if _, err := e.metal.Devices.Reinstall(w, &packngo.DeviceReinstallFields{DeprovisionFast: true}); err != nil {
		t.Fatal(err)
	}
	e.settle(time.Second)
	e.settle(boot)
	if got := ready(nodes(t, wc)["epsilon-worker"]); got != corev1.ConditionUnknown {
		t.Fatalf("a worker that keeps failing is Ready = %q after its reinstall, want Unknown", got)
	}
	e.sim.RemoveFault(id)
	e.settle(time.Second)
	if got := ready(nodes(t, wc)["epsilon-worker"]); got != corev1.ConditionUnknown {
		t.Fatalf("a hung host came back without a boot: Ready = %q", got)
	}
	e.rebootAndWait(w)
	if got := ready(nodes(t, wc)["epsilon-worker"]); got != corev1.ConditionTrue {
		t.Fatalf("after the fault ended and a reboot the worker's node Ready = %q, want True; console:\n%s", got, e.console(w))
	}
	if !strings.Contains(e.console(w), "reinstall:") {
		t.Fatalf("the console does not show the reinstall:\n%s", e.console(w))
	}
}

// A device created with a storage layout boots with its arrays assembled and its filesystems
// mounted, as its console says.
func TestAHostReportsTheArraysAndMountsOfItsStorageLayout(t *testing.T) {
	e := newEnv(t)
	var cpr packngo.CPR
	if err := json.Unmarshal([]byte(`{"disks":[
		{"device":"/dev/sda","partitions":[{"label":"ROOTA","number":1,"size":"32G"},{"label":"ETCDA","number":2,"size":"0"}]},
		{"device":"/dev/sdb","partitions":[{"label":"ROOTB","number":1,"size":"32G"},{"label":"ETCDB","number":2,"size":"0"}]}],
		"raid":[{"devices":["/dev/sda1","/dev/sdb1"],"level":"1","name":"/dev/md/ROOT"},
		        {"devices":["/dev/sda2","/dev/sdb2"],"level":"1","name":"/dev/md/ETCD"}],
		"filesystems":[{"mount":{"device":"/dev/md/ROOT","format":"ext4","point":"/"}},
		               {"mount":{"device":"/dev/md/ETCD","format":"ext4","point":"/var/lib/etcd"}}]}`), &cpr); err != nil {
		t.Fatal(err)
	}
	d, _, err := e.metal.Devices.Create(&packngo.DeviceCreateRequest{Hostname: "raid", Plan: "c3.small.x86", Metro: "sv",
		OS: "ubuntu_24_04", ProjectID: packetsim.DefaultProjectID, UserData: "#cloud-config\nruncmd: [echo hi]\n", Storage: &cpr})
	if err != nil {
		t.Fatal(err)
	}
	e.settle(boot)
	console := e.console(d.ID)
	for _, want := range []string{"md: /dev/md/ETCD: raid1 of /dev/sda2 /dev/sdb2, active",
		"mount: /dev/md/ROOT on / type ext4", "mount: /dev/md/ETCD on /var/lib/etcd type ext4"} {
		if !strings.Contains(console, want) {
			t.Errorf("console lacks %q:\n%s", want, console)
		}
	}
	plain := e.createDevice("plain", "#cloud-config\nruncmd: [echo hi]\n")
	e.settle(boot)
	if c := e.console(plain); strings.Contains(c, "mount:") {
		t.Errorf("a device on the plan's default layout reports mounts:\n%s", c)
	}
}
