package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// LabelDebianPackages is the image config label listing the Debian
// packages an image was made from, "name=version" separated by spaces.
const LabelDebianPackages = "io.fiomig.debian-packages"

// Spec is one image to build.
type Spec struct {
	// Name is the image's short name ("fiomig", "fio"): the repository's
	// last element and the name of its output files.
	Name string
	// Files maps a path in the image to a file on this machine, copied
	// with its permission bits.
	Files map[string]string
	// Packages are the Debian packages (with their dependency closure)
	// that Executables and Copy are taken from.
	Packages []string
	// Executables are paths inside the unpacked packages, kept with their
	// ELF interpreter and shared-library closure (ELFClosure).
	Executables []string
	// Copy are paths inside the unpacked packages kept as they are (a
	// symbolic link is followed and its target's content kept).
	Copy []string
	// Symlinks maps a path in the image to a link target.
	Symlinks map[string]string
	// Config is the image's run configuration (Entrypoint, Cmd, User,
	// Env, WorkingDir, Labels).
	Config v1.Config
}

// epoch is every file's and the image's creation time.
var epoch = time.Unix(0, 0).UTC()

// Build makes spec's image, fetching its Debian packages through deb. It
// returns the image and the packages it was made from (nil without
// Packages).
func Build(ctx context.Context, spec Spec, deb Debian) (v1.Image, []Deb, error) {
	files := fstest.MapFS{}
	var debs []Deb
	if len(spec.Packages) > 0 {
		names, err := deb.Closure(ctx, spec.Packages...)
		if err != nil {
			return nil, nil, err
		}
		if debs, err = deb.Fetch(ctx, names); err != nil {
			return nil, nil, err
		}
		root, err := os.MkdirTemp("", "fiomig-images-")
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(root)
		if err := Unpack(ctx, root, debs); err != nil {
			return nil, nil, err
		}
		var keep []string
		for _, exe := range spec.Executables {
			paths, err := ELFClosure(root, exe)
			if err != nil {
				return nil, nil, fmt.Errorf("image %s: %w", spec.Name, err)
			}
			keep = append(keep, paths...)
		}
		keep = append(keep, spec.Copy...)
		for _, p := range keep {
			real, err := resolve(root, p)
			if err != nil {
				return nil, nil, fmt.Errorf("image %s: %w", spec.Name, err)
			}
			if err := addFile(files, p, filepath.Join(root, real)); err != nil {
				return nil, nil, err
			}
		}
	}
	for p, src := range spec.Files {
		if err := addFile(files, p, src); err != nil {
			return nil, nil, err
		}
	}
	for p, target := range spec.Symlinks {
		files[strings.TrimPrefix(p, "/")] = &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777, ModTime: epoch, Sys: root0()}
	}
	for p := range files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if files[d] == nil {
				files[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755, ModTime: epoch, Sys: root0()}
			}
		}
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.AddFS(files); err != nil {
		return nil, nil, fmt.Errorf("image %s: layer: %w", spec.Name, err)
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	b := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "fiomig images " + spec.Name}})
	if err != nil {
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config = spec.Config
	if len(debs) > 0 {
		var pv []string
		for _, d := range debs {
			pv = append(pv, d.Package+"="+d.Version)
		}
		if cf.Config.Labels == nil {
			cf.Config.Labels = map[string]string{}
		}
		cf.Config.Labels[LabelDebianPackages] = strings.Join(pv, " ")
	}
	img, err = mutate.ConfigFile(img, cf)
	return img, debs, err
}

// root0 is the tar header fields a MapFile carries (archive/tar's
// FileInfoHeader copies owner and group from a *tar.Header in Sys).
func root0() *tar.Header { return &tar.Header{Uid: 0, Gid: 0, Uname: "root", Gname: "root"} }

// addFile puts the regular file src at p (absolute) in files, with src's
// permission bits.
func addFile(files fstest.MapFS, p, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	files[strings.TrimPrefix(path.Clean(p), "/")] = &fstest.MapFile{Data: b, Mode: fi.Mode().Perm(), ModTime: epoch, Sys: root0()}
	return nil
}

// Packages lists an image's Debian packages (LabelDebianPackages) sorted.
func Packages(img v1.Image) ([]string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	pv := strings.Fields(cf.Config.Labels[LabelDebianPackages])
	slices.Sort(pv)
	return pv, nil
}
