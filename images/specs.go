package images

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DefaultRepository is the repository prefix images are named under when
// not pushed elsewhere (the name pods ask a node's runtime for).
const DefaultRepository = "ghcr.io/fiomig"

// path is the PATH of both images.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// FiomigSpec is the fiomig image: the static binary at /fiomig as entry
// point, nft(8) for the dropped-CONNECTs helper, user 65534:65534 (pods
// needing root, the nft helper, say so in their security context).
func FiomigSpec(binary string) Spec {
	return Spec{
		Name:        "fiomig",
		Files:       map[string]string{"/fiomig": binary},
		Packages:    []string{"nftables"},
		Executables: []string{"/usr/sbin/nft"},
		Config: v1.Config{
			Entrypoint: []string{"/fiomig"},
			User:       "65534:65534",
			Env:        []string{pathEnv},
			WorkingDir: "/",
		},
	}
}

// busyboxApplets are the commands the fio image's busybox answers to:
// what backend/kube's fio pod script runs (sh, cp, sleep; echo, kill,
// command, trap and wait are sh builtins) and a few for a person
// debugging a pod.
var busyboxApplets = []string{"sh", "cp", "sleep", "cat", "ls", "mkdir", "rm", "echo", "kill", "ps", "env", "true", "false"}

// FioSpec is the fio image: Debian's fio and busybox-static, running as
// root (fio writes the volume).
func FioSpec() Spec {
	links := map[string]string{}
	for _, a := range busyboxApplets {
		links["/bin/"+a] = "busybox"
	}
	return Spec{
		Name:        "fio",
		Packages:    []string{"fio", "busybox-static"},
		Executables: []string{"/usr/bin/fio"},
		Copy:        []string{"/bin/busybox"},
		Symlinks:    links,
		Config: v1.Config{
			Cmd:        []string{"fio", "--version"},
			Env:        []string{pathEnv},
			WorkingDir: "/",
		},
	}
}

// PauseSpec is a pod sandbox ("pause") image for a node that cannot pull
// one (internal/kubenode's containerd sandbox_image): busybox's sh as PID
// 1, sleeping until SIGTERM or SIGINT, which it exits 0 on; user
// 65535:65535 as Kubernetes' own pause image.
func PauseSpec() Spec {
	return Spec{
		Name:     "pause",
		Packages: []string{"busybox-static"},
		Copy:     []string{"/bin/busybox"},
		Symlinks: map[string]string{"/bin/sh": "busybox", "/bin/sleep": "busybox"},
		Config: v1.Config{
			Entrypoint: []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 86400 & wait $!; done"},
			User:       "65535:65535",
			Env:        []string{pathEnv},
			WorkingDir: "/",
		},
	}
}

// Tag is the tag of an image made from Debian packages: the Debian
// version of spec's first package, with the characters a tag cannot hold
// ('+', '~', ':') as '.'.
func Tag(spec Spec, debs []Deb) string {
	for _, d := range debs {
		if len(spec.Packages) > 0 && d.Package == spec.Packages[0] {
			return strings.NewReplacer("+", ".", "~", ".", ":", ".").Replace(d.Version)
		}
	}
	return "unknown"
}
