package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/fiomig/fiomig/images"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mkimages", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fiomig := fs.String("fiomig", "", "`file`: the static fiomig binary (CGO_ENABLED=0) the fiomig image runs")
	version := fs.String("version", "", "the fiomig image's tag (fiomig --version of that binary)")
	out := fs.String("out", "bin/images", "`dir` the OCI layouts <dir>/<name>/, archives <dir>/<name>.tar and images.json go to")
	debs := fs.String("debs", ".cache/debs", "`dir` the Debian package files are kept in")
	repo := fs.String("repo", images.DefaultRepository, "repository `prefix` the images are named under")
	push := fs.String("push", "", "also push both images to `prefix`/<name>:<tag> (credentials of the Docker config)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *fiomig == "" || *version == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "mkimages: --fiomig and --version are required, and no arguments")
		return 2
	}
	deb := images.Debian{Cache: *debs, Logf: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }}
	refs := map[string]string{}
	for _, spec := range []images.Spec{images.FiomigSpec(*fiomig), images.FioSpec(), images.PauseSpec()} {
		img, debs, err := images.Build(ctx, spec, deb)
		if err != nil {
			fmt.Fprintf(stderr, "mkimages: %v\n", err)
			return 1
		}
		tag := *version
		if spec.Name != "fiomig" {
			tag = images.Tag(spec, debs)
		}
		tags := []string{tag}
		if spec.Name == "fiomig" {
			// Also :latest, the name backend/kube's --helper-image
			// default and deploy/agent/ give it.
			tags = append(tags, "latest")
		}
		var names []name.Tag
		for _, tg := range tags {
			ref, err := name.NewTag(strings.TrimSuffix(*repo, "/") + "/" + spec.Name + ":" + tg)
			if err != nil {
				fmt.Fprintf(stderr, "mkimages: image name: %v\n", err)
				return 2
			}
			names = append(names, ref)
		}
		ref := names[0]
		digest, err := images.WriteOCI(filepath.Join(*out, spec.Name), img, names...)
		if err != nil {
			fmt.Fprintf(stderr, "mkimages: %v\n", err)
			return 1
		}
		refs[spec.Name] = ref.String() + "@" + digest.String()
		fmt.Fprintf(stdout, "%s %s\n", spec.Name, refs[spec.Name])
		if *push != "" {
			for _, tg := range tags {
				if code := pushImage(ctx, img, *push, spec.Name, tg, stdout, stderr); code != 0 {
					return code
				}
			}
		}
	}
	b, _ := json.MarshalIndent(refs, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "images.json"), append(b, '\n'), 0o644); err != nil {
		fmt.Fprintf(stderr, "mkimages: %v\n", err)
		return 1
	}
	return 0
}

func pushImage(ctx context.Context, img v1.Image, prefix, short, tag string, stdout, stderr io.Writer) int {
	ref, err := name.NewTag(strings.TrimSuffix(prefix, "/") + "/" + short + ":" + tag)
	if err != nil {
		fmt.Fprintf(stderr, "mkimages: --push %s: %v\n", prefix, err)
		return 2
	}
	pushed, err := images.Push(ctx, img, ref)
	if err != nil {
		fmt.Fprintf(stderr, "mkimages: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s pushed %s\n", short, pushed)
	return 0
}
