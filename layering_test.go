package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is forge's module path.
const module = "github.com/forge-run/forge"

// layers is the house's layering, lowest first (README, Development): a
// package imports only forge packages of lower layers, or its own
// subpackages. Packages not listed (bench tools) are not checked.
var layers = [][]string{
	{"internal/text", "internal/yamlcheck", "internal/mask", "internal/dotenv", "internal/loopback", "internal/linux", "schema",
		"internal/testkit/golden", "internal/testkit/relaid", "internal/testkit/fakemodel", "internal/testkit/squares",
		"internal/testkit/browser", "internal/testkit/testfiles", "internal/testkit/wait"}, // testkit: for forge's own tests and benches
	{"runner/daytona/daytonatest", "runner/local/localtest", "agent/agenttest"}, // test doubles and helpers, on internal/ alone
	{"runner"},
	{"record"},
	{"scoring", "runner/local", "runner/daytona", "agent"},
	{"forge"},
	{"report", "report/junit", "report/internal/fixture", "compare"},
	{"view"},
	{"cli"},
	{"", "runner/daytona/daytonatest/emulator", "agent/agenttest/fakemodel", "agent/agenttest/install"}, // main, and the test doubles' commands
}

// Packages that must not depend on something, even indirectly.
var forbidden = []struct {
	pkg, dep, why string
}{
	{"forge", "github.com/daytonaio/", "only runner/daytona knows the Daytona SDK"},
	{"scoring", "github.com/daytonaio/", "only runner/daytona knows the Daytona SDK"},
	{"report", "github.com/daytonaio/", "only runner/daytona knows the Daytona SDK"},
	{"compare", "github.com/daytonaio/", "only runner/daytona knows the Daytona SDK"},
	{"runner", "github.com/daytonaio/", "only runner/daytona knows the Daytona SDK"},
	{"runner/local", "github.com/daytonaio/", "only runner/daytona knows the Daytona SDK"},
	{"report", module + "/forge", "report reads a run through package record, not the engine"},
	{"compare", module + "/forge", "compare reads a run through package record, not the engine"},
	{"view", module + "/forge", "view reads a run through package record, not the engine"},
}

// Packages that must not import a package themselves.
var forbiddenImports = []struct {
	pkg     string
	imports []string
	why     string
}{
	{"scoring", []string{"os/exec", "os/signal", "syscall"},
		"scoring is pure: it starts no process (forge runs judges as jobs of the local runner)"},
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func goList(t *testing.T) map[string]listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs[rel] = p
	}
	return pkgs
}

func TestLayering(t *testing.T) {
	pkgs := goList(t)
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layerOf[p] = i
			if _, ok := pkgs[p]; !ok {
				t.Errorf("layers names %q, which is not a package (update the list)", p)
			}
		}
	}
	for rel, p := range pkgs {
		if strings.HasPrefix(rel, "bench/") {
			continue
		}
		mine, ok := layerOf[rel]
		if !ok {
			t.Errorf("package %q has no layer: add it to layers (and to the README's Development section)", rel)
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			sub := rel != "" && strings.HasPrefix(dep, rel+"/")
			if theirs := layerOf[dep]; theirs >= mine && !sub {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", rel, mine, dep, theirs)
			}
		}
		if rel == "runner/daytona" {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/daytonaio/") {
				t.Errorf("%s imports %s: only runner/daytona knows the Daytona SDK", rel, imp)
			}
		}
	}
}

func TestForbiddenDependencies(t *testing.T) {
	for _, f := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "./"+f.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", f.pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, f.dep) || dep == f.dep {
				t.Errorf("%s depends on %s: %s", f.pkg, dep, f.why)
				break
			}
		}
	}
}

func TestForbiddenImports(t *testing.T) {
	pkgs := goList(t)
	for _, f := range forbiddenImports {
		p, ok := pkgs[f.pkg]
		if !ok {
			t.Errorf("forbiddenImports names %q, which is not a package (update the list)", f.pkg)
			continue
		}
		for _, imp := range p.Imports {
			if slices.Contains(f.imports, imp) {
				t.Errorf("%s imports %s: %s", f.pkg, imp, f.why)
			}
		}
	}
}
