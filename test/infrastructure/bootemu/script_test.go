package bootemu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
)

// waitForFile is a pre-kubeadm script in the manner of Cluster API's /wait-signal.sh: it holds
// the boot until a file exists (the spec's ConfigMap, here), then acknowledges.
const waitForFile = `#!/bin/bash
while [ ! -e "$1" ]; do echo "waiting for $1"; sleep 0.1; done
echo ack > "$1.ack"
echo "signal received"
`

// scriptedInit is a first control plane whose runcmd runs, before kubeadm init, the allowed
// /wait-signal.sh and a script of the host's that the emulation must not run.
func scriptedInit(t *testing.T, c *cluster, signal, marker string) string {
	t.Helper()
	return c.initWith(t, "v1.36.3", cloudinit.BaseUserData{
		AdditionalFiles: []bootstrapv1.File{
			{Path: "/wait-signal.sh", Content: waitForFile, Permissions: "0777"},
			{Path: "/usr/local/bin/node-setup.sh", Content: "#!/bin/bash\ntouch " + marker + "\n"},
		},
		PreKubeadmCommands:  []string{`./wait-signal.sh "` + signal + `"`, "/usr/local/bin/node-setup.sh"},
		PostKubeadmCommands: []string{installCPEM},
	})
}

func TestKubeadmWaitsForTheAllowedScriptAndOnlyItRuns(t *testing.T) {
	e := newEnvWith(t, Options{RunScripts: []string{"/wait-signal.sh"}})
	eip := e.reserveElasticIP()
	c := newCluster(t, "scripted", eip)
	dir := t.TempDir()
	signal, marker := filepath.Join(dir, "signal"), filepath.Join(dir, "node-setup-ran")
	id := e.createDevice("scripted-cp-0", scriptedInit(t, c, signal, marker))
	e.settle(boot)
	e.assign(id, eip)

	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(e.console(id), "waiting for") {
		e.settle(100 * time.Millisecond)
	}
	if con := e.console(id); !strings.Contains(con, "/wait-signal.sh: waiting for "+signal) || strings.Contains(con, "initialized successfully") {
		t.Fatalf("want the script running and kubeadm init waiting for it; console:\n%s", con)
	}
	if strings.Count(e.console(id), "waiting for") != 1 {
		t.Errorf("a repeated line of the script reached the console more than once:\n%s", e.console(id))
	}

	if err := os.WriteFile(signal, []byte("pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(e.console(id), "initialized successfully") {
		e.settle(100 * time.Millisecond)
	}
	con := e.console(id)
	if !strings.Contains(con, "/wait-signal.sh finished") || !strings.Contains(con, "initialized successfully") {
		t.Fatalf("kubeadm init did not run after the script ended; console:\n%s", con)
	}
	if _, err := os.Stat(signal + ".ack"); err != nil {
		t.Errorf("the script did not acknowledge: %v", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("a script not in RunScripts ran on this machine (stat %s: %v)", marker, err)
	}
	if len(nodes(t, c.client(t))) != 1 {
		t.Error("no Node after kubeadm init")
	}
}

func TestDeletingTheDeviceKillsItsScript(t *testing.T) {
	e := newEnvWith(t, Options{RunScripts: []string{"/wait-signal.sh"}})
	c := newCluster(t, "killed", e.reserveElasticIP())
	dir := t.TempDir()
	id := e.createDevice("killed-cp-0", scriptedInit(t, c, filepath.Join(dir, "never"), filepath.Join(dir, "marker")))
	e.settle(boot)
	h := e.emu.hosts[id]
	if h == nil || h.script == nil {
		t.Fatalf("no script running on the active device; console:\n%s", e.console(id))
	}
	pid, scriptDir := h.script.cmd.Process.Pid, h.script.dir

	if _, err := e.metal.Devices.Delete(id, true); err != nil {
		t.Fatal(err)
	}
	e.settle(time.Minute)
	if _, ok := e.emu.hosts[id]; ok {
		t.Fatal("the deleted device's host is still emulated")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the script's process %d outlived its device", pid)
	}
	if _, err := os.Stat(scriptDir); !os.IsNotExist(err) {
		t.Errorf("the script's folder %s was left behind: %v", scriptDir, err)
	}
}

func TestPreKubeadmScriptsAreTheCommandsBeforeKubeadmThatRunAWrittenScript(t *testing.T) {
	files := map[string]string{"/wait-signal.sh": "#!/bin/bash\n", "/etc/motd": "hello", "/late.sh": "#!/bin/sh\n"}
	got := preKubeadmScripts(files, []string{
		`./wait-signal.sh "tok" "https://x" ns`, "/etc/motd", "apt-get update",
		"kubeadm init --config /run/kubeadm/kubeadm.yaml", "/late.sh"})
	if len(got) != 1 || got[0].Path != "/wait-signal.sh" || !strings.HasPrefix(got[0].Command, "./wait-signal.sh") {
		t.Fatalf("scripts = %v, want ./wait-signal.sh alone (not a file without shebang, not after kubeadm)", got)
	}
	if s := got[0].String(); strings.Contains(s, "tok") {
		t.Errorf("String() shows the command's arguments: %q", s)
	}
}

// The programs the previous provider's v0.9.0 kube-vip flavour runs around kubeadm are listed by
// name, once each, with no here-document line or shell keyword among them.
func TestProgramsOfThePreviousProvidersCommands(t *testing.T) {
	dir, err := previousProviderTemplates()
	if err != nil {
		t.Fatal(err)
	}
	_, commands, _ := controlPlanePayload(t, filepath.Join(dir, "cluster-template-kube-vip.yaml"))
	got := programsOf(append(commands, "kubeadm init --config /run/kubeadm/kubeadm.yaml"))
	for _, want := range []string{"swapoff", "modprobe", "sysctl", "apt-get", "curl", "containerd", "systemctl", "ip", "ctr", "kubectl", "rm"} {
		if !slices.Contains(got, want) {
			t.Errorf("programs %v: %s missing", got, want)
		}
	}
	for _, never := range []string{"kubeadm", "overlay", "br_netfilter", "net.ipv4.ip_forward", "runtime-endpoint:", "fi", "EOF"} {
		if slices.Contains(got, never) {
			t.Errorf("programs %v: %s is not a program the host starts", got, never)
		}
	}
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p] {
			t.Errorf("programs %v: %s twice", got, p)
		}
		seen[p] = true
	}
}
