package images

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// AnnotationImageName is containerd's index.json annotation for an
// image's full reference (`ctr images import` names the image by it).
const AnnotationImageName = "io.containerd.image.name"

// WriteOCI writes img, named by each of refs (repository:tag), as an OCI
// image layout in dir (replaced if present) and as dir + ".tar", the same
// layout in one tar file (an OCI archive: `ctr -n k8s.io images import`,
// `skopeo copy oci-archive:`). It returns the manifest digest.
func WriteOCI(dir string, img v1.Image, refs ...name.Tag) (v1.Hash, error) {
	if len(refs) == 0 {
		return v1.Hash{}, fmt.Errorf("%s: no image name", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	for _, ref := range refs {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			AnnotationImageName:                 ref.Name(),
			"org.opencontainers.image.ref.name": ref.TagStr(),
		})); err != nil {
			return v1.Hash{}, err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	f, err := os.Create(dir + ".tar.tmp")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.Remove(f.Name())
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		f.Close()
		return v1.Hash{}, fmt.Errorf("%s.tar: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return v1.Hash{}, err
	}
	if err := f.Close(); err != nil {
		return v1.Hash{}, err
	}
	return digest, os.Rename(f.Name(), dir+".tar")
}

// Push writes img to ref (a registry repository:tag) with the
// credentials of the Docker config (authn.DefaultKeychain) and returns
// the pushed reference by digest.
func Push(ctx context.Context, img v1.Image, ref name.Tag, opts ...remote.Option) (name.Digest, error) {
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.Write(ref, img, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return ref.Context().Digest(digest.String()), nil
}

// Load reads the image of an OCI layout written by WriteOCI (one image,
// under one or more names).
func Load(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) == 0 {
		return nil, fmt.Errorf("%s: index.json names no image", filepath.Join(dir, "index.json"))
	}
	for _, d := range m.Manifests[1:] {
		if d.Digest != m.Manifests[0].Digest {
			return nil, fmt.Errorf("%s: index.json names %d different images, want 1", filepath.Join(dir, "index.json"), len(m.Manifests))
		}
	}
	return idx.Image(m.Manifests[0].Digest)
}
