// Package services_test holds the test that keeps each condition in the hands of one service.
package services_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module's root, seen from this package's folder.
const repoRoot = "../.."

// TestEachConditionIsSetByOnePackage proves that every condition type the API declares is set
// in exactly one package of the manager's code, and that docs/architecture.md names that
// package. A condition is set where a metav1.Condition literal names it as its Type, or where
// apistatus.Record is told that it is the failing step.
func TestEachConditionIsSetByOnePackage(t *testing.T) {
	declared := declaredConditions(t)
	setters := conditionSetters(t)
	documented := documentedOwners(t)
	for _, name := range declared {
		pkgs := setters[name]
		switch {
		case len(pkgs) == 0:
			t.Errorf("infrav1.%s is declared but set nowhere", name)
		case len(pkgs) > 1:
			t.Errorf("infrav1.%s is set in %d packages, want one: %v", name, len(pkgs), pkgs)
		case documented[name] != pkgs[0]:
			t.Errorf("infrav1.%s is set in %s; docs/architecture.md says %q", name, pkgs[0], documented[name])
		}
	}
	for name := range setters {
		if !slices.Contains(declared, name) {
			t.Errorf("infrav1.%s is set but not declared in api/v1beta1/conditions_consts.go", name)
		}
	}
}

// declaredConditions returns the names of the condition types in conditions_consts.go.
func declaredConditions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "api/v1beta1/conditions_consts.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range f.Scope.Objects {
		if obj.Kind == ast.Con && strings.HasSuffix(obj.Name, "Condition") {
			names = append(names, obj.Name)
		}
	}
	if len(names) < 10 {
		t.Fatalf("found %d condition types in conditions_consts.go, expected the full set", len(names))
	}
	return names
}

// conditionSetters maps each condition constant to the packages (folders) that set it.
func conditionSetters(t *testing.T) map[string][]string {
	t.Helper()
	setters := map[string][]string{}
	record := func(name, dir string) {
		if !slices.Contains(setters[name], dir) {
			setters[name] = append(setters[name], dir)
		}
	}
	for _, file := range managerFiles(t) {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := filepath.Rel(repoRoot, filepath.Dir(file))
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if isSelector(n.Type, "metav1", "Condition") {
					typ := fieldValue(n, "Type")
					if _, literal := typ.(*ast.BasicLit); literal {
						t.Errorf("%s: a condition's Type is a string literal; use its infrav1 constant", file)
					}
					if name, ok := infrav1Name(typ); ok {
						record(name, dir)
					}
				}
			case *ast.CallExpr:
				if isSelector(n.Fun, "apistatus", "Record") && len(n.Args) > 1 {
					if name, ok := infrav1Name(n.Args[1]); ok {
						record(name, dir)
					}
				}
			}
			return true
		})
	}
	return setters
}

// managerFiles lists the Go files of the manager: everything but tests, test infrastructure,
// the API types and generated code.
func managerFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	skip := []string{".git", "_artifacts", "api", "bin", "hack", "test"}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() && slices.Contains(skip, rel) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d Go files of the manager, expected many more", len(files))
	}
	return files
}

// documentedOwners reads the condition reference of docs/architecture.md: the first package
// path in each row's "Set by" column.
func documentedOwners(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\|.*\\| `([\\w/]+)`[^|]*\\|$")
	owners := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		owners[m[1]+"Condition"] = m[2]
	}
	return owners
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func fieldValue(lit *ast.CompositeLit, key string) ast.Expr {
	for _, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return kv.Value
			}
		}
	}
	return nil
}

// infrav1Name returns X of an infrav1.X expression that names a condition.
func infrav1Name(e ast.Expr) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok || id.Name != "infrav1" || !strings.HasSuffix(sel.Sel.Name, "Condition") {
		return "", false
	}
	return sel.Sel.Name, true
}
