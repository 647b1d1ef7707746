package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The launcher Tilt runs must start the manager with exactly the arguments and environment the
// sandbox would give it, whatever characters they hold, and pass on extra arguments.
func TestLauncherRunsTheCommandLineVerbatim(t *testing.T) {
	dir := t.TempDir()
	// A stand-in manager that prints its working folder, arguments and two variables.
	fake := filepath.Join(dir, "fake manager")
	script := "#!/bin/sh\npwd\nprintf '%s\\n' \"$@\"\necho \"$PACKET_API_KEY|$WEIRD\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Component{
		Name: managerName, binary: fake, Launcher: filepath.Join(dir, "bin", managerName),
		args: []string{"--health-addr=127.0.0.1:1", "--it's=quoted", "two words", `$HOME`},
		env:  []string{"PACKET_API_KEY=sim-token", `WEIRD=a'b "c" $d`},
	}
	if err := writeLauncher(c, dir); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(c.Launcher, "--extra").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	want := append(append([]string{dir}, c.args...), "--extra", `sim-token|a'b "c" $d`)
	if !slices.Equal(got, want) {
		t.Errorf("the launcher ran\n%q\nwant\n%q", got, want)
	}
}

// With ExternalManager the sandbox plans its manager as usual but leaves the start to a launcher,
// and the Tiltfile probes the health ports the plan gives the managers.
func TestExternalManagerPlanMatchesTheTiltfile(t *testing.T) {
	cfg := DefaultConfig(filepath.Join("..", "..", ".."))
	cfg.StateDir = t.TempDir()
	cfg.ExternalManager = true
	sb := &Sandbox{cfg: cfg, ports: cfg.ports()}
	sb.plan()
	m := sb.Component(managerName)
	if m.Launcher != filepath.Join(cfg.StateDir, "bin", managerName) || m.LogFile != "" {
		t.Errorf("launcher %q log %q, want a launcher in the state folder and no log", m.Launcher, m.LogFile)
	}
	for _, c := range sb.Components {
		if c != m && c.Launcher != "" {
			t.Errorf("%s has a launcher too", c.Name)
		}
	}

	tiltfile, err := os.ReadFile(filepath.Join(cfg.RepoRoot, "Tiltfile"))
	if err != nil {
		t.Fatal(err)
	}
	found := regexp.MustCompile(`capi_health, manager_health = port_base \+ (\d+), port_base \+ (\d+)`).FindSubmatch(tiltfile)
	if found == nil {
		t.Fatal("the Tiltfile no longer sets capi_health and manager_health")
	}
	for i, c := range []*Component{sb.Component("capi-controller-manager"), m} {
		if want := strconv.Itoa(c.healthPort - cfg.PortBase); string(found[i+1]) != want {
			t.Errorf("the Tiltfile probes %s on port_base + %s, the sandbox serves its health on port_base + %s", c.Name, found[i+1], want)
		}
	}
}
