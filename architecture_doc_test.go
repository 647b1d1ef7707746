package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheArchitectureDocMapsEveryPackage keeps docs/architecture.md's package map true to the
// tree: every package under pkg/ is named there — a top-level one as `pkg/<name>`, one below it
// as a row of its parent's table or text (`<name>`) — and every package the doc names exists.
func TestTheArchitectureDocMapsEveryPackage(t *testing.T) {
	raw, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	packages := map[string]bool{}
	err = filepath.WalkDir("pkg", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		packages[filepath.ToSlash(filepath.Dir(path))] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range packages {
		parts := strings.Split(pkg, "/")
		named := strings.Contains(doc, "`"+pkg+"`")
		if len(parts) > 2 {
			named = named || strings.Contains(doc, "`"+parts[len(parts)-1]+"`")
		}
		if !named {
			t.Errorf("%s is not in docs/architecture.md's package map", pkg)
		}
	}
	for _, field := range strings.Split(doc, "`") {
		if strings.HasPrefix(field, "pkg/") && !strings.ContainsAny(field, " .") && !holdsPackages(packages, strings.TrimRight(field, "/*")) {
			t.Errorf("docs/architecture.md names %s, which is no package of the tree", field)
		}
	}
}

// holdsPackages reports whether dir is a package or a folder of packages.
func holdsPackages(packages map[string]bool, dir string) bool {
	for pkg := range packages {
		if pkg == dir || strings.HasPrefix(pkg, dir+"/") {
			return true
		}
	}
	return false
}
