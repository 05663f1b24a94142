// Package images builds fiomig's two container images reproducibly, with
// no registry and no base image: the same inputs give the same manifest
// digest on every machine.
//
//   - fiomig: the static fiomig binary as entry point (/fiomig), nft(8)
//     and the shared libraries it links from Debian's nftables packages
//     (for the dropped-CONNECTs helper pod, agent.NFT), user 65534:65534;
//     nothing in it writes to its root, so pods run it read-only.
//   - fio: /usr/bin/fio and the shared libraries it links, from Debian's
//     fio packages, and busybox-static for the shell the fio pod's script
//     runs in (sh, cp, sleep; backend/kube fioPod).
//
// The Debian packages are fetched with `apt-get download` (the dependency
// closure `apt-cache depends --recurse` gives, into a cache folder) and
// unpacked with `dpkg-deb -x`; from the unpacked tree an image keeps only
// the named executables, their ELF interpreter and their DT_NEEDED
// closure (debug/elf), each at the path the executable looks it up at.
// The layer is one tar (archive/tar from an in-memory fs.FS: every file
// owned by 0:0, mtime 0, sorted), gzip-compressed by go-containerregistry,
// which also writes the OCI image layout (OCI media types, index.json
// naming each image by io.containerd.image.name) and pushes to a
// registry. Image config: linux/amd64, created at the Unix epoch, the
// Debian package versions in label io.fiomig.debian-packages.
//
// Reproducible means: the same fiomig binary (same source, Go version
// and flags: `make images` builds it with -trimpath, CGO_ENABLED=0) and
// the same Debian package files give byte-identical blobs and digests. A
// Debian point release that updates a package changes the fio or fiomig
// digest; the label says which versions went in.
//
// Imports: go-containerregistry and the standard library. It runs
// apt-cache, apt-get and dpkg-deb (Debian's apt and dpkg).
package images
