// Command mkimages builds fiomig's container images (package images) as
// OCI layouts and OCI archives, and pushes them when asked. `make images`
// runs it with the static fiomig binary it just built:
//
//	mkimages --fiomig bin/images/fiomig --version v1.2 --out bin/images [--push registry/prefix]
//
// It prints one line per image, "<name> <repository>:<tag>@<digest>", and
// writes the same as JSON to <out>/images.json ({"fiomig": ref, "fio": ref}).
// Exit status 2 on bad usage, 1 when a build or push fails.
//
// Imports: package images and go-containerregistry's name.
package main
