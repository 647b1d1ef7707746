// Package image_test inspects the manager image `make image` builds, as a registry and a kubelet
// would see it: the OCI archive's manifest and config, the files of its layers, and its binary run
// straight from the unpacked filesystem (no container runtime is allowed on these machines).
// `make test-image` builds the archive and runs these tests; under a plain `go test ./...` they
// skip themselves (IMAGE_ARCHIVE is unset).
package image_test

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// sizeBudget is the most the image's compressed layers may weigh: the stripped manager (18 MiB
// compressed, 54 MiB on disk at v0.1.0) and a CA bundle, with room to grow. A base image or a
// second copy of the binary creeping in would break it.
const sizeBudget = 30 << 20

// wantFiles is every path the image holds; anything else (a shell, a package database, a build
// leftover) fails the test.
var wantFiles = []string{
	"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt",
	"manager", "tmp/",
}

func TestManagerImage(t *testing.T) {
	archive := os.Getenv("IMAGE_ARCHIVE")
	if archive == "" {
		t.Skip("the image tests run through `make test-image`, which builds the image and sets IMAGE_ARCHIVE")
	}
	ref, version := os.Getenv("IMAGE_REF"), os.Getenv("IMAGE_VERSION")
	img := readArchive(t, archive)

	t.Run("reference", func(t *testing.T) {
		if img.ref != ref {
			t.Errorf("archive reference %q, want %q", img.ref, ref)
		}
		components := os.Getenv("RELEASE_COMPONENTS")
		data, err := os.ReadFile(components)
		if err != nil {
			t.Fatal(err)
		}
		images := regexp.MustCompile(`(?m)^\s+image: (\S+)$`).FindAllStringSubmatch(string(data), -1)
		if len(images) != 1 || images[0][1] != ref {
			t.Errorf("%s runs %v, want exactly the archive's image %s", components, images, ref)
		}
	})

	t.Run("config", func(t *testing.T) {
		c := img.config
		if c.OS != "linux" || c.Architecture == "" {
			t.Errorf("platform %s/%s", c.OS, c.Architecture)
		}
		if !slices.Equal(c.Config.Entrypoint, []string{"/manager"}) || len(c.Config.Cmd) != 0 {
			t.Errorf("entrypoint %q cmd %q, want [/manager] and no cmd", c.Config.Entrypoint, c.Config.Cmd)
		}
		if c.Config.User != "65532:65532" {
			t.Errorf("user %q, want the non-root 65532:65532", c.Config.User)
		}
		labels := c.Config.Labels
		for key, want := range map[string]string{
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.source":   "https://github.com/kubernetes-sigs/cluster-api-provider-packet",
		} {
			if labels[key] != want {
				t.Errorf("label %s = %q, want %q", key, labels[key], want)
			}
		}
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(labels["org.opencontainers.image.revision"]) {
			t.Errorf("label org.opencontainers.image.revision = %q, want the commit", labels["org.opencontainers.image.revision"])
		}
	})

	t.Run("files", func(t *testing.T) {
		var names []string
		for name := range img.files {
			names = append(names, name)
		}
		slices.Sort(names)
		if !slices.Equal(names, wantFiles) {
			t.Errorf("files %q\nwant %q", names, wantFiles)
		}
		if img.size > sizeBudget {
			t.Errorf("layers weigh %d MiB, budget %d MiB", img.size>>20, sizeBudget>>20)
		}
		t.Logf("layers: %.1f MiB", float64(img.size)/(1<<20))
		manager := img.files["manager"]
		if manager.mode&0o111 == 0 || manager.uid != 0 {
			t.Errorf("manager mode %o owner %d: want executable and owned by root, not writable by the user it runs as", manager.mode, manager.uid)
		}
		if !strings.Contains(string(img.files["etc/passwd"].data), "nonroot:x:65532:65532:") {
			t.Errorf("/etc/passwd does not name user 65532:\n%s", img.files["etc/passwd"].data)
		}
		if !bytes.Contains(img.files["etc/ssl/certs/ca-certificates.crt"].data, []byte("-----BEGIN CERTIFICATE-----")) {
			t.Error("the CA bundle holds no certificate: the Packet API's TLS could not be verified")
		}
	})

	t.Run("binary", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "capp-image-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		// The image's user must be able to reach the binary, as in the pod.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "manager")
		if err := os.WriteFile(path, img.files["manager"].data, 0o755); err != nil {
			t.Fatal(err)
		}
		assertStatic(t, path)
		if out := runAsImageUser(t, path, "--version"); strings.TrimSpace(out) != version {
			t.Errorf("/manager --version printed %q, want %q", out, version)
		}
		if out := runAsImageUser(t, path, "--help"); !strings.Contains(out, "--packet-api-url") {
			t.Errorf("/manager --help does not list the manager's flags:\n%s", out)
		}
	})
}

// assertStatic fails unless the binary runs on a base with no C library: no program interpreter
// and no shared libraries.
func assertStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the manager is dynamically linked (program header %s)", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the manager needs shared libraries %v", libs)
	}
}

// runAsImageUser runs the binary as the image's user when the test may (as root), so that a
// binary needing root or a writable home fails here as it would in the pod.
func runAsImageUser(t *testing.T, path string, args ...string) string {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Dir = "/"
	cmd.Env = []string{}
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", path, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// file is one entry of the image's merged layers.
type file struct {
	mode int64
	uid  int
	data []byte
}
