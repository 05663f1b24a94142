package images

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/fiomig/fiomig/internal/tooltest"
)

// smallSpec is an image of two host files and a link: no Debian packages.
func smallSpec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, []byte("data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Spec{
		Name:     "small",
		Files:    map[string]string{"/usr/bin/tool": exe, "/etc/data": data},
		Symlinks: map[string]string{"/bin/tool": "../usr/bin/tool"},
		Config:   v1.Config{Entrypoint: []string{"/usr/bin/tool"}, User: "65534:65534"},
	}
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBuildIsReproducible: the same files built twice (their mtimes moved
// in between) give the same digest, and the layer holds exactly the files,
// links and parent directories, owned by root, at mtime 0, with the files'
// permission bits.
func TestBuildIsReproducible(t *testing.T) {
	spec := smallSpec(t)
	a, _, err := Build(context.Background(), spec, Debian{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range spec.Files {
		if err := os.Chtimes(f, epoch.AddDate(3, 0, 0), epoch.AddDate(3, 0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	b, _, err := Build(context.Background(), spec, Debian{})
	if err != nil {
		t.Fatal(err)
	}
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Fatalf("digests differ: %s, %s", da, db)
	}
	layers, err := a.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	dir := t.TempDir()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cmd := exec.Command("tar", "-tvf", "-", "--numeric-owner", "--full-time")
	cmd.Stdin, cmd.Dir = rc, dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tar -tv: %v", err)
	}
	var got []string
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		got = append(got, strings.Join([]string{f[0], f[1], f[3], f[4], strings.Join(f[5:], " ")}, " "))
	}
	want := []string{
		"drwxr-xr-x 0/0 1970-01-01 00:00:00 bin/",
		"lrwxrwxrwx 0/0 1970-01-01 00:00:00 bin/tool -> ../usr/bin/tool",
		"drwxr-xr-x 0/0 1970-01-01 00:00:00 etc/",
		"-rw------- 0/0 1970-01-01 00:00:00 etc/data",
		"drwxr-xr-x 0/0 1970-01-01 00:00:00 usr/",
		"drwxr-xr-x 0/0 1970-01-01 00:00:00 usr/bin/",
		"-rwxr-xr-x 0/0 1970-01-01 00:00:00 usr/bin/tool",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("layer (-want +got):\n%s", d)
	}
	cf, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(epoch) || cf.Config.User != "65534:65534" {
		t.Errorf("config: os %q arch %q created %v user %q", cf.OS, cf.Architecture, cf.Created, cf.Config.User)
	}
}

// TestELFClosureMatchesLdd: the closure of this machine's nft (its root
// taken as an unpacked tree) names the same libraries ldd(1) resolves.
func TestELFClosureMatchesLdd(t *testing.T) {
	ldd := tooltest.Command(t, "ldd")
	exe, err := exec.LookPath("nft")
	if err != nil {
		exe = "/usr/bin/ls"
	}
	exe, _ = filepath.EvalSymlinks(exe)
	out, err := exec.Command(ldd, exe).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", exe, err)
	}
	var want []string
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "linux-vdso") {
			continue
		}
		want = append(want, path.Base(f[0]))
	}
	paths, err := ELFClosure("/", exe)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range paths {
		if p != exe {
			got = append(got, path.Base(p))
		}
	}
	slices.Sort(want)
	got = slices.Compact(slices.Sorted(slices.Values(got)))
	if d := cmp.Diff(slices.Compact(want), got); d != "" {
		t.Errorf("libraries of %s (-ldd +ELFClosure):\n%s", exe, d)
	}
}

func TestELFClosureNamesMissingLibrary(t *testing.T) {
	root := t.TempDir()
	exe, _ := filepath.EvalSymlinks("/usr/bin/ls")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Skip("no /usr/bin/ls")
	}
	os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/bin/ls"), b, 0o755)
	_, err = ELFClosure(root, "/usr/bin/ls")
	if err == nil || !strings.Contains(err.Error(), "/usr/bin/ls needs") {
		t.Fatalf("err = %v, want one naming what /usr/bin/ls needs", err)
	}
}

// TestWriteOCIAndPush: the layout names the image for containerd, Load
// reads back the same digest, and a push to a registry (an in-process one
// on loopback) serves that digest under the tag.
func TestWriteOCIAndPush(t *testing.T) {
	img, _, err := Build(context.Background(), smallSpec(t), Debian{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag("ghcr.io/fiomig/small:v1")
	latest, _ := name.NewTag("ghcr.io/fiomig/small:latest")
	dir := filepath.Join(t.TempDir(), "small")
	d, err := WriteOCI(dir, img, ref, latest)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(idx, &index); err != nil || len(index.Manifests) != 2 ||
		index.Manifests[0].Annotations[AnnotationImageName] != "ghcr.io/fiomig/small:v1" || index.Manifests[0].Digest != d.String() ||
		index.Manifests[1].Annotations[AnnotationImageName] != "ghcr.io/fiomig/small:latest" || index.Manifests[1].Digest != d.String() {
		t.Errorf("index.json = %s (%v), want manifest %s named ghcr.io/fiomig/small:v1 and :latest", idx, err, d)
	}
	if _, err := os.Stat(dir + ".tar"); err != nil {
		t.Error(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(t, back); got != d {
		t.Errorf("Load: digest %s, wrote %s", got, d)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	to, err := name.NewTag(host+"/lab/small:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := Push(context.Background(), img, to)
	if err != nil {
		t.Fatal(err)
	}
	if pushed.DigestStr() != d.String() {
		t.Errorf("pushed %s, want digest %s", pushed, d)
	}
	got, err := remote.Image(to)
	if err != nil {
		t.Fatal(err)
	}
	if gd := digest(t, got); gd != d {
		t.Errorf("registry serves %s, pushed %s", gd, d)
	}
}

// TestDebianImagesAreReproducible builds the fio image twice from
// Debian's packages (fetched into the repo's .cache/debs, as `make images`
// does) and compares digests.
func TestDebianImagesAreReproducible(t *testing.T) {
	tooltest.Command(t, "apt-get")
	tooltest.Command(t, "dpkg-deb")
	if testing.Short() {
		t.Skip("-short: fetches Debian packages")
	}
	cache := filepath.Join(repoRoot(t), ".cache", "debs")
	for _, spec := range []Spec{FioSpec()} {
		var ds []v1.Hash
		for range 2 {
			img, debs, err := Build(context.Background(), spec, Debian{Cache: cache, Logf: t.Logf})
			if err != nil {
				tooltest.Require(t, err)
				return
			}
			ds = append(ds, digest(t, img))
			if spec.Name == "fio" && Tag(spec, debs) == "unknown" {
				t.Errorf("fio image: no fio package among %d", len(debs))
			}
		}
		if ds[0] != ds[1] {
			t.Errorf("image %s: digests %s and %s", spec.Name, ds[0], ds[1])
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = filepath.Dir(dir)
	}
}
