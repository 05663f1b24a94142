// The architecture test keeps the import direction of docs/architecture.md:
// leaves are nvmeof, fio, record; checks <- leaves; sim <- nvmeof, fio,
// record (its Model: the world a plan.json records);
// analysis (the incident analysis) <- record, checks, incidents; reports
// <- record, checks, analysis; workload <- fio; backend <- leaves, sim,
// workload; collectors, faults <- backend; scenario <- all of those;
// harness (the run library) <- scenario and all below it; suites and
// cmd/fiomig on top. It also keeps Ginkgo/Gomega inside suites/,
// and the wall clock and global randomness out of sim/, nvmeof/ and fio/;
// the lean binary cmd/fiomig-host imports only nvmeof (leanCommands).
package fiomig_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/fiomig/fiomig"

// allowed maps a top-level package group to the groups it may import.
var allowed = map[string][]string{
	"nvmeof":     {},
	"fio":        {},
	"record":     {},
	"internal":   {}, // test support; sub-packages have their own rules in allowedInternal
	"images":     {}, // container image builder (go-containerregistry); make images
	"checks":     {"record", "nvmeof", "fio"},
	"incidents":  {"record"},
	"analysis":   {"record", "checks", "incidents", "nvmeof", "fio"},
	"sim":        {"nvmeof", "fio", "record"},
	"reports":    {"record", "checks", "nvmeof", "fio", "analysis", "incidents"},
	"ci":         {"record", "checks", "reports", "nvmeof", "fio", "analysis", "incidents"},
	"history":    {"record", "checks", "reports", "ci", "nvmeof", "fio", "analysis", "incidents"},
	"workload":   {"fio"},
	"backend":    {"backend", "record", "nvmeof", "fio", "sim", "workload"},
	"collectors": {"backend", "record", "nvmeof", "fio"},
	"faults":     {"backend", "record", "nvmeof", "fio"},
	"scenario":   {"backend", "collectors", "faults", "checks", "reports", "record", "nvmeof", "fio", "sim", "workload", "incidents", "analysis"},
	"harness":    {"backend", "collectors", "faults", "checks", "reports", "record", "nvmeof", "fio", "sim", "workload", "incidents", "analysis", "scenario"},
	"suites":     {"*"},
	"cmd":        {"*"},
}

// allowedInternal gives each internal/ sub-package the groups it may import.
// internal/ is test support: only _test.go files, suites/ and internal/
// itself may import it (TestImportDirection enforces this).
var allowedInternal = map[string][]string{
	"internal/tooltest": {},
	"internal/nvmecli":  {},
	"internal/synthlog": {},
	"internal/logscan":  {"internal", "fio"},
	"internal/kubetest": {"internal"},
	"internal/kubenode": {},
	"internal/pgtest":   {"internal"},
	"internal/standin":  {"internal", "backend", "record", "nvmeof", "fio", "sim", "workload"},
}

// stdlibOnly groups may import nothing outside the standard library and the
// module (non-test files).
var stdlibOnly = []string{"nvmeof", "fio", "record", "sim", "internal"}

// stdlibOnlyExempt are directories inside a stdlibOnly group that may import
// modules: internal/kubetest drives the real control plane through
// controller-runtime's envtest and client-go (test helper only).
var stdlibOnlyExempt = []string{"internal/kubetest/", "internal/standin/", "internal/kubenode/"}

// leanCommands are binaries that must start like the system tools they
// stand beside (fiomig-host: as fast as nvme-cli): their non-test files may
// import only the standard library and these module package groups. Since
// nvmeof is itself a standard-library-only leaf, this keeps the whole
// binary to the standard library and nvmeof.
var leanCommands = map[string][]string{
	"cmd/fiomig-host": {"nvmeof"},
}

// deterministic groups may not read the wall clock or global randomness.
var deterministic = []string{"sim", "nvmeof", "fio"}

type goFile struct {
	group, path string
	file        *ast.File
}

func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "out" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || !strings.Contains(path, "/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, goFile{group: strings.SplitN(filepath.ToSlash(path), "/", 2)[0], path: path, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("found no Go files: is the test running in the module root?")
	}
	return files
}

func TestImportDirection(t *testing.T) {
	for _, v := range importViolations(moduleFiles(t)) {
		t.Error(v)
	}
}

func importViolations(files []goFile) []string {
	var out []string
	errorf := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	for _, f := range files {
		rules, known := allowed[f.group]
		if f.group == "internal" {
			rules, known = allowedInternal[internalPackage(f.path)]
		}
		if !known {
			errorf("%s: package group %q is not in the layout of docs/architecture.md (add it to the architecture test with its allowed imports)", f.path, f.group)
			continue
		}
		lean, isLean := leanCommands[filepath.ToSlash(filepath.Dir(f.path))]
		for _, imp := range f.file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if isLean && !isStdlib(p) && !slices.Contains(lean, strings.SplitN(strings.TrimPrefix(p, module+"/"), "/", 2)[0]) {
				errorf("%s imports %s: %s is a lean binary of the standard library and %v only", f.path, p, filepath.Dir(f.path), lean)
			}
			if strings.HasPrefix(p, module+"/") {
				to := strings.SplitN(strings.TrimPrefix(p, module+"/"), "/", 2)[0]
				if to == "internal" && f.group != "internal" && f.group != "suites" {
					errorf("%s imports %s: internal/ is test support, importable only by tests, suites/ and internal/", f.path, p)
					continue
				}
				if to != f.group && !slices.Contains(rules, "*") && !slices.Contains(rules, to) {
					errorf("%s imports %s: %s may import only %v (docs/architecture.md, import direction)", f.path, p, f.group, rules)
				}
				continue
			}
			isStd := isStdlib(p)
			exempt := slices.ContainsFunc(stdlibOnlyExempt, func(d string) bool { return strings.HasPrefix(filepath.ToSlash(f.path), d) })
			if !isStd && slices.Contains(stdlibOnly, f.group) && !exempt {
				errorf("%s imports %s: %s is a leaf of the standard library only", f.path, p, f.group)
			}
			if (strings.HasPrefix(p, "github.com/onsi/ginkgo") || strings.HasPrefix(p, "github.com/onsi/gomega")) && f.group != "suites" {
				errorf("%s imports %s: only suites/ may import Ginkgo/Gomega outside tests", f.path, p)
			}
		}
	}
	return out
}

// isStdlib reports whether import path p is the standard library's (no dot
// in its first element).
func isStdlib(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

// internalPackage names the internal/ sub-package a file is in
// ("internal/standin" for internal/standin/kubelet.go).
func internalPackage(path string) string {
	parts := strings.SplitN(filepath.ToSlash(path), "/", 3)
	if len(parts) < 3 {
		return "internal"
	}
	return parts[0] + "/" + parts[1]
}

// randSeeded are the math/rand(/v2) names that build or name a seeded
// generator rather than draw from the global one.
var randSeeded = []string{"New", "NewPCG", "NewSource", "NewChaCha8", "NewZipf", "Rand", "Source", "PCG", "ChaCha8", "Zipf"}

func TestNoWallClockOrGlobalRandomness(t *testing.T) {
	for _, v := range clockViolations(moduleFiles(t)) {
		t.Error(v)
	}
}

func clockViolations(files []goFile) []string {
	var out []string
	errorf := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	for _, f := range files {
		if !slices.Contains(deterministic, f.group) {
			continue
		}
		names := map[string]string{} // local name -> import path
		for _, imp := range f.file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := filepath.Base(p)
			if p == "math/rand/v2" {
				name = "rand"
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch names[id.Name] {
			case "time":
				if slices.Contains([]string{"Now", "Since", "Until", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc"}, sel.Sel.Name) {
					errorf("%s: time.%s reads the wall clock; %s must use its injected clock", f.path, sel.Sel.Name, f.group)
				}
			case "math/rand", "math/rand/v2":
				if !slices.Contains(randSeeded, sel.Sel.Name) {
					errorf("%s: rand.%s draws from global randomness; derive a *rand.Rand from the seed", f.path, sel.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

func TestEveryPackageHasDocGo(t *testing.T) {
	dirs := map[string]bool{}
	for _, f := range moduleFiles(t) {
		dirs[filepath.Dir(f.path)] = true
	}
	for d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "doc.go")); err != nil {
			t.Errorf("package %s has no doc.go (what it is, what it may import)", d)
		}
	}
}

// TestTheRulesCanFail feeds made-up files that break each rule.
func TestTheRulesCanFail(t *testing.T) {
	parse := func(dir, src string) goFile {
		f, err := parser.ParseFile(token.NewFileSet(), dir+"/x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		return goFile{group: strings.SplitN(dir, "/", 2)[0], path: dir + "/x.go", file: f}
	}
	bad := []goFile{
		parse("nvmeof", `package nvmeof; import _ "`+module+`/record"`),
		parse("record", `package record; import _ "github.com/google/go-cmp/cmp"`),
		parse("checks", `package checks; import _ "github.com/onsi/gomega"`),
		parse("widgets", `package widgets`),
		parse("internal", `package tooltest; import _ "k8s.io/client-go/rest"`),  // "internal" alone has no rules
		parse("backend", `package kube; import _ "`+module+`/internal/standin"`), // internal/ is for tests and suites
		parse("cmd/fiomig-host", `package main; import _ "`+module+`/record"`),   // a lean binary: nvmeof only
		parse("cmd/fiomig-host", `package main; import _ "github.com/google/go-cmp/cmp"`),
	}
	if got := importViolations(bad); len(got) != 8 {
		t.Errorf("import violations = %d, want 8:\n%s", len(got), strings.Join(got, "\n"))
	}
	clock := []goFile{
		parse("sim", `package sim; import ("time"; "math/rand/v2"); var a = time.Now(); var b = rand.IntN(3); var c = rand.New(rand.NewPCG(1, 2))`),
		parse("fio", `package fio; import r "math/rand"; var x = r.Int()`),
		parse("reports", `package reports; import "time"; var a = time.Now()`),
	}
	if got := clockViolations(clock); len(got) != 3 {
		t.Errorf("clock violations = %d, want 3 (time.Now and rand.IntN in sim, r.Int in fio):\n%s", len(got), strings.Join(got, "\n"))
	}
}

// cmdLinesMax bounds cmd/fiomig's non-test lines (comments and blank
// lines counted, as wc -l does): the verbs parse flags and print, the
// run library (harness) does the work (docs/architecture.md).
const cmdLinesMax = 1500

func TestCommandsStayThin(t *testing.T) {
	n := 0
	for _, f := range moduleFiles(t) {
		if filepath.Dir(f.path) == filepath.Join("cmd", "fiomig") && !strings.HasSuffix(f.path, "_test.go") {
			b, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			n += strings.Count(string(b), "\n")
		}
	}
	if n == 0 || n >= cmdLinesMax {
		t.Errorf("cmd/fiomig holds %d non-test lines, want 1..%d: move the work into harness", n, cmdLinesMax-1)
	}
}
